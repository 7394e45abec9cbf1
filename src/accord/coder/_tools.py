"""The coder's tools, as pydantic-ai functions, and how ACP clients are shown them.

Each tool is a thin async function over the plain code of :mod:`._files`, :mod:`._search` and
:mod:`._process`; its docstring is what the model reads. A :class:`~._paths.ToolError`
becomes pydantic-ai's ``ToolFailed``: the call ends ``failed``, the model reads why and can
adapt (without spending a retry). :data:`BEHAVIOURS` declares each tool's ACP kind, title,
locations and diff, and for the tools that ask permission what the request shows: an edit or
write the whole file before and after (``oldText`` null for a new file) and its first changed
line, worked out before asking and equal to what the completed call shows; a command its
whole line and the absolute directory it runs in.

=================  ===========  ======================================================
tool               kind         what it does
=================  ===========  ======================================================
``read_file``      ``read``     through ``fs/read_text_file`` when offered, else disk
``write_file``     ``edit``     through ``fs/write_text_file`` when offered; whole-file diff
``edit_file``      ``edit``     exact replacement; whole-file diff
``list_directory`` ``search``   one directory, on disk
``find_files``     ``search``   glob, on disk
``grep``           ``search``   regular expression, on disk
``run_command``    ``execute``  in the client's terminal when offered (embedded in the
                                call; sent as ``/bin/sh -c LINE``), else a local
                                subprocess; bounded time and output
``update_plan``    ``think``    sends the ``plan``
=================  ===========  ======================================================

Tools that change things also check the session's mode when they run (the mode's tool filter
already keeps them from the model in ``ask`` mode; this is the second lock). ``delegate`` lives
in :mod:`._subagent`.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal, TypeVar

import anyio
import anyio.to_thread
from pydantic import BaseModel, Field
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from ..engines.pydantic_ai import (
    ToolBehaviour,
    ToolCallInput,
    ToolPreview,
    path_locations,
    path_title,
)
from ..engines.pydantic_ai import replace_diff as args_diff
from ..errors import RequestError
from ..schema import (
    ContentToolCallContent,
    DiffToolCallContent,
    PlanEntry,
    TextContentBlock,
    ToolCallLocation,
)
from . import _files, _search
from ._deps import CoderDeps
from ._modes import (
    EDIT_FILE,
    FIND_FILES,
    GREP,
    LIST_DIRECTORY,
    READ_FILE,
    RUN_COMMAND,
    UPDATE_PLAN,
    WRITE_FILE,
    mode_spec,
)
from ._paths import Roots, ToolError
from ._process import MAX_OUTPUT_BYTES, CommandResult, clamp_timeout, run_local
from ._signals import PlanSignal, ResultContent, TerminalAttached

__all__ = (
    "BEHAVIOURS",
    "MAX_TITLE_CHARS",
    "MAX_TOOL_RETRIES",
    "RELEASE_TIMEOUT_SECONDS",
    "PlanStep",
    "coder_toolset",
    "read_only_toolset",
)

_log = logging.getLogger("accord.coder")

MAX_TITLE_CHARS: Final = 80
"""A tool call's title is cut to this (a command line can be long)."""

MAX_TOOL_RETRIES: Final = 3
"""Calls in a row with arguments that do not fit a tool before the turn fails (pydantic-ai's
retry budget; each such call is answered with what was wrong, so the model can correct it)."""

RELEASE_TIMEOUT_SECONDS: Final = 5.0
"""Bound on releasing a client terminal after its command (shielded from cancellation)."""

TERMINAL_SHELL: Final = ("/bin/sh", "-c")
"""How a command line is sent to the client's terminal: ``terminal/create`` with ``command``
``/bin/sh`` and ``args`` ``["-c", line]``, so a client that executes ``command`` with ``args``
directly (as the schema describes) runs it, and one that runs ``command`` through its own shell
runs it too (the shell-quoted arguments survive)."""

_T = TypeVar("_T")


async def _guarded(work: Awaitable[_T]) -> _T:
    """Await ``work``; a problem becomes a failed call the model reads, never a failed turn."""
    try:
        return await work
    except ToolError as exc:
        raise ToolFailed(exc.message) from exc
    except OSError as exc:
        raise ToolFailed(f"{exc.strerror or exc}") from exc
    except ToolFailed:
        raise
    except Exception as exc:
        _log.warning("a coder tool failed unexpectedly", exc_info=True)
        raise ToolFailed(f"the tool failed: {type(exc).__name__}: {exc}") from exc


def _check_mode(ctx: RunContext[CoderDeps], tool: str) -> None:
    mode = mode_spec(ctx.deps.mode_id)
    if not mode.offers_tool(tool):
        raise ToolFailed(f"{tool} is not available in {mode.id} mode")


# ------------------------------------------------------------------------------- files


async def read_file(
    ctx: RunContext[CoderDeps], path: str, offset: int | None = None, limit: int | None = None
) -> str:
    """Read a text file.

    Args:
        path: The file, relative to the working directory (or absolute inside the workspace).
        offset: The 1-based line to start at (default: the first).
        limit: How many lines to read (default: to the end, up to about 100,000 characters).
    """
    return await _guarded(_files.read_file(ctx.deps.workspace, path, offset=offset, limit=limit))


def _shown(change: _files.FileChange) -> ToolPreview:
    """A change as its call shows it: the whole-file diff, and the first changed line."""
    diff = DiffToolCallContent(path=change.path, old_text=change.old_text, new_text=change.new_text)
    location = ToolCallLocation(path=change.path, line=change.first_line)
    return ToolPreview(content=(diff,), locations=(location,))


async def _report(ctx: RunContext[CoderDeps], change: _files.FileChange) -> str:
    shown = _shown(change)
    await ctx.emit(ResultContent(content=shown.content, locations=shown.locations))
    return change.summary


async def write_file(ctx: RunContext[CoderDeps], path: str, content: str) -> str:
    """Create a file, or replace a file's whole content.

    Args:
        path: The file, relative to the working directory; missing directories are created.
        content: The complete new content.
    """
    _check_mode(ctx, WRITE_FILE)
    change = await _guarded(_files.write_file(ctx.deps.workspace, path, content))
    return await _report(ctx, change)


async def edit_file(
    ctx: RunContext[CoderDeps], path: str, old_text: str, new_text: str, replace_all: bool = False
) -> str:
    """Replace an exact piece of text in a file.

    Args:
        path: The file, relative to the working directory.
        old_text: The text to replace, copied exactly from the file (whitespace included); it
            must occur exactly once unless replace_all is set, so include enough context.
        new_text: The replacement.
        replace_all: Replace every occurrence instead of exactly one.
    """
    _check_mode(ctx, EDIT_FILE)
    change = await _guarded(
        _files.edit_file(ctx.deps.workspace, path, old_text, new_text, replace_all=replace_all)
    )
    return await _report(ctx, change)


# ------------------------------------------------------------------------------- search


async def list_directory(ctx: RunContext[CoderDeps], path: str = ".") -> str:
    """List a directory: sub-directories (ending in /) first, then files.

    Args:
        path: The directory, relative to the working directory.
    """
    roots = ctx.deps.workspace.roots
    return await _guarded(anyio.to_thread.run_sync(_search.list_directory, roots, path))


async def find_files(ctx: RunContext[CoderDeps], pattern: str, path: str = ".") -> str:
    """Find files by glob pattern, e.g. "**/*.py", "src/**/test_*.py", or "*.toml".

    Args:
        pattern: The glob; "**" spans directories, and a pattern without "/" matches file
            names at any depth.
        path: The directory to search, relative to the working directory.
    """
    roots = ctx.deps.workspace.roots

    def search(stop: threading.Event) -> str:
        return _search.find_files(roots, pattern, path, stop=stop)

    return await _guarded(_stoppable(search))


async def grep(
    ctx: RunContext[CoderDeps],
    pattern: str,
    path: str = ".",
    include: str | None = None,
    ignore_case: bool = False,
) -> str:
    """Search file contents with a regular expression; prints path:line: text per match.

    Args:
        pattern: A regular expression in RE2 syntax (like Python's re, without look-around
            or back-references), matched against each line.
        path: A directory to search recursively, or a single file.
        include: Only search files matching this glob, e.g. "*.py".
        ignore_case: Match without regard to case.
    """
    roots = ctx.deps.workspace.roots

    def search(stop: threading.Event) -> str:
        return _search.grep(
            roots, pattern, path, include=include, ignore_case=ignore_case, stop=stop
        )

    return await _guarded(_stoppable(search))


async def _stoppable(search: Callable[[threading.Event], str]) -> str:
    """Run a blocking search in a worker thread; a cancelled turn stops it and does not wait.

    The search checks the event between files and lines, so its thread ends soon after.
    """
    stop = threading.Event()
    try:
        return await anyio.to_thread.run_sync(search, stop, abandon_on_cancel=True)
    finally:
        stop.set()


# ------------------------------------------------------------------------------- commands


async def run_command(
    ctx: RunContext[CoderDeps],
    command: str,
    cwd: str | None = None,
    timeout_seconds: float | None = None,
) -> str:
    """Run a shell command line (e.g. to run tests or a build) and return its output.

    Args:
        command: The command line, run by the shell.
        cwd: The directory to run it in, relative to the working directory (default: the
            working directory).
        timeout_seconds: Kill it after this many seconds (default 120, at most 600).
    """
    _check_mode(ctx, RUN_COMMAND)
    if "\0" in command:
        raise ToolFailed("the command contains a NUL character, which no shell can run")
    deps = ctx.deps
    roots = deps.workspace.roots
    workdir = await _guarded(_directory(roots, cwd or "."))
    timeout = clamp_timeout(timeout_seconds)
    if deps.terminals is not None:
        result = await _in_terminal(ctx, command, workdir, timeout)
    else:
        try:
            result = await run_local(command, cwd=workdir, time_limit=timeout)
        except OSError as exc:
            raise ToolFailed(f"cannot run the command: {exc.strerror or exc}") from exc
    return result.for_model(timeout)


async def _directory(roots: Roots, relative: str) -> str:
    path = roots.resolve(relative)
    if not await anyio.to_thread.run_sync(os.path.isdir, path):
        raise ToolError(f"{relative!r} is not a directory")
    return path


async def _in_terminal(
    ctx: RunContext[CoderDeps], command: str, cwd: str, time_limit: float
) -> CommandResult:
    terminals = ctx.deps.terminals
    assert terminals is not None
    try:
        shell, flag = TERMINAL_SHELL
        terminal = await terminals.create_terminal(
            shell, args=(flag, command), cwd=cwd, output_byte_limit=MAX_OUTPUT_BYTES
        )
    except RequestError as exc:
        raise ToolFailed(f"the editor could not run the command: {exc.message}") from exc
    try:
        await ctx.emit(TerminalAttached(terminal_id=terminal.terminal_id))
        with anyio.move_on_after(time_limit) as scope:
            await terminal.wait_for_exit()
        if scope.cancelled_caught:
            await terminal.kill()
        output = await terminal.output()
    except RequestError as exc:
        raise ToolFailed(f"the editor's terminal failed: {exc.message}") from exc
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(RELEASE_TIMEOUT_SECONDS):
            try:
                await terminal.release()
            except RequestError:
                pass
    status = output.exit_status
    return CommandResult(
        command=command,
        output=output.output,
        truncated=output.truncated,
        exit_code=None if status is None or scope.cancelled_caught else status.exit_code,
        signal=None if status is None else status.signal,
        timed_out=scope.cancelled_caught,
    )


# ------------------------------------------------------------------------------- plan


class PlanStep(BaseModel):
    """One step of the plan."""

    content: str = Field(description="What the step does, in a few words")
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


async def update_plan(ctx: RunContext[CoderDeps], steps: list[PlanStep]) -> str:
    """Show the user your plan: the complete list of steps, each with its status.

    Send the whole plan every time (it replaces the previous one); mark a step in_progress
    when you start it and completed when it is done.

    Args:
        steps: Every step of the plan, in order.
    """
    entries = tuple(
        PlanEntry(content=s.content, status=s.status, priority=s.priority) for s in steps
    )
    await ctx.emit(PlanSignal(entries=entries))
    done = sum(1 for s in steps if s.status == "completed")
    return f"Plan updated: {len(steps)} steps, {done} completed."


# ------------------------------------------------------------------------------- previews


def _deps(ctx: RunContext[Any]) -> CoderDeps | None:
    deps: object = ctx.deps
    return deps if isinstance(deps, CoderDeps) else None


async def _preview_write(call: ToolCallInput, ctx: RunContext[Any]) -> ToolPreview | None:
    """``write_file``'s change before it is allowed (none if the call cannot work)."""
    deps, path, content = _deps(ctx), call.args.get("path"), call.args.get("content")
    if deps is None or not isinstance(path, str) or not isinstance(content, str):
        return None
    try:
        return _shown(await _files.plan_write(deps.workspace, path, content))
    except ToolError:
        return None  # the call fails when it runs; the model is told why then


async def _preview_edit(call: ToolCallInput, ctx: RunContext[Any]) -> ToolPreview | None:
    """``edit_file``'s change before it is allowed (none if the call cannot work)."""
    deps, args = _deps(ctx), call.args
    path, old_text, new_text = args.get("path"), args.get("old_text"), args.get("new_text")
    replace_all = args.get("replace_all", False)
    if deps is None or not isinstance(path, str):
        return None
    if not isinstance(old_text, str) or not isinstance(new_text, str):
        return None
    try:
        change = await _files.plan_edit(
            deps.workspace, path, old_text, new_text, replace_all=replace_all is True
        )
    except ToolError:
        return None
    return _shown(change)


async def _preview_command(call: ToolCallInput, ctx: RunContext[Any]) -> ToolPreview | None:
    """``run_command``'s whole line and the absolute directory it would run in."""
    deps, command, cwd = _deps(ctx), call.args.get("command"), call.args.get("cwd")
    if deps is None or not isinstance(command, str) or not command:
        return None
    try:
        workdir = deps.workspace.roots.resolve(cwd if isinstance(cwd, str) and cwd else ".")
    except ToolError:
        return None
    return ToolPreview(content=(_command_text(command, workdir),))


def _command_text(command: str, workdir: str) -> ContentToolCallContent:
    """A command line as Markdown a client can render: a fenced block, then the directory."""
    longest = max((len(run) for run in re.findall(r"`+", command)), default=0)
    fence = "`" * max(3, longest + 1)
    text = f"{fence}sh\n{command}\n{fence}\nin {workdir}"
    return ContentToolCallContent(content=TextContentBlock(text=text))


# ------------------------------------------------------------------------------- registry


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1] + "…"


def _titled(prefix: str, key: str) -> Callable[[ToolCallInput], str]:
    def title(call: ToolCallInput) -> str:
        value = call.args.get(key)
        return _cut(f"{prefix} {value}") if isinstance(value, str) and value else prefix

    return title


def _command_title(call: ToolCallInput) -> str:
    """``Run LINE``, and ``(in DIR)`` when the command runs elsewhere than the working dir."""
    command, cwd = call.args.get("command"), call.args.get("cwd")
    if not isinstance(command, str) or not command:
        return "Run"
    where = f" (in {cwd})" if isinstance(cwd, str) and cwd not in ("", ".", "./") else ""
    if len(where) > MAX_TITLE_CHARS // 2:
        where = ""  # the request's content names the directory in full
    head, room = "Run " + " ".join(command.split()), MAX_TITLE_CHARS - len(where)
    if len(head) > room:
        head = head[: room - 1] + "…"
    return head + where


BEHAVIOURS: Final[dict[str, ToolBehaviour]] = {
    READ_FILE: ToolBehaviour(
        kind="read",
        title_from_args=path_title("Read"),
        locations_from_args=path_locations("path", line_arg="offset"),
    ),
    WRITE_FILE: ToolBehaviour(
        kind="edit",
        title_from_args=path_title("Write"),
        locations_from_args=path_locations("path"),
        diff_from_args=args_diff("path", None, "content"),
        preview_before_asking=_preview_write,
    ),
    EDIT_FILE: ToolBehaviour(
        kind="edit",
        title_from_args=path_title("Edit"),
        locations_from_args=path_locations("path"),
        diff_from_args=args_diff("path", "old_text", "new_text"),
        preview_before_asking=_preview_edit,
    ),
    LIST_DIRECTORY: ToolBehaviour(
        kind="search",
        title_from_args=path_title("List"),
        locations_from_args=path_locations("path"),
    ),
    FIND_FILES: ToolBehaviour(kind="search", title_from_args=_titled("Find", "pattern")),
    GREP: ToolBehaviour(kind="search", title_from_args=_titled("Search for", "pattern")),
    RUN_COMMAND: ToolBehaviour(
        kind="execute", title_from_args=_command_title, preview_before_asking=_preview_command
    ),
    UPDATE_PLAN: ToolBehaviour(kind="think", title_from_args=lambda call: "Update the plan"),
}
"""How each tool is shown to ACP clients (``delegate``'s is in :mod:`._subagent`)."""


def read_only_toolset() -> FunctionToolset[CoderDeps]:
    """The tools that change nothing: for ``ask`` mode's model, and for sub-agents."""
    return FunctionToolset(
        [read_file, list_directory, find_files, grep], max_retries=MAX_TOOL_RETRIES
    )


def coder_toolset() -> FunctionToolset[CoderDeps]:
    """Every tool of this module (``delegate`` is added by the agent builder)."""
    return FunctionToolset(
        [
            read_file,
            write_file,
            edit_file,
            list_directory,
            find_files,
            grep,
            run_command,
            update_plan,
        ],
        max_retries=MAX_TOOL_RETRIES,
    )

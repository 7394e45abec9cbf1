"""Terminal host service: ``terminal/create``, ``output``, ``wait_for_exit``, ``kill``, ``release``.

:class:`TerminalHost` runs the agent's commands as child processes, several at once and per
session, inside a task group it owns (``async with TerminalHost() as host:``):

* ``create`` starts the command in the background and answers at once with a fresh id. By
  default ``command`` is a shell command line run by ``bash -c`` (``/bin/sh -c`` without bash)
  and each of ``args`` is appended shell-quoted, like Zed does, because agents send whole
  command lines (``"git status"``) in ``command``; ``TerminalHost(use_shell=False)`` executes
  ``[command, *args]`` directly instead. The child gets ``/dev/null`` as stdin, one pipe for
  stdout and stderr together, the client's environment with the request's ``env`` over it, and
  its own session (process group), so one signal reaches everything it started.
* a reader task per terminal keeps the newest ``outputByteLimit`` bytes (never more than
  :data:`MAX_OUTPUT_BYTES`), cutting from the beginning at a UTF-8 character boundary;
* ``kill`` sends SIGTERM to the process group, then SIGKILL after :data:`TERMINATE_TIMEOUT`,
  and keeps the terminal readable; ``release`` kills and forgets the id; ``release_session``
  does that for every terminal of a session; leaving the ``async with`` does it for all, shielded
  from cancellation and bounded in time.

An id that is unknown, released, or belongs to another session is
:class:`~accord.errors.ResourceNotFound`. A command that cannot be started is an error response
(:class:`~accord.errors.InvalidParams` naming it); with the default shell, a command the shell
cannot find is an ordinary terminal that exits with 127 and the shell's message as output, as it
would in the user's own terminal.

POSIX only (process groups and signals). Above: the client library (``accord.client``), which
advertises ``terminal`` only when a host is configured, passes each session's roots, calls
:meth:`TerminalHost.release_session` when a session closes, and closes the host with the
connection. Below: the process-group helpers of :mod:`accord.transports` (spawn, the
SIGTERM-to-SIGKILL ladder, the tail buffer), ``accord.schema`` wire models, ``accord.errors``,
and :func:`accord.client._fs.resolve_within` for the working directory.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

import anyio
import anyio.to_thread
from anyio.abc import Process, TaskGroup

from accord.errors import InternalError, InvalidParams, ResourceNotFound
from accord.schema import (
    CreateTerminalRequest,
    CreateTerminalResponse,
    EnvVariable,
    KillTerminalRequest,
    KillTerminalResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
)
from accord.transports import TailBuffer, signal_group, spawn_group, stop_group

from ._fs import resolve_within

__all__ = (
    "KILL_TIMEOUT",
    "MAX_OUTPUT_BYTES",
    "OUTPUT_SETTLE_SECONDS",
    "TERMINATE_TIMEOUT",
    "TerminalHost",
    "TerminalHostStatistics",
    "default_shell",
)

#: Output kept per terminal when the agent sets no ``outputByteLimit``, and the most kept even
#: when it asks for more: it bounds the client's memory per terminal, and an agent's context
#: window holds far less text than this anyway. Older output is dropped (``truncated: true``).
MAX_OUTPUT_BYTES = 4 * 1024 * 1024

#: Time between SIGTERM and SIGKILL: enough for a test runner or build tool to flush output and
#: remove its temporary files, short enough that a release or a closing editor never hangs.
TERMINATE_TIMEOUT = 3.0

#: How long to wait after SIGKILL before giving up (and logging): SIGKILL cannot be caught, so
#: only a process stuck in uninterruptible I/O outlives this.
KILL_TIMEOUT = 2.0

#: After the command exits, how long to wait for its output pipe to close before reporting the
#: exit. Output already in the pipe is read in microseconds; the wait only expires when a
#: background child (``server &``) still holds the pipe, which must not delay the exit status.
OUTPUT_SETTLE_SECONDS = 0.5

#: Largest read from a terminal's output pipe at once.
_READ_CHUNK_BYTES = 64 * 1024


def default_shell() -> tuple[str, ...]:
    """The shell that runs command lines: ``bash -c`` if bash is installed, else ``/bin/sh -c``.

    Bash is preferred (as Zed does) because agents write bash; non-interactive, so no rc files
    print into the output.
    """
    bash = shutil.which("bash")
    return (bash, "-c") if bash else ("/bin/sh", "-c")


@dataclass(frozen=True, slots=True, kw_only=True)
class TerminalHostStatistics:
    """A snapshot of a :class:`TerminalHost`, from :meth:`TerminalHost.statistics`.

    Attributes:
        terminals: terminals created and not yet released.
        running: those whose command has not exited.
        buffered_bytes: output bytes held in memory over all terminals.
    """

    terminals: int
    running: int
    buffered_bytes: int


@dataclass(eq=False, kw_only=True)
class _Terminal:
    terminal_id: str
    session_id: str
    process: Process
    output: TailBuffer
    # Cancelled on release: stops the reader task even if a stray process holds the pipe.
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    # Set once the exit status is known and the output is complete (or settled, see
    # OUTPUT_SETTLE_SECONDS); also set by a release that could not reap the process.
    exited: anyio.Event = field(default_factory=anyio.Event)
    output_closed: anyio.Event = field(default_factory=anyio.Event)
    exit_status: TerminalExitStatus | None = None

    def finished(self) -> bool:
        """Nothing of the command is left: it exited and every holder of its output is gone."""
        return self.exited.is_set() and self.output_closed.is_set()

    async def wait_finished(self) -> None:
        await self.exited.wait()
        await self.output_closed.wait()


class TerminalHost:
    """Runs agents' terminal commands; one host serves every session of a connection.

    Use it as an async context manager: it owns the task group the terminals' reader tasks run
    in, and leaving it kills every command still running (shielded, bounded by
    :data:`TERMINATE_TIMEOUT` and :data:`KILL_TIMEOUT`).

    Args:
        use_shell: run ``command`` as a shell command line (default) or execute it directly.
        shell: the shell's argv prefix, e.g. ``("/bin/zsh", "-c")``; default
            :func:`default_shell`.
        env: the environment the request's ``env`` is laid over; default ``os.environ`` at the
            time each command starts.
        max_output_bytes: output kept per terminal at most (see :data:`MAX_OUTPUT_BYTES`).
        terminate_timeout: seconds between SIGTERM and SIGKILL (see :data:`TERMINATE_TIMEOUT`).
    """

    def __init__(
        self,
        *,
        use_shell: bool = True,
        shell: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        terminate_timeout: float = TERMINATE_TIMEOUT,
    ) -> None:
        self._shell: tuple[str, ...] | None = (
            (tuple(shell) if shell is not None else default_shell()) if use_shell else None
        )
        self._env = dict(env) if env is not None else None
        self._max_output_bytes = max_output_bytes
        self._terminate_timeout = terminate_timeout
        self._terminals: dict[str, _Terminal] = {}
        self._task_group: TaskGroup | None = None
        self._closed = False

    async def __aenter__(self) -> Self:
        if self._task_group is not None or self._closed:
            raise RuntimeError("a TerminalHost can be entered only once")
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        task_group = self._task_group
        assert task_group is not None, "TerminalHost.__aexit__ without __aenter__"
        self._closed = True
        try:
            terminals = list(self._terminals.values())
            self._terminals.clear()
            await _release_all(terminals, self._terminate_timeout)
        finally:
            task_group.cancel_scope.cancel()
            self._task_group = None
        return await task_group.__aexit__(exc_type, exc, traceback)

    def statistics(self) -> TerminalHostStatistics:
        """Count the live terminals, those still running, and the output they hold."""
        terminals = self._terminals.values()
        return TerminalHostStatistics(
            terminals=len(terminals),
            running=sum(not terminal.exited.is_set() for terminal in terminals),
            buffered_bytes=sum(len(terminal.output) for terminal in terminals),
        )

    async def create_terminal(
        self, request: CreateTerminalRequest, roots: Sequence[str | os.PathLike[str]]
    ) -> CreateTerminalResponse:
        """Start a command in the background and answer with its terminal id.

        Args:
            request: the agent's request. ``cwd`` must be absolute and inside the session's
                roots (it defaults to the first root, the session's ``cwd``).
            roots: the session's directories, ``cwd`` first.

        Raises:
            InvalidParams: ``command`` is empty, holds a NUL (as may an argument) or cannot be
                executed, ``cwd`` is refused
                (see :func:`~accord.client._fs.resolve_within`) or is not a directory, or an
                ``env`` entry is malformed.
            InternalError: the operating system refused to start the process for another reason.
            RuntimeError: the host is not running (not inside ``async with``, or closed).
        """
        task_group = self._task_group
        if task_group is None:
            raise RuntimeError("TerminalHost is not running; use `async with TerminalHost()`")
        if not request.command:
            raise InvalidParams("command is empty", {"command": request.command})
        for index, word in enumerate((request.command, *request.args)):
            if "\0" in word:
                # No program can receive it (argv strings end at NUL): refuse, do not truncate.
                where = "command" if index == 0 else f"argument {index}"
                raise InvalidParams(
                    f"{where} contains a NUL character: {word!r}", {"command": request.command}
                )
        cwd = await anyio.to_thread.run_sync(_working_directory, request.cwd, roots)
        env = _environment(os.environ if self._env is None else self._env, request.env)
        argv = self._argv(request.command, request.args)
        limit = self._max_output_bytes
        if request.output_byte_limit is not None:
            limit = min(request.output_byte_limit, limit)
        try:
            process = await spawn_group(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
            )
        except (FileNotFoundError, PermissionError) as exc:
            reason = "not found" if isinstance(exc, FileNotFoundError) else "not executable"
            raise InvalidParams(
                f"cannot run {request.command!r}: command {reason}", {"command": request.command}
            ) from exc
        except OSError as exc:
            raise InternalError(
                f"cannot run {request.command!r}: {exc.strerror or exc}",
                {"command": request.command},
            ) from exc
        if self._closed:  # the host closed while the process started: it must not leak
            with anyio.CancelScope(shield=True):
                signal_group(process.pid, signal.SIGKILL)
                await process.aclose()
            raise RuntimeError("TerminalHost closed while the command was starting")
        terminal = _Terminal(
            terminal_id=str(uuid.uuid4()),
            session_id=request.session_id,
            process=process,
            output=TailBuffer(limit),
        )
        self._terminals[terminal.terminal_id] = terminal
        task_group.start_soon(_run, terminal, name=f"terminal {terminal.terminal_id}")
        return CreateTerminalResponse(terminal_id=terminal.terminal_id)

    async def terminal_output(self, request: TerminalOutputRequest) -> TerminalOutputResponse:
        """The output so far (UTF-8, invalid bytes as U+FFFD) and the exit status once exited.

        Raises:
            ResourceNotFound: no such terminal in this session.
        """
        terminal = self._get(request.session_id, request.terminal_id)
        return TerminalOutputResponse(
            output=terminal.output.text(final=terminal.output_closed.is_set()),
            truncated=terminal.output.truncated,
            exit_status=terminal.exit_status,
        )

    async def wait_for_terminal_exit(
        self, request: WaitForTerminalExitRequest
    ) -> WaitForTerminalExitResponse:
        """Wait until the command exits; answers at once if it already has.

        Raises:
            ResourceNotFound: no such terminal in this session, or it was released before the
                command could be reaped.
        """
        terminal = self._get(request.session_id, request.terminal_id)
        await terminal.exited.wait()
        status = terminal.exit_status
        if status is None:
            raise _not_found(request.session_id, request.terminal_id)
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, request: KillTerminalRequest) -> KillTerminalResponse:
        """Terminate the command (SIGTERM, then SIGKILL) and wait for it; the id stays valid.

        Raises:
            ResourceNotFound: no such terminal in this session.
        """
        terminal = self._get(request.session_id, request.terminal_id)
        await _terminate(terminal, self._terminate_timeout)
        return KillTerminalResponse()

    async def release_terminal(self, request: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        """Kill the command if it still runs and forget the terminal; its id becomes invalid.

        The kill finishes even if the request is cancelled.

        Raises:
            ResourceNotFound: no such terminal in this session.
        """
        self._get(request.session_id, request.terminal_id)
        terminal = self._terminals.pop(request.terminal_id)
        await _release_all([terminal], self._terminate_timeout)
        return ReleaseTerminalResponse()

    async def release_session(self, session_id: str) -> None:
        """Release every terminal of a session (call it when the session closes)."""
        terminals = [t for t in self._terminals.values() if t.session_id == session_id]
        for terminal in terminals:
            del self._terminals[terminal.terminal_id]
        await _release_all(terminals, self._terminate_timeout)

    def _get(self, session_id: str, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None or terminal.session_id != session_id:
            raise _not_found(session_id, terminal_id)
        return terminal

    def _argv(self, command: str, args: Sequence[str]) -> list[str]:
        if self._shell is None:
            return [command, *args]
        return [*self._shell, " ".join([command, *map(shlex.quote, args)])]


def _not_found(session_id: str, terminal_id: str) -> ResourceNotFound:
    return ResourceNotFound(
        f"no terminal {terminal_id!r} in session {session_id!r} (unknown or released)",
        {"terminalId": terminal_id},
    )


def _working_directory(cwd: str | None, roots: Sequence[str | os.PathLike[str]]) -> Path:
    """Worker thread: the resolved working directory, confined to the roots like file access.

    Confinement keeps a command where the session works; it is not a sandbox (the command may
    ``cd`` anywhere), only a guard against an agent aiming at the wrong tree.
    """
    if cwd is None:
        if not roots:
            raise InvalidParams("no cwd given and the session has no directory", {"cwd": None})
        cwd = os.fspath(roots[0])
    real = resolve_within(cwd, roots)
    if not real.is_dir():
        raise InvalidParams(f"cwd is not an existing directory: {cwd!r}", {"cwd": cwd})
    return real


def _environment(base: Mapping[str, str], overrides: Iterable[EnvVariable]) -> dict[str, str]:
    env = dict(base)
    for variable in overrides:
        name, value = variable.name, variable.value
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise InvalidParams(f"invalid environment variable {name!r}", {"name": name})
        env[name] = value
    return env


def _exit_status(returncode: int) -> TerminalExitStatus:
    if returncode >= 0:
        return TerminalExitStatus(exit_code=returncode, signal=None)
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = str(-returncode)
    return TerminalExitStatus(exit_code=None, signal=name)


async def _run(terminal: _Terminal) -> None:
    """The terminal's task: drain its output, record its exit, close the process."""
    process = terminal.process
    # Shielded from the host's own cancellation: the command must be reaped even when the code
    # around ``async with TerminalHost()`` is cancelled. Release and close stop this task
    # through ``terminal.scope``, after killing the command, so it never outlives the host.
    try:
        with anyio.CancelScope(shield=True), terminal.scope:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(_drain, terminal)
                returncode = await process.wait()
                with anyio.move_on_after(OUTPUT_SETTLE_SECONDS):
                    await terminal.output_closed.wait()
                terminal.exit_status = _exit_status(returncode)
                terminal.exited.set()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is not None:
                await process.aclose()
            elif process.stdout is not None:  # unkillable (logged by _terminate): let it be
                await process.stdout.aclose()


async def _drain(terminal: _Terminal) -> None:
    """Read the output pipe until every process holding it has closed it."""
    stream = terminal.process.stdout
    assert stream is not None
    try:
        while True:
            terminal.output.write(await stream.receive(_READ_CHUNK_BYTES))
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        terminal.output_closed.set()


async def _terminate(terminal: _Terminal, grace: float) -> None:
    """SIGTERM the command's group, SIGKILL it after ``grace``; wait for it, bounded.

    The command counts as finished once it exited and nothing holds its output pipe any more
    (a background child would): the group id stays reserved as long as a member lives.
    """
    await stop_group(
        terminal.process,
        terminate_timeout=grace,
        kill_timeout=KILL_TIMEOUT,
        finished=terminal.finished,
        wait=terminal.wait_finished,
    )


async def _release_all(terminals: Sequence[_Terminal], grace: float) -> None:
    """Kill the terminals' commands concurrently, stop their tasks; shielded, bounded."""
    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as task_group:
            for terminal in terminals:
                task_group.start_soon(_terminate, terminal, grace)
    for terminal in terminals:
        terminal.scope.cancel()
        terminal.exited.set()  # wake waiters; an unset exit_status tells them it was released

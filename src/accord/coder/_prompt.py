"""The system prompt: built once when a session is created, stored with it, reused after.

:func:`build_system_prompt` writes the instructions from what is true when the session starts:
its directories, the date, the platform, whether the editor reads and writes files and runs
commands for the agent, and the project's own instructions (``AGENTS.md`` in the ``cwd``, if
any, up to :data:`MAX_PROJECT_NOTES_CHARS`). It runs once, on ``session/new``; the text is then
part of the session's stored state (:class:`CoderState`), and ``session/load``, ``resume`` and
``fork`` reuse it word for word, so a restarted conversation continues under exactly the
instructions it began with (the date included), whatever changed on disk meanwhile.

Stored form (the engine state of a coder session)::

    {"format": "accord-coder/session", "version": 1,
     "systemPrompt": "...", "engine": <the pydantic-ai engine's state, or null>}

This module imports nothing of pydantic-ai.
"""

from __future__ import annotations

import logging
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from pydantic import JsonValue

from ._paths import Roots, ToolError
from ._reading import read_confined

__all__ = (
    "MAX_PROJECT_NOTES_CHARS",
    "PROJECT_NOTES_FILE",
    "STATE_FORMAT",
    "STATE_VERSION",
    "CoderState",
    "StateError",
    "build_system_prompt",
    "read_project_notes",
)

STATE_FORMAT: Final = "accord-coder/session"
"""The ``format`` of a coder session's stored state."""

STATE_VERSION: Final = 1
"""The ``version`` of the stored state this code writes and reads."""

PROJECT_NOTES_FILE: Final = "AGENTS.md"
"""The file in the ``cwd`` whose text is added to the prompt (the agents.md convention)."""

_log = logging.getLogger("accord.coder")

MAX_PROJECT_NOTES_CHARS: Final = 20_000
"""Characters of the project notes included; a longer file is cut with a note."""

_INTRO: Final = """\
You are accord, a coding agent. You work in the user's project through their code editor: you \
read and search the code, change files, and run commands, using the tools you are given.

How to work:
- Read the relevant code before changing it; do not guess at file contents.
- Prefer small, exact edits with edit_file (old_text must match the file exactly); use \
write_file for new files or complete rewrites.
- For a task with several steps, keep a plan with update_plan and mark steps as you go.
- After a change, run the project's tests or checks with run_command when there are any.
- delegate hands a self-contained question (e.g. "where is X handled?") to a read-only \
helper that explores the code and answers; use it to keep your own context small.
- When you cannot go on without the user's decision, ask with ask_user if you have it; \
otherwise ask in your reply and end your turn.
- Some tools may be unavailable: the user's mode decides (ask mode is read-only). If a tool \
you need is missing or a call is rejected, say what you would do instead of insisting.
- Be concise. Refer to files by their path relative to the working directory."""


class StateError(ValueError):
    """A stored state is not one this code can read."""


@dataclass(frozen=True, slots=True)
class CoderState:
    """A coder session's stored state: its system prompt and the engine's own state.

    Attributes:
        system_prompt: The instructions, as built when the session was created.
        engine: The model engine's state (its message history); ``None`` when empty.
    """

    system_prompt: str
    engine: JsonValue = None

    def to_json(self) -> JsonValue:
        """The stored form (module docstring)."""
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "systemPrompt": self.system_prompt,
            "engine": self.engine,
        }

    @classmethod
    def from_json(cls, state: JsonValue) -> CoderState | None:
        """Read a stored state; ``None`` for a session that has none yet.

        Raises:
            StateError: ``state`` is something else.
        """
        if state is None:
            return None
        if not isinstance(state, dict):
            raise StateError(f"stored state is a {type(state).__name__}, not an object")
        if state.get("format") != STATE_FORMAT or state.get("version") != STATE_VERSION:
            raise StateError(
                f"stored state has format {state.get('format')!r} version "
                f"{state.get('version')!r}; expected {STATE_FORMAT!r} version {STATE_VERSION}"
            )
        prompt = state.get("systemPrompt")
        if not isinstance(prompt, str):
            raise StateError("stored state has no system prompt")
        return cls(prompt, state.get("engine"))


def read_project_notes(cwd: str) -> str | None:
    """The text of ``AGENTS.md`` in ``cwd`` (bounded), or ``None`` if there is none to use.

    Only a regular file whose real path is inside ``cwd`` is read (never blocking: see
    :mod:`._reading`): a link leading out of the project, a FIFO or a device is refused, and
    the refusal logged, so the system prompt holds only what the project itself says.
    """
    path = os.path.join(cwd, PROJECT_NOTES_FILE)
    if not os.path.lexists(path):
        return None
    if not Roots.of(cwd).holds(path):
        _log.warning(
            "%s is a link to %s, outside the project: not used in the system prompt",
            path,
            os.path.realpath(path),
        )
        return None
    limit = MAX_PROJECT_NOTES_CHARS * 4  # UTF-8: at most 4 bytes a character
    try:  # on descriptors: a link swapped in since the check cannot lead out either
        data = read_confined(path, [cwd], limit=limit, truncate=True)
    except ToolError as refused:
        _log.warning("%s: not used in the system prompt", refused.message)
        return None
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    if len(text) > MAX_PROJECT_NOTES_CHARS:
        text = text[:MAX_PROJECT_NOTES_CHARS] + f"\n[… {PROJECT_NOTES_FILE} continues]"
    return text


def build_system_prompt(
    *,
    cwd: str,
    additional_directories: Sequence[str] = (),
    editor_files: bool = False,
    editor_terminal: bool = False,
    now: datetime | None = None,
    project_notes: str | None = None,
) -> str:
    """Write the system prompt of a new session.

    Args:
        cwd: The session's working directory.
        additional_directories: Its other roots.
        editor_files: The editor reads (and shows unsaved changes of) files for the agent.
        editor_terminal: Commands run in the editor's terminal.
        now: The session's creation time (default: now, local time).
        project_notes: The project's instructions (see :func:`read_project_notes`).
    """
    moment = now or datetime.now().astimezone()
    lines = [
        _INTRO,
        "",
        "Environment:",
        f"- Working directory: {cwd}",
    ]
    if additional_directories:
        lines.append(f"- Also in the workspace: {', '.join(additional_directories)}")
    lines += [
        "- All paths you use must be inside these directories.",
        f"- Platform: {platform.system() or 'unknown'}; date: {moment.date().isoformat()}",
    ]
    if editor_files:
        lines.append("- Files are read through the editor, so you see unsaved changes.")
    if editor_terminal:
        lines.append("- Commands run in the editor's terminal; the user sees their output.")
    if project_notes:
        lines += [
            "",
            f"Project instructions (from {PROJECT_NOTES_FILE}):",
            project_notes,
        ]
    return "\n".join(lines)

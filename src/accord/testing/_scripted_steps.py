"""The steps of a ``ScriptedEngine`` script (see :mod:`._scripted_engine`).

Each step is a frozen dataclass; :data:`ScriptStep` is their union, dispatched by the engine
with ``match``. Below: :mod:`accord.schema`, :mod:`accord.events`. Above: the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, final

import anyio
from pydantic import JsonValue

from ..engines import TurnOutput
from ..schema import (
    AvailableCommand,
    Cost,
    PermissionOption,
    PlanEntry,
    StopReason,
    ToolCallContent,
    ToolCallLocation,
    ToolKind,
)

__all__ = (
    "ChangeCommands",
    "ChangeMode",
    "Emit",
    "Fail",
    "Pause",
    "ReportUsage",
    "Say",
    "ScriptStep",
    "SetPlan",
    "SetTitle",
    "Stop",
    "Stream",
    "Think",
    "UseTool",
    "WaitFor",
    "WaitForCancel",
)


@final
@dataclass(frozen=True, slots=True)
class Say:
    """Agent message chunks: ``text`` as one chunk, or each of ``pieces`` as a chunk."""

    text: str = ""
    pieces: tuple[str, ...] = ()
    message_id: str | None = None


@final
@dataclass(frozen=True, slots=True)
class Think:
    """Thought chunks, like :class:`Say`."""

    text: str = ""
    pieces: tuple[str, ...] = ()
    message_id: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Stream:
    """``count`` message chunks ``"{prefix}{i} "`` with ``delay`` seconds between them."""

    count: int
    delay: float = 0.0
    prefix: str = ""
    message_id: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class UseTool:
    """A tool call.

    Attributes:
        title: What the user sees.
        kind: The ACP tool kind.
        name: The programmatic tool name (remembered permissions key on it).
        tool_call_id: Its id (default: a fresh ``call-<n>-<uuid>``).
        raw_input: The tool's input.
        locations: The files it touches (announced with the call).
        content: What it shows from the start (e.g. a diff).
        ask: Request permission first (a denial or cancellation fails the call unrun).
        options: The permission options (default: the runtime's four).
        result: The text the tool returns.
        fail: End the call as ``failed`` instead of ``completed``.
        work: Seconds the tool runs (cooperative: cancellation fails the call early).
        start_running: Start directly ``in_progress`` (no ``pending`` phase, no permission).
    """

    title: str
    kind: ToolKind = "other"
    name: str | None = None
    tool_call_id: str | None = None
    raw_input: JsonValue = None
    locations: tuple[ToolCallLocation, ...] = ()
    content: tuple[ToolCallContent, ...] = ()
    ask: bool = False
    options: tuple[PermissionOption, ...] = ()
    result: str = "done"
    fail: bool = False
    work: float = 0.0
    start_running: bool = False


@final
@dataclass(frozen=True, slots=True)
class SetPlan:
    """A plan update with these entries (the complete list)."""

    entries: tuple[PlanEntry, ...]


@final
@dataclass(frozen=True, slots=True)
class ReportUsage:
    """A usage report: ``used`` of ``size`` tokens, and a cost if given."""

    used: int
    size: int
    cost: Cost | None = None


@final
@dataclass(frozen=True, slots=True)
class SetTitle:
    """A title change (``None`` clears it)."""

    title: str | None


@final
@dataclass(frozen=True, slots=True)
class ChangeMode:
    """An engine-initiated mode change (e.g. leaving plan mode)."""

    mode_id: str


@final
@dataclass(frozen=True, slots=True)
class ChangeCommands:
    """New slash commands (the full list)."""

    commands: tuple[AvailableCommand, ...]


@final
@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds``; cooperative pauses end early (and stop the script) on cancel."""

    seconds: float
    cooperative: bool = True


@final
@dataclass(frozen=True, slots=True)
class WaitForCancel:
    """Wait until cancelled; not cooperative: until the runtime cancels the step."""

    cooperative: bool = True


@final
@dataclass(frozen=True, slots=True)
class WaitFor:
    """Wait until ``event`` is set; cooperative waits also end (stopping the script) on
    cancel. For tests that need a turn to stand still at a known point.

    ``noticed`` (optional) is set when the turn is cancelled during the wait, even by a
    wait that is not cooperative: it tells a test that the cancellation has arrived.
    """

    event: anyio.Event
    cooperative: bool = True
    noticed: anyio.Event | None = None


@final
@dataclass(frozen=True, slots=True)
class Fail:
    """Raise ``error`` (default: ``RuntimeError(message)``)."""

    message: str = "scripted failure"
    error: Exception | None = None


@final
@dataclass(frozen=True, slots=True)
class Emit:
    """Yield ``output`` exactly as given."""

    output: TurnOutput


@final
@dataclass(frozen=True, slots=True)
class Stop:
    """Yield ``TurnCompleted(stop_reason)`` and end the turn."""

    stop_reason: StopReason = "end_turn"


ScriptStep: TypeAlias = (
    Say
    | Think
    | Stream
    | UseTool
    | SetPlan
    | ReportUsage
    | SetTitle
    | ChangeMode
    | ChangeCommands
    | Pause
    | WaitForCancel
    | WaitFor
    | Fail
    | Emit
    | Stop
)
"""One step of a script."""

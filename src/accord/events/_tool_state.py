"""The tool-call lifecycle: one transition table, and a tracker that enforces it.

Everything that affects tool-call status transitions lives in this module (the h11 rule):

* A call is created by :class:`ToolCallStarted` as ``pending`` or directly ``in_progress``.
* :class:`ToolCallProgress` may move ``pending -> in_progress`` once, and otherwise only changes
  fields; a repeated ``in_progress`` is not a change and is refused.
* :class:`ToolCallEnded` moves a live call to ``completed`` or ``failed``; after that nothing
  may touch the call, and its id may not be reused within the session.

The table is :data:`TRANSITIONS`; :func:`transition_diagram` draws it (Mermaid) for the docs.

An illegal transition raises :class:`~accord.errors.LocalProtocolError`: the producer of the
events (the engine or the runtime) broke the lifecycle, not the peer.

This module sits on the event classes; the agent runtime feeds every tool-call event of a
session through one :class:`ToolCallTracker` before publishing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, TypeAlias

from ..errors import LocalProtocolError
from ..schema import ToolCallStatus
from ._events import ToolCallEnded, ToolCallProgress, ToolCallStarted

__all__ = (
    "TRANSITIONS",
    "ToolCallEvent",
    "ToolCallTracker",
    "ToolCallTrigger",
    "tool_call_trigger",
    "transition_diagram",
)

ToolCallTrigger: TypeAlias = Literal["start", "start_running", "update", "run", "complete", "fail"]
"""What an event asks of the lifecycle (see :func:`tool_call_trigger`)."""

ToolCallEvent: TypeAlias = ToolCallStarted | ToolCallProgress | ToolCallEnded
"""The events that drive the tool-call lifecycle."""

TRANSITIONS: Final[Mapping[tuple[ToolCallStatus | None, ToolCallTrigger], ToolCallStatus]] = {
    (None, "start"): "pending",
    (None, "start_running"): "in_progress",
    ("pending", "update"): "pending",
    ("pending", "run"): "in_progress",
    ("pending", "complete"): "completed",
    ("pending", "fail"): "failed",
    ("in_progress", "update"): "in_progress",
    ("in_progress", "complete"): "completed",
    ("in_progress", "fail"): "failed",
}
"""``(state, trigger) -> next state`` (state ``None``: a call not yet started); a pair that is
absent is an illegal transition."""

TERMINAL_STATES: Final[frozenset[ToolCallStatus]] = frozenset({"completed", "failed"})


def tool_call_trigger(event: ToolCallEvent) -> ToolCallTrigger:
    """Return the lifecycle trigger an event represents."""
    match event:
        case ToolCallStarted(status="pending"):
            return "start"
        case ToolCallStarted():
            return "start_running"
        case ToolCallProgress(status=None):
            return "update"
        case ToolCallProgress():
            return "run"
        case ToolCallEnded(status="completed"):
            return "complete"
        case ToolCallEnded():
            return "fail"


def transition_diagram() -> str:
    """Return :data:`TRANSITIONS` as a Mermaid state diagram (the docs embed this output)."""
    lines = ["stateDiagram-v2"]
    for (state, trigger), target in TRANSITIONS.items():
        lines.append(f"    {state or '[*]'} --> {target}: {trigger}")
    lines.extend(f"    {state} --> [*]" for state in sorted(TERMINAL_STATES))
    return "\n".join(lines)


class ToolCallTracker:
    """The status of every tool call of one session, advanced only through :data:`TRANSITIONS`.

    Tool-call ids are unique within a session (across the root agent and its sub-agents), so
    one tracker serves the whole session.
    """

    __slots__ = ("_states",)

    def __init__(self) -> None:
        """Start with no tool calls."""
        self._states: dict[str, ToolCallStatus] = {}

    def state(self, tool_call_id: str) -> ToolCallStatus | None:
        """Return the call's status, or ``None`` if it was never started."""
        return self._states.get(tool_call_id)

    def check(self, event: ToolCallEvent) -> ToolCallStatus:
        """Return the status ``event`` would lead to, without applying it.

        Raises:
            LocalProtocolError: the event is illegal for the call's current status.
        """
        current = self._states.get(event.tool_call_id)
        trigger = tool_call_trigger(event)
        try:
            return TRANSITIONS[current, trigger]
        except KeyError:
            shown = "not started" if current is None else current
            raise LocalProtocolError(
                f"illegal tool-call transition for {event.tool_call_id!r}: "
                f"{event.kind} ({trigger}) while {shown}"
            ) from None

    def apply(self, event: ToolCallEvent) -> ToolCallStatus:
        """Advance the call's status by ``event`` and return the new status.

        Raises:
            LocalProtocolError: the event is illegal for the call's current status; the
                tracker is left unchanged.
        """
        new_state = self.check(event)
        self._states[event.tool_call_id] = new_state
        return new_state

    def unfinished(self) -> tuple[str, ...]:
        """Return the ids of calls that are still ``pending`` or ``in_progress``, oldest first.

        On cancellation the runtime ends these (as ``failed``) before it completes the turn.
        """
        return tuple(i for i, s in self._states.items() if s not in TERMINAL_STATES)

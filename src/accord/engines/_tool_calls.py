"""The tool-call lifecycle: one transition table, and a tracker that enforces it.

Everything that affects tool-call status transitions lives in this module (the h11 rule):

* A call is created by :class:`ToolCallStarted` as ``pending`` or directly ``in_progress``.
* :class:`ToolCallProgress` may move ``pending -> in_progress`` once, and otherwise only changes
  fields; a repeated ``in_progress`` is not a change and is refused.
* :class:`ToolCallEnded` moves a live call to ``completed``, ``failed`` or ``cancelled`` (cut
  short by ``session/cancel``); after that nothing may touch the call, and its id may not be
  reused within the session.

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
from ._events import ToolCallEnded, ToolCallProgress, ToolCallStarted

__all__ = (
    "TRANSITIONS",
    "ToolCallEvent",
    "ToolCallTracker",
    "ToolCallTrigger",
    "tool_call_trigger",
    "transition_diagram",
)

ToolCallState: TypeAlias = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
"""The ACP ``ToolCallStatus`` values and ``cancelled`` (which ACP v1 does not put on the wire);
``None`` stands for a call not yet started."""

ToolCallTrigger: TypeAlias = Literal[
    "start", "start_running", "update", "run", "complete", "fail", "cancel"
]
"""What an event asks of the lifecycle (see :func:`tool_call_trigger`)."""

ToolCallEvent: TypeAlias = ToolCallStarted | ToolCallProgress | ToolCallEnded
"""The events that drive the tool-call lifecycle."""

TRANSITIONS: Final[Mapping[tuple[ToolCallState | None, ToolCallTrigger], ToolCallState]] = {
    (None, "start"): "pending",
    (None, "start_running"): "in_progress",
    ("pending", "update"): "pending",
    ("pending", "run"): "in_progress",
    ("pending", "complete"): "completed",
    ("pending", "fail"): "failed",
    ("pending", "cancel"): "cancelled",
    ("in_progress", "update"): "in_progress",
    ("in_progress", "complete"): "completed",
    ("in_progress", "fail"): "failed",
    ("in_progress", "cancel"): "cancelled",
}
"""``(state, trigger) -> next state`` (state ``None``: a call not yet started); a pair that is
absent is an illegal transition."""

TERMINAL_STATES: Final[frozenset[ToolCallState]] = frozenset({"completed", "failed", "cancelled"})


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
        case ToolCallEnded(status="cancelled"):
            return "cancel"
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
        self._states: dict[str, ToolCallState] = {}

    def state(self, tool_call_id: str) -> ToolCallState | None:
        """Return the call's status, or ``None`` if it was never started."""
        return self._states.get(tool_call_id)

    def check(self, event: ToolCallEvent) -> ToolCallState:
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

    def apply(self, event: ToolCallEvent) -> ToolCallState:
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

        On cancellation the runtime ends these (as ``cancelled``) before it completes the turn.
        """
        return tuple(i for i, s in self._states.items() if s not in TERMINAL_STATES)

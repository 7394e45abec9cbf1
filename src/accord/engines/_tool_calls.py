"""Tool calls: the one model of a call's state, its status table, and ACP's merge rule.

Everything that decides what a tool call looks like lives in this module (the h11 rule), and
every part of accord that keeps tool calls uses it: the engines that produce them, the agent
runtime that checks and records them, the replay that compacts them, and the client that shows
them.

* :class:`ToolCallState` is a frozen snapshot of one call (title, kind, status, content,
  locations, raw input and output, tool name); every change makes a new snapshot.
* :data:`TRANSITIONS` is the status table (:class:`~._state_table.StateTable`):

  - a call is created by :class:`ToolCallStarted` as ``pending`` or directly ``in_progress``;
  - :class:`ToolCallProgress` may move ``pending -> in_progress`` once, and otherwise only
    changes fields; a repeated ``in_progress`` is not a change and is refused;
  - :class:`ToolCallEnded` moves a live call to ``completed``, ``failed`` or ``cancelled``
    (cut short by ``session/cancel``); after that nothing may touch the call, and its id may
    not be reused within the session.

  An illegal step raises :class:`~accord.errors.LocalProtocolError` in
  :class:`ToolCallTracker` (the producer broke the lifecycle, not the peer).
* :func:`merge_tool_call` is ACP's merge rule for updates of a call: **later wins; a field
  present replaces the earlier value; a collection (``content``, ``locations``) replaces the
  whole collection (ACP has no append); an absent or ``null`` field leaves the value as it
  was.** It merges snapshots, events and wire dicts alike. :func:`tool_call_changes` reads the
  fields an ACP ``tool_call`` / ``tool_call_update`` carries, and :func:`event_changes` those
  of an event, in the snapshot's names.

Sits on the event classes, :mod:`accord.schema` and :mod:`accord.errors`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar, overload

from ..errors import LocalProtocolError
from ..schema import (
    ContentToolCallContent,
    DiffToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallContent,
    ToolCallLocation,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    ToolKind,
)
from ._events import ToolCallEnded, ToolCallProgress, ToolCallStarted
from ._state_table import StateTable

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = (
    "FINISHED",
    "TRANSITIONS",
    "ToolCallEvent",
    "ToolCallPhase",
    "ToolCallState",
    "ToolCallTracker",
    "ToolCallTrigger",
    "event_changes",
    "merge_tool_call",
    "tool_call_changes",
    "tool_call_trigger",
    "transition_diagram",
)

ToolCallPhase: TypeAlias = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
"""A tool call's status: the ACP ``ToolCallStatus`` values and ``cancelled`` (cut short by
``session/cancel``; ACP v1 does not put it on the wire, accord marks it in ``_meta``)."""

ToolCallTrigger: TypeAlias = Literal[
    "start", "start_running", "update", "run", "complete", "fail", "cancel"
]
"""What an event asks of the lifecycle (see :func:`tool_call_trigger`)."""

ToolCallEvent: TypeAlias = ToolCallStarted | ToolCallProgress | ToolCallEnded
"""The events that drive the tool-call lifecycle."""

FINISHED: Final[frozenset[ToolCallPhase]] = frozenset({"completed", "failed", "cancelled"})
"""The statuses a call ends in; nothing changes a finished call."""

TRANSITIONS: Final[StateTable[ToolCallPhase | None, ToolCallTrigger]] = StateTable(
    {
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
    },
    final=FINISHED,
)
"""``(status, trigger) -> next status`` (status ``None``: a call not yet started); a pair that
is absent is an illegal transition."""

#: The fields of :class:`ToolCallState` that hold a collection (replaced whole by an update).
_COLLECTIONS: Final = frozenset({"content", "locations"})
#: The fields an ACP tool call (or its update) may carry, by the snapshot's names.
_WIRE_FIELDS: Final = ("title", "kind", "status", "raw_input", "raw_output", "name")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallState:
    """A snapshot of one tool call, as reported so far.

    Attributes:
        tool_call_id: The call's id, unique within the session.
        title: What the tool is doing, for people.
        kind: The category (``read``, ``edit``, ``execute``, ...; unknown kinds read
            ``other``).
        status: ``pending``, ``in_progress``, ``completed``, ``failed``, or ``cancelled``.
        content: What the tool produced: content blocks, diffs and terminals, in order.
        locations: The files (and lines) it touches.
        raw_input: The tool's input as reported.
        raw_output: The tool's output as reported.
        name: The tool's programmatic name, when known (unstable ACP).
    """

    tool_call_id: str
    title: str = ""
    kind: ToolKind = "other"
    status: ToolCallPhase = "pending"
    content: tuple[ToolCallContent, ...] = ()
    locations: tuple[ToolCallLocation, ...] = ()
    raw_input: Any = None
    raw_output: Any = None
    name: str | None = None

    @property
    def finished(self) -> bool:
        """Whether the call has ended (completed, failed or cancelled)."""
        return self.status in FINISHED

    @property
    def text(self) -> str:
        """The text of its ``content`` blocks, one block per line."""
        return "\n".join(
            item.content.text
            for item in self.content
            if isinstance(item, ContentToolCallContent)
            and isinstance(item.content, TextContentBlock)
        )

    @property
    def diffs(self) -> tuple[DiffToolCallContent, ...]:
        """The file changes it reported."""
        return tuple(item for item in self.content if isinstance(item, DiffToolCallContent))

    @property
    def terminal_ids(self) -> tuple[str, ...]:
        """The ids of the terminals it embeds (created with ``terminal/create``)."""
        return tuple(
            item.terminal_id for item in self.content if isinstance(item, TerminalToolCallContent)
        )


_D = TypeVar("_D", bound="DataclassInstance")


@overload
def merge_tool_call(current: _D, update: Mapping[str, Any]) -> _D: ...
@overload
def merge_tool_call(current: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]: ...
def merge_tool_call(
    current: DataclassInstance | Mapping[str, Any], update: Mapping[str, Any]
) -> DataclassInstance | dict[str, Any]:
    """ACP's merge rule: ``current`` with ``update`` laid over it (see the module docstring).

    Later wins: every field of ``update`` that is present and not ``None`` replaces the one of
    ``current``, a collection as a whole; a ``None`` (``null`` on the wire) or absent field
    leaves it unchanged. Works on a snapshot or an event (returns a new one of the same class,
    collections stored as tuples; ``current`` itself if nothing changes) and on a wire-form
    ``dict`` (returns a new ``dict``; values as given).
    """
    changes = {name: value for name, value in update.items() if value is not None}
    if isinstance(current, Mapping):
        return {**current, **changes}
    for name in _COLLECTIONS.intersection(changes):
        changes[name] = tuple(changes[name])
    return dataclasses.replace(current, **changes) if changes else current


def tool_call_changes(update: ToolCallSessionUpdate | ToolCallUpdate) -> dict[str, Any]:
    """The fields an ACP ``tool_call`` or ``tool_call_update`` carries, by snapshot names.

    Only fields that are present and not ``null`` (v1: ``null`` = unchanged); ``content`` and
    ``locations`` as tuples. accord's ``_meta.accord.status = "cancelled"`` marker on an update
    reads as the status ``cancelled`` (it goes with ``failed``, or no status from older agents).
    """
    given = update.model_fields_set
    changes: dict[str, Any] = {}
    for field in _WIRE_FIELDS:
        if field in given:
            value = getattr(update, field)
            if value is not None:
                changes[field] = value
    if "content" in given and update.content is not None:
        changes["content"] = tuple(update.content)
    if "locations" in given and update.locations is not None:
        changes["locations"] = tuple(update.locations)
    meta = update.meta
    status = changes.get("status")
    if isinstance(update, ToolCallUpdate) and meta is not None and status in (None, "failed"):
        accord: object = meta.get("accord")
        if isinstance(accord, dict) and accord.get("status") == "cancelled":  # pyright: ignore[reportUnknownMemberType]
            changes["status"] = "cancelled"
    return changes


def event_changes(event: ToolCallEvent) -> dict[str, Any]:
    """The fields a tool-call event sets, by snapshot names (``tool_kind`` is ``kind``)."""
    match event:
        case ToolCallStarted():
            return {
                "title": event.title,
                "kind": event.tool_kind,
                "status": event.status,
                "content": event.content,
                "locations": event.locations,
                "raw_input": event.raw_input,
                "name": event.name,
            }
        case ToolCallProgress():
            return {
                "title": event.title,
                "kind": event.tool_kind,
                "status": event.status,
                "content": event.content,
                "locations": event.locations,
                "raw_input": event.raw_input,
            }
        case ToolCallEnded():
            return {
                "title": event.title,
                "status": event.status,
                "content": event.content,
                "locations": event.locations,
                "raw_output": event.raw_output,
            }


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
    return TRANSITIONS.diagram()


class ToolCallTracker:
    """Every tool call of one session: its snapshot, advanced only through :data:`TRANSITIONS`.

    Tool-call ids are unique within a session (across the root agent and its sub-agents), so
    one tracker serves the whole session. Each event's fields are merged into the call's
    snapshot with :func:`merge_tool_call`.
    """

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        """Start with no tool calls."""
        self._calls: dict[str, ToolCallState] = {}

    def state(self, tool_call_id: str) -> ToolCallPhase | None:
        """Return the call's status, or ``None`` if it was never started."""
        call = self._calls.get(tool_call_id)
        return None if call is None else call.status

    def get(self, tool_call_id: str) -> ToolCallState | None:
        """Return the call's snapshot, or ``None`` if it was never started."""
        return self._calls.get(tool_call_id)

    def check(self, event: ToolCallEvent) -> ToolCallPhase:
        """Return the status ``event`` would lead to, without applying it.

        Raises:
            LocalProtocolError: the event is illegal for the call's current status.
        """
        current = self.state(event.tool_call_id)
        trigger = tool_call_trigger(event)
        target = TRANSITIONS.step(current, trigger)
        if target is None:
            shown = "not started" if current is None else current
            raise LocalProtocolError(
                f"illegal tool-call transition for {event.tool_call_id!r}: "
                f"{event.kind} ({trigger}) while {shown}"
            )
        return target

    def apply(self, event: ToolCallEvent) -> ToolCallPhase:
        """Advance the call by ``event`` and return its new status.

        Raises:
            LocalProtocolError: the event is illegal for the call's current status; the
                tracker is left unchanged.
        """
        status = self.check(event)
        known = self._calls.get(event.tool_call_id)
        base = ToolCallState(tool_call_id=event.tool_call_id) if known is None else known
        changes = event_changes(event)
        changes["status"] = status
        self._calls[event.tool_call_id] = merge_tool_call(base, changes)
        return status

    def unfinished(self) -> tuple[str, ...]:
        """Return the ids of calls that are still ``pending`` or ``in_progress``, oldest first.

        On cancellation the runtime ends these (as ``cancelled``) before it completes the turn.
        """
        return tuple(i for i, call in self._calls.items() if call.status not in FINISHED)

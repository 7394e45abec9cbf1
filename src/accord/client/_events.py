"""The per-turn events: what an agent does during a prompt turn, as one closed union.

Each ``session/update`` the agent sends becomes exactly one event (folded into the session's
view first, so an event's snapshot is the state right after it); permission requests add a
:class:`PermissionRequested` / :class:`PermissionResolved` pair, and every turn ends with
:class:`TurnFinished`. Events are frozen dataclasses with a ``kind`` literal; dispatch with
``match`` and ``assert_never`` over :data:`TurnEvent`.

Above: :class:`~accord.client.TurnStream` yields these; :mod:`accord.client._render` prints
them. Below: :mod:`accord.client._state` (the snapshots they carry) and :mod:`accord.schema`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

from ..schema import (
    AvailableCommand,
    ContentBlock,
    Cost,
    PermissionOption,
    PlanEntry,
    SessionConfigOption,
    SessionUpdate,
    StopReason,
    Usage,
)
from ._permissions import PermissionDecision
from ._state import CompactionState, ToolCallState

__all__ = (
    "CommandsUpdated",
    "CompactionSummaryDelta",
    "CompactionUpdated",
    "ConfigUpdated",
    "ModeUpdated",
    "OtherUpdate",
    "PermissionRequested",
    "PermissionResolved",
    "PlanUpdated",
    "TextDelta",
    "ThoughtDelta",
    "TitleUpdated",
    "ToolCallAdded",
    "ToolCallUpdated",
    "TurnEvent",
    "TurnFinished",
    "UsageUpdated",
    "UserMessageDelta",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A chunk of the agent's answer.

    Attributes:
        text: the chunk's text ("" when the chunk is not text, e.g. an image).
        content: the chunk as sent.
        message_id: the agent's message id, if it sends them.
    """

    text: str
    content: ContentBlock
    message_id: str | None = None
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True, kw_only=True)
class ThoughtDelta:
    """A chunk of the agent's visible reasoning (same fields as :class:`TextDelta`)."""

    text: str
    content: ContentBlock
    message_id: str | None = None
    kind: Literal["thought"] = "thought"


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageDelta:
    """A chunk of a user message reported by the agent (history replay, or an echo)."""

    text: str
    content: ContentBlock
    message_id: str | None = None
    kind: Literal["user_message"] = "user_message"


_Delta = TypeVar("_Delta", "TextDelta", "ThoughtDelta", "UserMessageDelta")


def _delta_factory(cls: type[_Delta]) -> Callable[[str, ContentBlock, str | None], _Delta]:
    """A positional constructor for a chunk event: the bulk of every turn's events.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; setting
    the slots directly builds the same object (equal, hashable, frozen) in a third of the time.
    """
    new = object.__new__
    slots: Any = cls
    set_text = slots.text.__set__
    set_content = slots.content.__set__
    set_message_id = slots.message_id.__set__
    set_kind = slots.kind.__set__
    kind = cls.__dataclass_fields__["kind"].default

    def make(text: str, content: ContentBlock, message_id: str | None) -> _Delta:
        event = new(cls)
        set_text(event, text)
        set_content(event, content)
        set_message_id(event, message_id)
        set_kind(event, kind)
        return event

    return make


new_text_delta = _delta_factory(TextDelta)
new_thought_delta = _delta_factory(ThoughtDelta)
new_user_message_delta = _delta_factory(UserMessageDelta)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallAdded:
    """A tool call the session had not seen; ``tool_call`` is its first snapshot."""

    tool_call: ToolCallState
    kind: Literal["tool_call_started"] = "tool_call_started"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallUpdated:
    """A known tool call changed.

    Attributes:
        tool_call: the snapshot after the change.
        changed: the names of the :class:`ToolCallState` fields the update carried.
    """

    tool_call: ToolCallState
    changed: frozenset[str]
    kind: Literal["tool_call_updated"] = "tool_call_updated"


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanUpdated:
    """The agent's plan, complete (it replaces the previous one)."""

    entries: tuple[PlanEntry, ...]
    kind: Literal["plan"] = "plan"


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageUpdated:
    """The session's context window use and cost so far.

    Attributes:
        used: tokens in the context.
        size: the context window's size in tokens.
        cost: the cumulative cost, when the agent reports one.
    """

    used: int
    size: int
    cost: Cost | None = None
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeUpdated:
    """The agent switched the session's mode."""

    mode_id: str
    kind: Literal["mode"] = "mode"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigUpdated:
    """The session's configuration options, complete, with their current values."""

    config_options: tuple[SessionConfigOption, ...]
    kind: Literal["config"] = "config"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandsUpdated:
    """The slash commands the agent offers, complete."""

    commands: tuple[AvailableCommand, ...]
    kind: Literal["commands"] = "commands"


@dataclass(frozen=True, slots=True, kw_only=True)
class TitleUpdated:
    """The session's title or last-activity time changed (None = cleared or unknown)."""

    title: str | None
    updated_at: str | None
    kind: Literal["title"] = "title"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionUpdated:
    """The agent began, finished or failed a compaction of its context (unstable
    ``compaction_update``): it summarised earlier turns for its model.

    Attributes:
        compaction: the compaction's snapshot after the update.
        changed: the :class:`~accord.client.CompactionState` fields the update carried
            (``status`` always; ``summary`` and ``error`` when sent: ACP's patch rule).
    """

    compaction: CompactionState
    changed: frozenset[str]
    kind: Literal["compaction"] = "compaction"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSummaryDelta:
    """A piece of a compaction's summary (unstable ``compaction_summary_chunk``).

    Attributes:
        text: the piece's text ("" when it is not text).
        content: the piece as sent.
        compaction: the compaction's snapshot with the piece appended.
    """

    text: str
    content: ContentBlock
    compaction: CompactionState
    kind: Literal["compaction_summary"] = "compaction_summary"


@dataclass(frozen=True, slots=True, kw_only=True)
class OtherUpdate:
    """An update the view does not model (unstable ACP variants this client does not
    advertise, such as notices or plan operations); kept so nothing is lost silently."""

    update: SessionUpdate
    kind: Literal["other"] = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRequested:
    """The agent asked for permission; the session's policy is deciding.

    Attributes:
        request_id: numbers this request within the connection, to pair it with its
            :class:`PermissionResolved`.
        tool_call: what the session knows of the tool call in question.
        options: the options offered.
    """

    request_id: int
    tool_call: ToolCallState
    options: tuple[PermissionOption, ...]
    kind: Literal["permission_requested"] = "permission_requested"


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionResolved:
    """A permission request was answered, or withdrawn by the agent.

    Every :class:`PermissionRequested` of a turn is followed by one of these: when the agent
    withdraws the question (``$/cancel_request``: another attached client answered it first),
    ``decision`` is :class:`Cancel` and ``option`` None, and nothing was sent.

    Attributes:
        request_id: as in the matching :class:`PermissionRequested`.
        decision: the answer sent (:class:`Cancel` when withdrawn).
        option: the selected option (None when cancelled or withdrawn).
    """

    request_id: int
    decision: PermissionDecision
    option: PermissionOption | None
    kind: Literal["permission_resolved"] = "permission_resolved"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFinished:
    """The agent answered the prompt; always the last event of a turn.

    Attributes:
        stop_reason: why the turn ended.
        usage: the turn's token usage, when the agent reports it (unstable ACP).
    """

    stop_reason: StopReason
    usage: Usage | None = None
    kind: Literal["finished"] = "finished"


TurnEvent: TypeAlias = (
    TextDelta
    | ThoughtDelta
    | UserMessageDelta
    | ToolCallAdded
    | ToolCallUpdated
    | PlanUpdated
    | UsageUpdated
    | ModeUpdated
    | ConfigUpdated
    | CommandsUpdated
    | TitleUpdated
    | CompactionUpdated
    | CompactionSummaryDelta
    | OtherUpdate
    | PermissionRequested
    | PermissionResolved
    | TurnFinished
)
"""Everything a per-turn stream can yield."""

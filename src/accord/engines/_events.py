"""The canonical event classes: what an engine (or the runtime) says happened in a session.

Every event is a frozen, slotted, keyword-only dataclass with a ``kind`` literal, and ``Event``
is the closed union of all of them. Consumers dispatch with ``match`` and close the match with
``assert_never`` so that adding a class without handling it fails the type check.

Each class has a fixed ``layer`` (a class variable, never per instance):

* ``render``: what a user sees (message, thought and tool-call streams, plans, controls).
* ``state``: turn boundaries and engine state (``TurnCompleted``, ``StateSnapshot``).
* ``observe``: telemetry (model calls, compaction, errors, sub-agents); lossy, never blocks.

Payloads reuse the wire types of :mod:`accord.schema` (``ContentBlock``, ``ToolCallContent``,
``PlanEntry``, ...) so that nothing is translated twice; sequences are tuples so that events stay
immutable.

Message ids: the producer of chunk events stamps ``message_id`` on every chunk. All chunks of one
message share one id; a new message gets a new id from :func:`new_id` (a UUID v7). The mapping to
``session/update`` copies it into ``messageId`` unchanged, so live streams and replays agree.

This module sits on :mod:`accord.schema` and imports nothing else of ours; envelopes, the mapping
to ``session/update``, sinks, the store and the agent runtime sit above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final, Literal, TypeAlias, final

import uuid_utils
from pydantic import JsonValue

from ..schema import (
    AvailableCommand,
    ContentBlock,
    Cost,
    PermissionOption,
    PlanEntry,
    SessionConfigOption,
    StopReason,
    ToolCallContent,
    ToolCallLocation,
    ToolKind,
)

__all__ = (
    "ROOT_AGENT_ID",
    "BudgetResource",
    "BudgetWarning",
    "CommandsChanged",
    "CompactionChanged",
    "CompactionPhase",
    "CompactionSummaryAdded",
    "ConfigChanged",
    "Event",
    "EventKind",
    "Layer",
    "MessagesCompacted",
    "ModeChanged",
    "ModelCallEnded",
    "ModelCallStarted",
    "PermissionPending",
    "PlanChanged",
    "StateSnapshot",
    "SubAgentEvent",
    "SubAgentStarted",
    "SubAgentStopped",
    "TextChunk",
    "ThinkingChunk",
    "TitleChanged",
    "ToolCallEnded",
    "ToolCallProgress",
    "ToolCallStarted",
    "TurnCompleted",
    "TurnError",
    "UsageReported",
    "UserMessageChunk",
    "new_id",
)

Layer: TypeAlias = Literal["render", "state", "observe"]
"""Delivery class of an event: ordered and blocking (render, state) or lossy (observe)."""

ROOT_AGENT_ID: Final = "root"
"""The ``agent_id`` of the session's own agent; sub-agents use ids of their own."""

BudgetResource: TypeAlias = Literal["tokens", "cost", "model_requests", "time"]
"""What a :class:`BudgetWarning` is about."""

CompactionPhase: TypeAlias = Literal["in_progress", "completed", "failed", "cancelled"]
"""Where a :class:`CompactionChanged` compaction is."""


def new_id() -> str:
    """Return a fresh UUID v7 as text: the id format for turns, messages and sub-agents.

    UUID v7 sorts by creation time, so ids of one session sort in the order they were made.
    """
    return str(uuid_utils.uuid7())


# --------------------------------------------------------------------------- render layer


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageChunk:
    """A piece of the user's prompt, recorded so that ``session/load`` can replay it.

    The runtime publishes one per prompt content block, all with the same ``message_id``.
    """

    kind: Literal["user_message_chunk"] = "user_message_chunk"
    layer: ClassVar[Layer] = "render"
    message_id: str
    content: ContentBlock


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TextChunk:
    """A piece of the agent's reply (``agent_message_chunk``).

    ``message_id`` is the same for every chunk of one reply; start a new reply with a new
    :func:`new_id`.
    """

    kind: Literal["text_chunk"] = "text_chunk"
    layer: ClassVar[Layer] = "render"
    message_id: str
    content: ContentBlock


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingChunk:
    """A piece of the agent's reasoning (``agent_thought_chunk``); ids work as for text."""

    kind: Literal["thinking_chunk"] = "thinking_chunk"
    layer: ClassVar[Layer] = "render"
    message_id: str
    content: ContentBlock


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted:
    """A tool call was created (``tool_call``).

    ``tool_call_id`` must be unique within the session. ``kind`` comes from the tool's
    declared behaviour (``read``, ``edit``, ``execute``, ...). A call starts ``pending``
    (input still streaming, or awaiting permission) or directly ``in_progress``.
    """

    kind: Literal["tool_call_started"] = "tool_call_started"
    layer: ClassVar[Layer] = "render"
    tool_call_id: str
    title: str
    tool_kind: ToolKind = "other"
    status: Literal["pending", "in_progress"] = "pending"
    content: tuple[ToolCallContent, ...] = ()
    locations: tuple[ToolCallLocation, ...] = ()
    raw_input: JsonValue = None
    name: str | None = None
    """Programmatic tool name (e.g. ``read_file``): ``ToolCall.name`` on the wire (unstable)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallProgress:
    """A running tool call changed (``tool_call_update``): only the changed fields are set.

    ``None`` means unchanged. ``content`` and ``locations`` replace the whole collection when
    set (ACP has no append). The only status a progress event can set is ``in_progress``
    (``pending -> in_progress``); ending a call is :class:`ToolCallEnded`.
    """

    kind: Literal["tool_call_progress"] = "tool_call_progress"
    layer: ClassVar[Layer] = "render"
    tool_call_id: str
    status: Literal["in_progress"] | None = None
    title: str | None = None
    tool_kind: ToolKind | None = None
    content: tuple[ToolCallContent, ...] | None = None
    locations: tuple[ToolCallLocation, ...] | None = None
    raw_input: JsonValue = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEnded:
    """A tool call finished (``tool_call_update`` with ``completed`` or ``failed``).

    ``cancelled``: the call was cut short by ``session/cancel``. ACP v1 has no such wire
    status, so its update says ``failed`` (a final status every client shows: the prompting
    client marks open calls cancelled itself, but an observer or a replay after
    ``session/load`` has no other sign the call ended) with accord's marker
    ``_meta.accord.status = "cancelled"`` (see :data:`accord.events.CANCELLED_META`), which
    accord's client reads as cancelled, live and replayed.

    ``content`` (when set) replaces the call's content, typically with the result, a diff or
    the terminal; ``raw_output`` is the tool's result for clients that show it raw.
    """

    kind: Literal["tool_call_ended"] = "tool_call_ended"
    layer: ClassVar[Layer] = "render"
    tool_call_id: str
    status: Literal["completed", "failed", "cancelled"]
    title: str | None = None
    content: tuple[ToolCallContent, ...] | None = None
    locations: tuple[ToolCallLocation, ...] | None = None
    raw_output: JsonValue = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PlanChanged:
    """The agent's plan, complete each time (``plan``); the client replaces what it had."""

    kind: Literal["plan_updated"] = "plan_updated"
    layer: ClassVar[Layer] = "render"
    entries: tuple[PlanEntry, ...]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionPending:
    """The runtime asked the client to confirm a tool call and is waiting for the answer.

    Published by the runtime (not the engine) when it sends ``session/request_permission``;
    the request itself is what the client shows, so this has no ``session/update``.
    """

    kind: Literal["permission_pending"] = "permission_pending"
    layer: ClassVar[Layer] = "render"
    tool_call_id: str
    options: tuple[PermissionOption, ...]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetWarning:
    """A budget is nearly used up: ``used`` out of ``limit`` units of ``resource``.

    ACP v1 has no stable update for this; extended clients see it, and a mapper can turn it
    into an (unstable) ``notice``.
    """

    kind: Literal["budget_warning"] = "budget_warning"
    layer: ClassVar[Layer] = "render"
    resource: BudgetResource
    used: float
    limit: float


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModeChanged:
    """The session's mode changed (``current_mode_update``)."""

    kind: Literal["mode_changed"] = "mode_changed"
    layer: ClassVar[Layer] = "render"
    mode_id: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigChanged:
    """Config options changed (``config_option_update``): the complete list, current values."""

    kind: Literal["config_changed"] = "config_changed"
    layer: ClassVar[Layer] = "render"
    config_options: tuple[SessionConfigOption, ...]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CommandsChanged:
    """The slash commands on offer changed (``available_commands_update``): the full list."""

    kind: Literal["commands_changed"] = "commands_changed"
    layer: ClassVar[Layer] = "render"
    commands: tuple[AvailableCommand, ...]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TitleChanged:
    """The session title changed (``session_info_update``); ``None`` clears it.

    A title is display text: a NUL in it (JSON can carry one, PostgreSQL's ``text`` cannot)
    becomes U+FFFD, so every store keeps and lists the title the client was shown.
    """

    kind: Literal["title_changed"] = "title_changed"
    layer: ClassVar[Layer] = "render"
    title: str | None

    def __post_init__(self) -> None:
        if self.title is not None and "\x00" in self.title:
            object.__setattr__(self, "title", self.title.replace("\x00", "\ufffd"))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReported:
    """Context usage (``usage_update``): ``used`` of ``size`` tokens, cumulative ``cost``.

    Publish it only when the engine knows the numbers; no usage event means no
    ``usage_update``.
    """

    kind: Literal["usage_reported"] = "usage_reported"
    layer: ClassVar[Layer] = "render"
    used: int
    size: int
    cost: Cost | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionChanged:
    """A compaction of the model's context began, ended or failed (unstable ``compaction_update``).

    One compaction is one ``compaction_id``: ``in_progress`` first, then its
    :class:`CompactionSummaryAdded` events, then ``completed``, or ``failed`` (with ``error``)
    or ``cancelled`` (the turn was), the history then left as it was. ``message_id`` is the
    id of the ordinary marker (an agent message) that clients without the
    ``session.compaction`` capability see at the end instead. ``messages_before`` and
    ``messages_after``: the history's length in messages before and after (on ``completed``).
    """

    kind: Literal["compaction_changed"] = "compaction_changed"
    layer: ClassVar[Layer] = "render"
    compaction_id: str
    message_id: str
    status: CompactionPhase
    error: str | None = None
    messages_before: int | None = None
    messages_after: int | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSummaryAdded:
    """A piece of the summary a compaction keeps (unstable ``compaction_summary_chunk``)."""

    kind: Literal["compaction_summary_chunk"] = "compaction_summary_chunk"
    layer: ClassVar[Layer] = "render"
    compaction_id: str
    content: ContentBlock


# --------------------------------------------------------------------------- state layer


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCompleted:
    """The turn ended; the runtime answers ``session/prompt`` with ``stop_reason``.

    It has no ``session/update``: it *is* the end of the prompt response. Being on the state
    layer, it reaches each client after every render event of its turn.
    """

    kind: Literal["turn_completed"] = "turn_completed"
    layer: ClassVar[Layer] = "state"
    stop_reason: StopReason


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StateSnapshot:
    """The engine's own state (e.g. its model message history) as JSON, for the store.

    The last snapshot of a session comes back as ``SessionContext.history`` when the session
    is loaded or resumed. Never sent to clients.

    Two forms. Whole: ``state`` is the whole state (the first snapshot of a session, a
    history that was rewritten, e.g. compacted, and any engine that does not track what it
    added). Appended (made with :meth:`appended`): ``items`` are what this turn appended to
    the list at ``path`` (keys through JSON objects from the state's root) of the session's
    last state, which had ``base`` items there; every other part of the state is unchanged
    and ``state`` is ``None``. The runtime stores an appended snapshot as it comes (the
    ``state_appended`` form, :mod:`accord.events._state_chain`) without reading the history
    before it: a turn's work does not grow with the conversation. ``base`` is the guard: the
    runtime refuses the snapshot (the turn fails with :class:`ValueError`) when its last
    state does not have ``base`` items at ``path``, so an engine that miscounts, or mutated
    what it yielded before, is caught instead of storing a wrong history. The items are
    serialized once when the snapshot is stored; change nothing in them afterwards.
    """

    kind: Literal["state_snapshot"] = "state_snapshot"
    layer: ClassVar[Layer] = "state"
    state: JsonValue = None
    items: tuple[JsonValue, ...] | None = None
    base: int = 0
    path: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Refuse an appended snapshot with a negative ``base`` or with a ``state`` too.

        Raises:
            ValueError: ``base`` < 0, or ``items`` and ``state`` both given.
        """
        if self.items is not None and self.state is not None:
            raise ValueError("a StateSnapshot carries either state or appended items, not both")
        if self.base < 0:
            raise ValueError(f"a StateSnapshot's base must be >= 0, got {self.base}")

    @classmethod
    def appended(
        cls, items: tuple[JsonValue, ...], *, base: int, path: tuple[str, ...] = ()
    ) -> StateSnapshot:
        """The appended form: ``items`` added after the ``base`` items at ``path``."""
        return cls(items=tuple(items), base=base, path=tuple(path))

    @property
    def is_appended(self) -> bool:
        """Whether this snapshot holds only what the turn appended (``items``)."""
        return self.items is not None


# --------------------------------------------------------------------------- observe layer


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallStarted:
    """A request to the model began; ``call_id`` pairs it with :class:`ModelCallEnded`."""

    kind: Literal["model_call_started"] = "model_call_started"
    layer: ClassVar[Layer] = "observe"
    call_id: str
    model: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallEnded:
    """A request to the model ended, with token counts when the model reported them."""

    kind: Literal["model_call_ended"] = "model_call_ended"
    layer: ClassVar[Layer] = "observe"
    call_id: str
    outcome: Literal["ok", "error", "cancelled"] = "ok"
    input_tokens: int | None = None
    output_tokens: int | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class MessagesCompacted:
    """The engine compacted its history from ``messages_before`` to ``messages_after``."""

    kind: Literal["messages_compacted"] = "messages_compacted"
    layer: ClassVar[Layer] = "observe"
    messages_before: int
    messages_after: int
    tokens_before: int | None = None
    tokens_after: int | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnError:
    """The turn failed with an exception: its type name and message (never sent as text)."""

    kind: Literal["turn_error"] = "turn_error"
    layer: ClassVar[Layer] = "observe"
    error_type: str
    message: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentStarted:
    """A sub-agent began work for the tool call ``parent_tool_call_id`` of its parent.

    The sub-agent's own events carry ``sub_agent_id`` as their ``agent_id``. Standard clients
    see only the delegating tool call; extended clients see everything.
    """

    kind: Literal["sub_agent_started"] = "sub_agent_started"
    layer: ClassVar[Layer] = "observe"
    sub_agent_id: str
    name: str
    parent_tool_call_id: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentStopped:
    """A sub-agent finished."""

    kind: Literal["sub_agent_stopped"] = "sub_agent_stopped"
    layer: ClassVar[Layer] = "observe"
    sub_agent_id: str
    outcome: Literal["completed", "failed", "cancelled"] = "completed"


Event: TypeAlias = (
    UserMessageChunk
    | TextChunk
    | ThinkingChunk
    | ToolCallStarted
    | ToolCallProgress
    | ToolCallEnded
    | PlanChanged
    | PermissionPending
    | BudgetWarning
    | ModeChanged
    | ConfigChanged
    | CommandsChanged
    | TitleChanged
    | UsageReported
    | CompactionChanged
    | CompactionSummaryAdded
    | TurnCompleted
    | StateSnapshot
    | ModelCallStarted
    | ModelCallEnded
    | MessagesCompacted
    | TurnError
    | SubAgentStarted
    | SubAgentStopped
)
"""Every canonical event; dispatch with ``match`` and close with ``assert_never``."""

EventKind: TypeAlias = Literal[
    "user_message_chunk",
    "text_chunk",
    "thinking_chunk",
    "tool_call_started",
    "tool_call_progress",
    "tool_call_ended",
    "plan_updated",
    "permission_pending",
    "budget_warning",
    "mode_changed",
    "config_changed",
    "commands_changed",
    "title_changed",
    "usage_reported",
    "compaction_changed",
    "compaction_summary_chunk",
    "turn_completed",
    "state_snapshot",
    "model_call_started",
    "model_call_ended",
    "messages_compacted",
    "turn_error",
    "sub_agent_started",
    "sub_agent_stopped",
]
"""The ``kind`` of every event class (a test keeps it equal to the union)."""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentEvent:
    """An event an engine yields on behalf of one of its sub-agents.

    The runtime publishes ``event`` with ``agent_id`` as the envelope's agent. Announce the
    sub-agent first with :class:`SubAgentStarted` (from the parent) so observers can nest it.
    """

    agent_id: str
    event: Event

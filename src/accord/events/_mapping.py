"""The mapping from canonical events to ACP ``session/update`` payloads.

:class:`SessionUpdateMapper` dispatches each event with ``match`` to one hook per event kind;
the closing ``assert_never`` makes the mapping exhaustive: a new event class without a hook
fails the type check, and a test walks every member of :data:`Event`. Override a hook in a
subclass to change how one kind is shown (P16); :func:`to_session_update` is the default
mapping.

A hook returns ``None`` when ACP has no update for the event:

* ``TurnCompleted`` ends the ``session/prompt`` response instead;
* ``PermissionPending`` is shown through ``session/request_permission`` itself;
* ``StateSnapshot`` and the observe layer are for the store and observers only;
* ``BudgetWarning`` has no stable update (clients that opt in to ``_accord/event`` see it
  there).

Message ids are not invented here: chunk events carry their ``message_id`` and it becomes the
update's ``messageId`` as is. The mapping is therefore pure, and a replay from the store shows
the same ids as the live stream did.

:meth:`SessionUpdateMapper.update_wire` is the one entry point the runtime sends from: the
``update`` object of an envelope's ``session/update`` in wire form. Chunks (the bulk of a
streamed turn) are defined once, as wire dicts (:func:`chunk_update`), reusing the content's
wire form the envelope already holds; their model hooks parse that same dict, so the two
forms cannot drift. A subclass that overrides a chunk hook is honoured by ``update_wire``.

This module sits on the event classes and :mod:`accord.schema`; the sinks use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, assert_never

from ..engines import (
    BudgetWarning,
    CommandsChanged,
    CompactionChanged,
    CompactionSummaryAdded,
    ConfigChanged,
    Event,
    MessagesCompacted,
    ModeChanged,
    ModelCallEnded,
    ModelCallStarted,
    PermissionPending,
    PlanChanged,
    StateSnapshot,
    SubAgentStarted,
    SubAgentStopped,
    TextChunk,
    ThinkingChunk,
    TitleChanged,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    TurnCompleted,
    TurnError,
    UsageReported,
    UserMessageChunk,
)
from ..schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    AvailableCommandsUpdateSessionUpdate,
    CompactionSummaryChunkSessionUpdate,
    CompactionUpdateSessionUpdate,
    ConfigOptionUpdateSessionUpdate,
    CurrentModeUpdateSessionUpdate,
    PlanSessionUpdate,
    SessionInfoUpdateSessionUpdate,
    SessionUpdate,
    ToolCallSessionUpdate,
    ToolCallUpdateSessionUpdate,
    UsageUpdateSessionUpdate,
    UserMessageChunkSessionUpdate,
)
from ._envelope import Envelope

__all__ = (
    "CANCELLED_META",
    "CHUNK_UPDATE_TAGS",
    "COMPACTED_MARKER",
    "COMPACTION_FAILED_MARKER",
    "SessionUpdateMapper",
    "chunk_update",
    "compaction_marker",
    "to_session_update",
)

CANCELLED_META: Final[Mapping[str, str]] = MappingProxyType({"status": "cancelled"})
"""What a cancelled tool call's update carries under ``_meta.accord`` beside the v1 status
``failed`` (no v1 wire status says cancelled); accord's client shows the call cancelled when it
reads it."""

#: ``sessionUpdate`` tag of each chunk event kind.
CHUNK_UPDATE_TAGS: Final[dict[str, str]] = {
    "user_message_chunk": "user_message_chunk",
    "text_chunk": "agent_message_chunk",
    "thinking_chunk": "agent_thought_chunk",
}

_CHUNK_HOOKS: Final = {
    "user_message_chunk": "user_message_chunk",
    "text_chunk": "text_chunk",
    "thinking_chunk": "thinking_chunk",
}


def chunk_update(kind: str, content: dict[str, Any], message_id: str) -> dict[str, Any]:
    """The wire ``update`` of a chunk event of ``kind`` (content already in wire form)."""
    return {
        "sessionUpdate": CHUNK_UPDATE_TAGS[kind],
        "content": content,
        "messageId": message_id,
    }


class SessionUpdateMapper:
    """Turns events into ``SessionUpdate`` models, one overridable hook per event kind."""

    def __init__(self, *, compaction: bool = False) -> None:
        """Create a mapper (notes which chunk hooks a subclass overrides).

        ``compaction``: the client advertised ``session.compaction`` (it gets the unstable
        compaction updates instead of the ordinary marker).
        """
        self.compaction = compaction
        cls = type(self)
        #: Chunk kinds whose hook is the standard one (mapped straight to wire dicts).
        self._plain_chunks = frozenset(
            kind
            for kind, hook in _CHUNK_HOOKS.items()
            if getattr(cls, hook) is getattr(SessionUpdateMapper, hook)
        )

    def update_wire(self, envelope: Envelope) -> dict[str, Any] | None:
        """The ``update`` of ``envelope``'s ``session/update`` in wire form, or ``None``."""
        event = envelope.event
        if event.kind in self._plain_chunks:
            assert isinstance(event, UserMessageChunk | TextChunk | ThinkingChunk)
            data = envelope.data
            content = data["content"] if data is not None else event.content.to_wire()
            return chunk_update(event.kind, content, event.message_id)
        update = self.map(event)
        return None if update is None else update.to_wire()

    def map(self, event: Event) -> SessionUpdate | None:
        """Return the update for ``event``, or ``None`` when ACP has none."""
        match event:
            case UserMessageChunk():
                return self.user_message_chunk(event)
            case TextChunk():
                return self.text_chunk(event)
            case ThinkingChunk():
                return self.thinking_chunk(event)
            case ToolCallStarted():
                return self.tool_call_started(event)
            case ToolCallProgress():
                return self.tool_call_progress(event)
            case ToolCallEnded():
                return self.tool_call_ended(event)
            case PlanChanged():
                return self.plan_updated(event)
            case PermissionPending():
                return self.permission_pending(event)
            case BudgetWarning():
                return self.budget_warning(event)
            case ModeChanged():
                return self.mode_changed(event)
            case ConfigChanged():
                return self.config_changed(event)
            case CommandsChanged():
                return self.commands_changed(event)
            case TitleChanged():
                return self.title_changed(event)
            case UsageReported():
                return self.usage_reported(event)
            case CompactionChanged():
                return self.compaction_changed(event)
            case CompactionSummaryAdded():
                return self.compaction_summary_chunk(event)
            case TurnCompleted():
                return self.turn_completed(event)
            case StateSnapshot():
                return self.state_snapshot(event)
            case ModelCallStarted():
                return self.model_call_started(event)
            case ModelCallEnded():
                return self.model_call_ended(event)
            case MessagesCompacted():
                return self.messages_compacted(event)
            case TurnError():
                return self.turn_error(event)
            case SubAgentStarted():
                return self.sub_agent_started(event)
            case SubAgentStopped():
                return self.sub_agent_stopped(event)
            case _:
                assert_never(event)

    # ------------------------------------------------------------------ render layer

    def user_message_chunk(self, event: UserMessageChunk) -> SessionUpdate | None:
        """``user_message_chunk`` with the chunk's ``messageId`` (:func:`chunk_update`)."""
        return UserMessageChunkSessionUpdate.model_validate(_chunk_wire(event))

    def text_chunk(self, event: TextChunk) -> SessionUpdate | None:
        """``agent_message_chunk`` with the chunk's ``messageId`` (:func:`chunk_update`)."""
        return AgentMessageChunkSessionUpdate.model_validate(_chunk_wire(event))

    def thinking_chunk(self, event: ThinkingChunk) -> SessionUpdate | None:
        """``agent_thought_chunk`` with the chunk's ``messageId`` (:func:`chunk_update`)."""
        return AgentThoughtChunkSessionUpdate.model_validate(_chunk_wire(event))

    def tool_call_started(self, event: ToolCallStarted) -> SessionUpdate | None:
        """``tool_call``: the full call; empty collections and absent raw input left out.

        The programmatic tool name goes in ``name`` (unstable ACP, ignored as an unknown
        field by a client on the stable schema).
        """
        fields: dict[str, Any] = {
            "tool_call_id": event.tool_call_id,
            "title": event.title,
            "kind": event.tool_kind,
            "status": event.status,
        }
        if event.name is not None:
            fields["name"] = event.name
        if event.content:
            fields["content"] = list(event.content)
        if event.locations:
            fields["locations"] = list(event.locations)
        if event.raw_input is not None:
            fields["raw_input"] = event.raw_input
        return ToolCallSessionUpdate(**fields)

    def tool_call_progress(self, event: ToolCallProgress) -> SessionUpdate | None:
        """``tool_call_update`` carrying only the fields the event changes."""
        fields: dict[str, Any] = {"tool_call_id": event.tool_call_id}
        if event.status is not None:
            fields["status"] = event.status
        if event.title is not None:
            fields["title"] = event.title
        if event.tool_kind is not None:
            fields["kind"] = event.tool_kind
        if event.content is not None:
            fields["content"] = list(event.content)
        if event.locations is not None:
            fields["locations"] = list(event.locations)
        if event.raw_input is not None:
            fields["raw_input"] = event.raw_input
        return ToolCallUpdateSessionUpdate(**fields)

    def tool_call_ended(self, event: ToolCallEnded) -> SessionUpdate | None:
        """``tool_call_update`` with the final status and whatever else the event sets.

        ``cancelled`` is not a v1 wire status: the update then says ``failed`` (the final v1
        status nearest to it, so that a client that did not send ``session/cancel`` itself, an
        observer or one replaying the session on ``session/load``, sees the call end) with
        accord's marker :data:`CANCELLED_META`, which accord's client reads as cancelled.
        """
        fields: dict[str, Any] = {"tool_call_id": event.tool_call_id}
        if event.status == "cancelled":
            fields["status"] = "failed"
            fields["meta"] = {"accord": dict(CANCELLED_META)}
        else:
            fields["status"] = event.status
        if event.title is not None:
            fields["title"] = event.title
        if event.content is not None:
            fields["content"] = list(event.content)
        if event.locations is not None:
            fields["locations"] = list(event.locations)
        if event.raw_output is not None:
            fields["raw_output"] = event.raw_output
        return ToolCallUpdateSessionUpdate(**fields)

    def plan_updated(self, event: PlanChanged) -> SessionUpdate | None:
        """``plan`` with the complete entry list."""
        return PlanSessionUpdate(entries=list(event.entries))

    def permission_pending(self, event: PermissionPending) -> SessionUpdate | None:
        """Nothing: the ``session/request_permission`` request is what the client shows."""
        return None

    def budget_warning(self, event: BudgetWarning) -> SessionUpdate | None:
        """Nothing: no stable update says it (``_accord/event`` clients see the event)."""
        return None

    def mode_changed(self, event: ModeChanged) -> SessionUpdate | None:
        """``current_mode_update``."""
        return CurrentModeUpdateSessionUpdate(current_mode_id=event.mode_id)

    def config_changed(self, event: ConfigChanged) -> SessionUpdate | None:
        """``config_option_update`` with the complete option list."""
        return ConfigOptionUpdateSessionUpdate(config_options=list(event.config_options))

    def commands_changed(self, event: CommandsChanged) -> SessionUpdate | None:
        """``available_commands_update`` with the full command list."""
        return AvailableCommandsUpdateSessionUpdate(available_commands=list(event.commands))

    def title_changed(self, event: TitleChanged) -> SessionUpdate | None:
        """``session_info_update`` setting (or, with ``None``, clearing) the title."""
        return SessionInfoUpdateSessionUpdate(title=event.title)

    def usage_reported(self, event: UsageReported) -> SessionUpdate | None:
        """``usage_update``; ``cost`` only when the engine reported one."""
        if event.cost is None:
            return UsageUpdateSessionUpdate(used=event.used, size=event.size)
        return UsageUpdateSessionUpdate(used=event.used, size=event.size, cost=event.cost)

    def compaction_changed(self, event: CompactionChanged) -> SessionUpdate | None:
        """For a client with ``session.compaction``: ``compaction_update``. For any other:
        the ordinary marker at the end (:func:`compaction_marker`, an agent message), nothing
        while it runs."""
        if self.compaction:
            if event.error is None:
                return CompactionUpdateSessionUpdate(
                    compaction_id=event.compaction_id, status=event.status
                )
            return CompactionUpdateSessionUpdate(
                compaction_id=event.compaction_id, status=event.status, error=event.error
            )
        marker = compaction_marker(event)
        if marker is None:
            return None
        return AgentMessageChunkSessionUpdate.model_validate(
            chunk_update("text_chunk", {"type": "text", "text": marker}, event.message_id)
        )

    def compaction_summary_chunk(self, event: CompactionSummaryAdded) -> SessionUpdate | None:
        """``compaction_summary_chunk`` for a client with ``session.compaction``, else nothing."""
        if not self.compaction:
            return None
        return CompactionSummaryChunkSessionUpdate(
            compaction_id=event.compaction_id, content=event.content
        )

    # ------------------------------------------------------------------ state layer

    def turn_completed(self, event: TurnCompleted) -> SessionUpdate | None:
        """Nothing: the turn's end is the ``session/prompt`` response."""
        return None

    def state_snapshot(self, event: StateSnapshot) -> SessionUpdate | None:
        """Nothing: engine state is for the store only."""
        return None

    # ------------------------------------------------------------------ observe layer

    def model_call_started(self, event: ModelCallStarted) -> SessionUpdate | None:
        """Nothing: telemetry."""
        return None

    def model_call_ended(self, event: ModelCallEnded) -> SessionUpdate | None:
        """Nothing: telemetry (context usage travels as :class:`UsageReported`)."""
        return None

    def messages_compacted(self, event: MessagesCompacted) -> SessionUpdate | None:
        """Nothing: telemetry."""
        return None

    def turn_error(self, event: TurnError) -> SessionUpdate | None:
        """Nothing: the error answers ``session/prompt``."""
        return None

    def sub_agent_started(self, event: SubAgentStarted) -> SessionUpdate | None:
        """Nothing: standard clients see the delegating tool call instead."""
        return None

    def sub_agent_stopped(self, event: SubAgentStopped) -> SessionUpdate | None:
        """Nothing: standard clients see the delegating tool call instead."""
        return None


COMPACTED_MARKER: Final = "[Earlier turns summarised: the model now sees a summary of them.]"
"""The ordinary marker of a completed compaction (an agent message)."""

COMPACTION_FAILED_MARKER: Final = (
    "[Summarising earlier turns failed ({error}); the history is kept as it was.]"
)
"""The ordinary marker of a failed compaction (``error``: what went wrong)."""


def compaction_marker(event: CompactionChanged) -> str | None:
    """The text clients without ``session.compaction`` see for ``event`` (``None``: nothing)."""
    if event.status == "completed":
        return COMPACTED_MARKER
    if event.status in ("failed", "cancelled"):
        return COMPACTION_FAILED_MARKER.format(error=event.error or event.status)
    return None


def _chunk_wire(event: UserMessageChunk | TextChunk | ThinkingChunk) -> dict[str, Any]:
    return chunk_update(event.kind, event.content.to_wire(), event.message_id)


_DEFAULT_MAPPER = SessionUpdateMapper()


def to_session_update(event: Event) -> SessionUpdate | None:
    """Return the ACP update for ``event`` (default mapping), or ``None`` if it has none."""
    return _DEFAULT_MAPPER.map(event)

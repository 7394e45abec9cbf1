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
* ``BudgetWarning`` has no stable update (``SessionUpdateMapper(notices=True)`` sends the
  unstable ``notice`` for it).

Message ids are not invented here: chunk events carry their ``message_id`` and it becomes the
update's ``messageId`` as is. The mapping is therefore pure, and a replay from the store shows
the same ids as the live stream did.

This module sits on the event classes and :mod:`accord.schema`; the sinks use it.
"""

from __future__ import annotations

from typing import Any, assert_never

from ..schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    AvailableCommandsUpdateSessionUpdate,
    ConfigOptionUpdateSessionUpdate,
    CurrentModeUpdateSessionUpdate,
    NoticeSessionUpdate,
    PlanSessionUpdate,
    SessionInfoUpdateSessionUpdate,
    SessionUpdate,
    ToolCallSessionUpdate,
    ToolCallUpdateSessionUpdate,
    UsageUpdateSessionUpdate,
    UserMessageChunkSessionUpdate,
)
from ._events import (
    BudgetWarning,
    CommandsChanged,
    ConfigChanged,
    Event,
    MessagesCompacted,
    ModeChanged,
    ModelCallEnded,
    ModelCallStarted,
    PermissionPending,
    PlanUpdated,
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

__all__ = ("SessionUpdateMapper", "to_session_update")

_BUDGET_TITLES = {
    "tokens": "Token budget",
    "cost": "Cost budget",
    "model_requests": "Model request budget",
    "time": "Time budget",
}


class SessionUpdateMapper:
    """Turns events into ``SessionUpdate`` models, one overridable hook per event kind.

    Args:
        notices: Map :class:`BudgetWarning` to the unstable ``notice`` update (off by
            default: clients that only know the stable schema may reject it).
    """

    def __init__(self, *, notices: bool = False) -> None:
        """Create a mapper; see the class docstring for ``notices``."""
        self.notices = notices

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
            case PlanUpdated():
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
        """``user_message_chunk`` with the chunk's ``messageId``."""
        return UserMessageChunkSessionUpdate(content=event.content, message_id=event.message_id)

    def text_chunk(self, event: TextChunk) -> SessionUpdate | None:
        """``agent_message_chunk`` with the chunk's ``messageId``."""
        return AgentMessageChunkSessionUpdate(content=event.content, message_id=event.message_id)

    def thinking_chunk(self, event: ThinkingChunk) -> SessionUpdate | None:
        """``agent_thought_chunk`` with the chunk's ``messageId``."""
        return AgentThoughtChunkSessionUpdate(content=event.content, message_id=event.message_id)

    def tool_call_started(self, event: ToolCallStarted) -> SessionUpdate | None:
        """``tool_call``: the full call; empty collections and absent raw input left out."""
        fields: dict[str, Any] = {
            "tool_call_id": event.tool_call_id,
            "title": event.title,
            "kind": event.tool_kind,
            "status": event.status,
        }
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
        """``tool_call_update`` with the final status and whatever else the event sets."""
        fields: dict[str, Any] = {"tool_call_id": event.tool_call_id, "status": event.status}
        if event.title is not None:
            fields["title"] = event.title
        if event.content is not None:
            fields["content"] = list(event.content)
        if event.locations is not None:
            fields["locations"] = list(event.locations)
        if event.raw_output is not None:
            fields["raw_output"] = event.raw_output
        return ToolCallUpdateSessionUpdate(**fields)

    def plan_updated(self, event: PlanUpdated) -> SessionUpdate | None:
        """``plan`` with the complete entry list."""
        return PlanSessionUpdate(entries=list(event.entries))

    def permission_pending(self, event: PermissionPending) -> SessionUpdate | None:
        """Nothing: the ``session/request_permission`` request is what the client shows."""
        return None

    def budget_warning(self, event: BudgetWarning) -> SessionUpdate | None:
        """Nothing by default; with ``notices=True`` an unstable ``notice`` (warning)."""
        if not self.notices:
            return None
        percent = round(100 * event.used / event.limit) if event.limit else 100
        return NoticeSessionUpdate(
            severity="warning", title=f"{_BUDGET_TITLES[event.resource]} {percent}% used"
        )

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


_DEFAULT_MAPPER = SessionUpdateMapper()


def to_session_update(event: Event) -> SessionUpdate | None:
    """Return the ACP update for ``event`` (default mapping), or ``None`` if it has none."""
    return _DEFAULT_MAPPER.map(event)

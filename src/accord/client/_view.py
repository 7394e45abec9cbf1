"""``SessionView``: a session's current state, folded from its ``session/update`` stream.

Folding rules (ACP v1):

* message chunks are grouped into :class:`~accord.client.Message` s by role and ``messageId``:
  a chunk whose id was seen before (for that role) joins that message; a chunk without an id
  continues the latest message if it has the same role and nothing (another message, a tool
  call) came after it; anything else starts a new message;
* tool calls are keyed by ``toolCallId``: a ``tool_call`` with a new id creates one, with a
  known id it is an upsert of the fields it carries; a ``tool_call_update`` patches only the
  fields it carries (in v1 ``null`` means "unchanged"; ``content`` and ``locations`` replace
  the whole collection); an update for an unknown id creates the call; an update marked
  ``_meta.accord.status = "cancelled"`` (an accord agent's call cut short by
  ``session/cancel``, live or replayed by ``session/load``) shows the call ``cancelled``;
* compactions (unstable ``compaction_update`` / ``compaction_summary_chunk``, sent only to
  a client that advertised ``session.compaction``) are keyed by ``compactionId``: the first
  update with a new id (either kind) places the compaction in the timeline, a chunk
  appends to its summary, a ``compaction_update`` sets its status and patches ``summary``
  and ``error`` when it carries them (omitted: unchanged; ``null`` or ``[]``: cleared);
* the plan, the command list and the config options are replaced whole; the latest usage,
  mode, title and ``updatedAt`` win.

A prompt sent by this client is shown at once (a user message without an id); when the agent
echoes it back (``user_message_chunk`` s with a ``messageId``, block for block as sent), the
echo is folded into that message, which takes the id: one message, not two. An echo that
differs from what was sent is shown as a message of its own.

Folding one chunk appends one string to a list; text is joined only when read. History
replayed by ``session/load`` folds exactly like live updates.

Above: :class:`~accord.client.ClientSession` (feeds it and streams the events
:meth:`SessionView.apply` returns). Below: :mod:`accord.client._state`, the events, the wire
models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import assert_never

from ..engines import (
    TOOL_CALL_TRANSITIONS,
    ToolCallState,
    merge_tool_call,
    tool_call_changes,
)
from ..schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    AvailableCommand,
    AvailableCommandsUpdateSessionUpdate,
    CompactionSummaryChunkSessionUpdate,
    CompactionUpdateSessionUpdate,
    ConfigOptionUpdateSessionUpdate,
    ContentBlock,
    Cost,
    CurrentModeUpdateSessionUpdate,
    NoticeSessionUpdate,
    PlanEntry,
    PlanRemovedSessionUpdate,
    PlanSessionUpdate,
    PlanUpdateSessionUpdate,
    SessionConfigOption,
    SessionInfoUpdateSessionUpdate,
    SessionMessageChunkSessionUpdate,
    SessionMessageSessionUpdate,
    SessionMode,
    SessionModeState,
    SessionUpdate,
    StopReason,
    SubagentUpdateSessionUpdate,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    ToolCallUpdateSessionUpdate,
    Usage,
    UsageUpdateSessionUpdate,
    UserMessageChunkSessionUpdate,
)
from ._events import (
    CommandsUpdated,
    CompactionSummaryDelta,
    CompactionUpdated,
    ConfigUpdated,
    ModeUpdated,
    OtherUpdate,
    PlanUpdated,
    TitleUpdated,
    ToolCallAdded,
    ToolCallUpdated,
    TurnEvent,
    UsageUpdated,
    new_text_delta,
    new_thought_delta,
    new_user_message_delta,
)
from ._state import CompactionState, Message, MessageRole

__all__ = ("SessionView", "clean_name")


def clean_name(text: str) -> str | None:
    """A name another party gave (a client's ``clientInfo``), fit to show: printable, one
    line, at most 80 characters; ``None`` if nothing is left."""
    shown = " ".join("".join(c if c.isprintable() else " " for c in text).split())[:80]
    return shown or None


class _CompactionSlot:
    """A compaction's place in the timeline (the snapshot is looked up by its id)."""

    __slots__ = ("compaction_id",)

    def __init__(self, compaction_id: str) -> None:
        self.compaction_id = compaction_id


class SessionView:
    """The state of one session: messages, tool calls, compactions, plan, usage, mode,
    config, title.

    A view is built and fed by :class:`~accord.client.ClientSession`; :meth:`apply` also folds
    updates from any other source (a recorded transcript, say).
    """

    __slots__ = (
        "_by_id",
        "_compactions",
        "_echo",
        "_echo_message",
        "_echoes",
        "_messages",
        "_prompt_message",
        "_timeline",
        "_tool_calls",
        "archived",
        "available_commands",
        "available_modes",
        "config_options",
        "current_mode_id",
        "cursor",
        "joined_turn",
        "last_stop_reason",
        "last_turn_usage",
        "observer",
        "plan",
        "session_id",
        "title",
        "turn_client",
        "updated_at",
        "updates_applied",
        "usage_cost",
        "usage_size",
        "usage_used",
    )

    def __init__(self, session_id: str) -> None:
        #: The session this view belongs to.
        self.session_id = session_id
        self._messages: list[Message] = []
        # (role, messageId) -> message, for chunks that name their message.
        self._by_id: dict[tuple[MessageRole, str], Message] = {}
        self._tool_calls: dict[str, ToolCallState] = {}
        self._compactions: dict[str, CompactionState] = {}
        # Messages, tool-call ids and compactions in the order they first appeared.
        self._timeline: list[Message | str | _CompactionSlot] = []
        # The prompt this client sent, and its blocks the agent has not echoed yet.
        self._echo_message: Message | None = None
        self._echo: list[ContentBlock] = []
        # How many chunks of the agent were folded as the echo of a prompt sent here.
        self._echoes = 0
        self._prompt_message: Message | None = None
        #: The agent's plan (replaced whole by each ``plan`` update).
        self.plan: tuple[PlanEntry, ...] = ()
        #: The slash commands the agent offers.
        self.available_commands: tuple[AvailableCommand, ...] = ()
        #: The session's configuration options with their current values.
        self.config_options: tuple[SessionConfigOption, ...] = ()
        #: The current mode (from the session's setup, ``set_mode`` or the agent).
        self.current_mode_id: str | None = None
        #: The modes the agent offers (from the session's setup).
        self.available_modes: tuple[SessionMode, ...] = ()
        #: The session's title and last-activity time, as the agent reports them.
        self.title: str | None = None
        self.updated_at: str | None = None
        #: Set when this client archived the session (``ConnectedAgent.archive_session``):
        #: the agent shut it, and this view is all that is left of it here.
        self.archived = False
        #: The latest ``usage_update``: tokens in context, window size, cost (None until one).
        self.usage_used: int | None = None
        self.usage_size: int | None = None
        self.usage_cost: Cost | None = None
        #: The stop reason and token usage of the last finished turn.
        self.last_stop_reason: StopReason | None = None
        self.last_turn_usage: Usage | None = None
        #: How many updates have been folded in.
        self.updates_applied = 0
        #: The delivery cursor of the last update received (``_meta["acp/cursor"]``, opaque;
        #: ``None`` until the agent sends one): where a reconnect resumes.
        self.cursor: str | None = None
        #: Whether this client joined a session other clients have open and has not
        #: prompted in it yet (it watches; prompting makes it a participant).
        self.observer = False
        #: Whether another client's turn is running, as an accord agent last said: in its
        #: answer when this client joined (``_meta.accord.turn``), then at every start and
        #: end of another client's turn (``_accord/turn``); cleared when this client prompts.
        #: Other agents say nothing (ACP does not tell a client about others' turns).
        self.joined_turn = False
        #: The name of the client running that turn, as it told the agent (``None``: unknown).
        self.turn_client: str | None = None

    def __repr__(self) -> str:
        return (
            f"SessionView(session_id={self.session_id!r}, messages={len(self._messages)}, "
            f"tool_calls={len(self._tool_calls)}, updates_applied={self.updates_applied})"
        )

    # ------------------------------------------------------------------ reading

    @property
    def messages(self) -> Sequence[Message]:
        """Every message, in the order each started."""
        return self._messages

    @property
    def tool_calls(self) -> Mapping[str, ToolCallState]:
        """Every tool call by id, in the order each started (latest snapshots)."""
        return self._tool_calls

    @property
    def compactions(self) -> Mapping[str, CompactionState]:
        """Every compaction the agent reported, by id, in the order each started (latest
        snapshots; empty unless the client advertised ``session.compaction``)."""
        return self._compactions

    @property
    def timeline(self) -> tuple[Message | ToolCallState | CompactionState, ...]:
        """Messages, tool calls and compactions interleaved in the order each first
        appeared."""
        calls, compactions = self._tool_calls, self._compactions
        return tuple(
            calls[item]
            if isinstance(item, str)
            else compactions[item.compaction_id]
            if isinstance(item, _CompactionSlot)
            else item
            for item in self._timeline
        )

    def agent_text(self, since_message: int = 0) -> str:
        """The text of the agent's messages from message index ``since_message`` on."""
        return "".join(m.text for m in self._messages[since_message:] if m.role == "agent")

    # ------------------------------------------------------------------ folding

    def apply(self, update: SessionUpdate) -> TurnEvent:
        """Fold one update into the view and return the event that describes it."""
        self.updates_applied += 1
        if type(update) is AgentMessageChunkSessionUpdate:  # the bulk of a turn, without match
            content, message_id = update.content, update.message_id
            return new_text_delta(self._chunk("agent", content, message_id), content, message_id)
        match update:
            case AgentMessageChunkSessionUpdate(content=content, message_id=message_id):
                text = self._chunk("agent", content, message_id)
                return new_text_delta(text, content, message_id)
            case AgentThoughtChunkSessionUpdate(content=content, message_id=message_id):
                text = self._chunk("thought", content, message_id)
                return new_thought_delta(text, content, message_id)
            case ToolCallUpdateSessionUpdate():
                return self._upsert_tool_call(update)
            case ToolCallSessionUpdate():
                return self._upsert_tool_call(update)
            case UserMessageChunkSessionUpdate(content=content, message_id=message_id):
                text = self._user_chunk(content, message_id)
                return new_user_message_delta(text, content, message_id)
            case PlanSessionUpdate(entries=entries):
                self.plan = tuple(entries)
                return PlanUpdated(entries=self.plan)
            case UsageUpdateSessionUpdate(used=used, size=size, cost=cost):
                self.usage_used, self.usage_size, self.usage_cost = used, size, cost
                return UsageUpdated(used=used, size=size, cost=cost)
            case CurrentModeUpdateSessionUpdate(current_mode_id=mode_id):
                self.current_mode_id = mode_id
                return ModeUpdated(mode_id=mode_id)
            case ConfigOptionUpdateSessionUpdate(config_options=options):
                self.config_options = tuple(options)
                return ConfigUpdated(config_options=self.config_options)
            case AvailableCommandsUpdateSessionUpdate(available_commands=commands):
                self.available_commands = tuple(commands)
                return CommandsUpdated(commands=self.available_commands)
            case SessionInfoUpdateSessionUpdate():
                self._session_info(update)
                return TitleUpdated(title=self.title, updated_at=self.updated_at)
            case CompactionUpdateSessionUpdate():
                return self._compaction_update(update)
            case CompactionSummaryChunkSessionUpdate(compaction_id=compaction_id, content=content):
                known = self._compaction(compaction_id)
                state = CompactionState(
                    compaction_id=compaction_id,
                    status=known.status,
                    summary=(*known.summary, content),
                    error=known.error,
                )
                self._compactions[compaction_id] = state
                text = content.text if isinstance(content, TextContentBlock) else ""
                return CompactionSummaryDelta(text=text, content=content, compaction=state)
            case (
                PlanUpdateSessionUpdate()
                | PlanRemovedSessionUpdate()
                | NoticeSessionUpdate()
                | SubagentUpdateSessionUpdate()
                | SessionMessageSessionUpdate()
                | SessionMessageChunkSessionUpdate()
            ):
                return OtherUpdate(update=update)
            case _:
                assert_never(update)

    def _chunk(self, role: MessageRole, content: ContentBlock, message_id: str | None) -> str:
        timeline = self._timeline
        if message_id is None:
            last = timeline[-1] if timeline else None
            if isinstance(last, Message) and last.role == role:
                return last._append(content)
            message = Message(role)
        else:
            key = (role, message_id)
            found = self._by_id.get(key)
            if found is not None:
                return found._append(content)
            message = Message(role, message_id)
            self._by_id[key] = message
        self._messages.append(message)
        timeline.append(message)
        return message._append(content)

    def _user_chunk(self, content: ContentBlock, message_id: str | None) -> str:
        """A user chunk: the echo of the prompt sent (folded into it) or a message's part."""
        local = self._echo_message
        if (
            local is not None
            and self._echo
            and content == self._echo[0]
            and (message_id is None or local.message_id in (None, message_id))
        ):
            del self._echo[0]
            self._echoes += 1
            if message_id is not None and local.message_id is None:
                local.message_id = message_id
                self._by_id["user", message_id] = local
            if not self._echo:
                self._echo_message = None
            return content.text if isinstance(content, TextContentBlock) else ""
        self._forget_echo()  # the agent shows something other than what was sent
        return self._chunk("user", content, message_id)

    def _upsert_tool_call(self, update: ToolCallSessionUpdate | ToolCallUpdate) -> TurnEvent:
        """A ``tool_call`` or ``tool_call_update``: a new call, or ACP's merge rule over it."""
        changes = tool_call_changes(update)
        known = self._tool_calls.get(update.tool_call_id)
        if known is None:
            state = merge_tool_call(ToolCallState(tool_call_id=update.tool_call_id), changes)
            self._tool_calls[state.tool_call_id] = state
            self._timeline.append(state.tool_call_id)
            return ToolCallAdded(tool_call=state)
        state = merge_tool_call(known, changes)
        self._tool_calls[state.tool_call_id] = state
        return ToolCallUpdated(tool_call=state, changed=frozenset(changes))

    def _compaction(self, compaction_id: str) -> CompactionState:
        """The compaction with that id; a first-seen id starts one (in progress) and
        takes its place in the timeline."""
        known = self._compactions.get(compaction_id)
        if known is None:
            known = CompactionState(compaction_id=compaction_id)
            self._compactions[compaction_id] = known
            self._timeline.append(_CompactionSlot(compaction_id))
        return known

    def _compaction_update(self, update: CompactionUpdateSessionUpdate) -> TurnEvent:
        """A ``compaction_update``: the status, and ``summary`` / ``error`` patched when sent."""
        known = self._compaction(update.compaction_id)
        given = update.model_fields_set
        changed = {"status"}
        summary, error = known.summary, known.error
        if "summary" in given:
            summary = tuple(update.summary or ())
            changed.add("summary")
        if "error" in given:
            error = update.error
            changed.add("error")
        state = CompactionState(
            compaction_id=update.compaction_id, status=update.status, summary=summary, error=error
        )
        self._compactions[state.compaction_id] = state
        return CompactionUpdated(compaction=state, changed=frozenset(changed))

    def _session_info(self, update: SessionInfoUpdateSessionUpdate) -> None:
        given = update.model_fields_set
        if "title" in given:
            self.title = update.title
        if "updated_at" in given:
            self.updated_at = update.updated_at

    # ------------------------------------------------------------------ runtime hooks

    def _tool_call_with(self, update: ToolCallUpdate) -> ToolCallState:
        """What the view knows of a tool call, with ``update`` laid over it (not stored)."""
        known = self._tool_calls.get(update.tool_call_id)
        if known is None:
            known = ToolCallState(tool_call_id=update.tool_call_id)
        return merge_tool_call(known, tool_call_changes(update))

    def _add_prompt(self, blocks: Sequence[ContentBlock]) -> None:
        """Record a prompt this client sent as a user message."""
        message = Message("user")
        for block in blocks:
            message._append(block)
        self._messages.append(message)
        self._timeline.append(message)
        self._echo_message = message
        self._echo = list(blocks)
        self._prompt_message = message

    def _name_prompt(self, message_id: str) -> None:
        """Give the last prompt this client sent the ``messageId`` the agent reported for it."""
        message = self._prompt_message
        if message is not None and message.message_id is None:
            message.message_id = message_id
            self._by_id["user", message_id] = message

    def _forget_echo(self) -> None:
        """Stop expecting the agent to echo the last prompt (the turn is over)."""
        self._echo_message = None
        self._echo = []

    def _set_modes(self, modes: SessionModeState | None) -> None:
        if modes is not None:
            self.current_mode_id = modes.current_mode_id
            self.available_modes = tuple(modes.available_modes)

    def _set_config_options(self, options: Sequence[SessionConfigOption] | None) -> None:
        if options is not None:
            self.config_options = tuple(options)

    def _cancel_unfinished(self) -> None:
        """Mark every unfinished tool call ``cancelled`` (the client's side of a cancel)."""
        calls = self._tool_calls
        for tool_call_id, state in calls.items():
            status = TOOL_CALL_TRANSITIONS.step(state.status, "cancel")
            if status is not None:  # unfinished
                calls[tool_call_id] = merge_tool_call(state, {"status": status})

"""Restoring a stored session: its state, and (for ``session/load``) its replay.

:class:`RestoredState` starts from the session's state record (:mod:`._live_session` documents the
layout) and folds in the events stored after ``stateSeq``: a crash between an event's commit
and the record's update loses nothing a client saw. The events that change state are
``ModeChanged``, ``ConfigChanged``, ``TitleChanged``, ``CommandsChanged`` and
``StateSnapshot`` (stored whole, or as ``state_appended``: only the items it appends to the one
before, rebuilt here, see :mod:`accord.events._state_chain`); remembered permission answers
live only in the record (they are saved before the answer is acted on).

:class:`Replay` is a stored session as ``session/load`` sends it (through a replaying
:class:`~._attachment.Attachment`): the whole chain, or the chain up to a ``seq``, in ``seq``
order, read from the store in batches; each batch is shortened by
:func:`~accord.events.compact_for_replay` (chunks of one message merged, tool-call progress
folded: the client ends in the same state with fewer messages); observe events are skipped
without being decoded. While it reads, it folds state and rebuilds the tool-call tracker, so
the runtime can end calls a crash left unfinished.

Below: :mod:`accord.events`, :mod:`accord.store`, the controls and permissions. Above: the
runtime's session methods.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

import orjson
from pydantic import JsonValue, TypeAdapter

from ..engines import (
    CommandsChanged,
    ConfigChanged,
    EngineCapabilities,
    ModeChanged,
    StateSnapshot,
    TextChunk,
    ThinkingChunk,
    TitleChanged,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    ToolCallTracker,
    UserMessageChunk,
)
from ..errors import InvalidParams, LocalProtocolError
from ..events import (
    STATE_APPENDED,
    Envelope,
    StateChainError,
    apply_appended,
    compact_for_replay,
    envelope_from_stored,
    restamp,
)
from ..schema import AvailableCommand, TextContentBlock
from ..store import SessionRecord, SessionStore, StoredEvent, iter_events
from ._controls import Controls
from ._permissions import PermissionMemory

__all__ = ("Replay", "RestoredState")

_COMMANDS: TypeAdapter[list[AvailableCommand]] = TypeAdapter(list[AvailableCommand])


class RestoredState:
    """A stored session's state: its record, plus the events stored after ``stateSeq``.

    Args:
        record: The stored session.
        capabilities: What the engine offers now (stored choices it no longer offers fall
            back to its defaults).
    """

    __slots__ = (
        "_engine_from",
        "_title_by_client",
        "commands",
        "controls",
        "engine_seq",
        "engine_state",
        "permissions",
        "state_seq",
        "title",
    )

    def __init__(self, record: SessionRecord, capabilities: EngineCapabilities) -> None:
        """Read the record; fold later events in with :meth:`fold`."""
        state: Mapping[str, Any] = record.state
        self.controls = Controls.restore(capabilities, state)
        self.permissions = PermissionMemory.restore(state.get("permissions"))
        self.title = record.title
        #: A client set the record's title: it is newer than any title in the chain (a
        #: title is stored before it is published, and a generated one never replaces it).
        self._title_by_client = record.title_by_client
        self.commands: tuple[AvailableCommand, ...] | None = None
        commands = state.get("commands")
        if isinstance(commands, list):
            try:
                self.commands = tuple(_COMMANDS.validate_python(commands))
            except ValueError:
                self.commands = None
        self.engine_state: JsonValue = state.get("engine")
        seq = state.get("stateSeq")
        self.state_seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else 0
        engine_seq = state.get("engineSeq")
        #: Where the record says the chain holds the engine state (``engineSeq``): it is
        #: rebuilt from the stored events from there (``None``: the record holds it).
        self._engine_from: int | None = None
        if (
            "engine" not in state
            and isinstance(engine_seq, int)
            and not isinstance(engine_seq, bool)
            and engine_seq >= 1
        ):
            self._engine_from = engine_seq
        #: The ``seq`` of the stored whole snapshot :attr:`engine_state` was folded from
        #: (``None``: it is the record's).
        self.engine_seq: int | None = None

    @property
    def first_seq(self) -> int:
        """The ``seq`` the stored events to fold start after (``stateSeq``, or before the
        engine state's whole snapshot when the record names it)."""
        if self._engine_from is None:
            return self.state_seq
        return min(self.state_seq, self._engine_from - 1)

    def check_engine(self) -> None:
        """Refuse a state whose record names a whole snapshot the folded chain did not have.

        Raises:
            StateChainError: no whole snapshot was found at or after ``engineSeq``.
        """
        if self._engine_from is not None and self.engine_seq is None:
            raise StateChainError(
                f"the session's state record names (engineSeq) a whole snapshot at seq "
                f"{self._engine_from}, which the stored chain does not have: the stored chain "
                "is inconsistent"
            )

    def _rebuild_engine(self, stored: StoredEvent) -> None:
        """Fold a stored engine-state event at or before ``stateSeq`` from the record's
        ``engineSeq`` on (the record does not hold the state itself).

        Raises:
            StateChainError: the chain does not start with a whole snapshot at ``engineSeq``,
                or an appended one does not fit.
        """
        start = self._engine_from
        if start is None or stored.seq < start:
            return
        if stored.kind != STATE_APPENDED:
            event = envelope_from_stored(stored).event
            assert isinstance(event, StateSnapshot)
            self.engine_state = event.state
            self.engine_seq = stored.seq
        elif self.engine_seq is None:
            raise StateChainError(
                f"the session's state record names (engineSeq) a whole snapshot at seq "
                f"{start}, but the stored chain has an appended one at seq {stored.seq} "
                "before any: the stored chain is inconsistent"
            )
        else:
            self.engine_state = apply_appended(self.engine_state, orjson.loads(stored.payload))

    def fold_stored(self, stored: StoredEvent) -> Envelope:
        """Apply a stored state event (by :meth:`fold`) and return its envelope; a
        ``state_appended`` one is rebuilt onto the state before it (its envelope carries the
        whole state when it came after ``stateSeq``).

        Raises:
            StateChainError: a ``state_appended`` event does not fit the state before it.
        """
        if stored.seq <= self.state_seq and stored.kind in _ENGINE_KINDS:
            self._rebuild_engine(stored)
        if stored.kind != STATE_APPENDED:
            envelope = envelope_from_stored(stored)
            self.fold(envelope)
            return envelope
        if stored.seq <= self.state_seq:
            return envelope_from_stored(stored)
        # Rebuilt from what is stored, also when the store handed back the envelope itself
        # (the memory store): a chain that does not fit is refused the same way everywhere.
        self.engine_state = apply_appended(self.engine_state, orjson.loads(stored.payload))
        self.state_seq = stored.seq
        return envelope_from_stored(stored, state=self.engine_state)

    def fold(self, envelope: Envelope) -> None:
        """Apply a stored event that came after the record's ``stateSeq``."""
        if envelope.seq <= self.state_seq:
            return
        event = envelope.event
        match event:
            case ModeChanged():
                try:
                    self.controls.check_mode(event.mode_id)
                except InvalidParams:
                    pass  # a mode the engine no longer offers
                else:
                    self.controls.mode_id = event.mode_id
            case ConfigChanged():
                for option in event.config_options:
                    try:
                        value = self.controls.check_value(
                            option.id, option.current_value, boolean=True
                        )
                    except InvalidParams:
                        continue  # an option (or value) the engine no longer offers
                    self.controls.values[option.id] = value
            case TitleChanged() if not self._title_by_client:
                self.title = event.title
            case CommandsChanged():
                self.commands = event.commands
            case StateSnapshot():
                self.engine_state = event.state
                self.engine_seq = envelope.seq
            case _:
                return
        self.state_seq = envelope.seq

    async def catch_up(
        self,
        store: SessionStore,
        session_id: str,
        *,
        tracker: ToolCallTracker | None = None,
        tools_after: int = 0,
    ) -> None:
        """Fold the stored events after ``stateSeq`` (``session/resume``, fork, and a copy
        another process continued); with ``tracker``, also apply to it the tool-call events
        after ``tools_after`` (so the calls they leave unfinished can be ended)."""
        start = self.first_seq if tracker is None else min(self.first_seq, tools_after)
        async for batch in iter_events(store, session_id, after_seq=start):
            for stored in batch:
                if stored.kind in _STATE_KINDS:
                    self.fold_stored(stored)
                elif tracker is not None and stored.kind in _TOOL_KINDS:
                    if stored.seq <= tools_after:
                        continue
                    event = envelope_from_stored(stored).event
                    if isinstance(event, ToolCallStarted | ToolCallProgress | ToolCallEnded):
                        try:
                            tracker.apply(event)
                        except LocalProtocolError:
                            pass  # a stored chain is what it is
        self.check_engine()


_STATE_KINDS = frozenset(
    {
        "mode_changed",
        "config_changed",
        "title_changed",
        "commands_changed",
        "state_snapshot",
        STATE_APPENDED,
    }
)
_ENGINE_KINDS = frozenset({"state_snapshot", STATE_APPENDED})
_TOOL_KINDS = frozenset({"tool_call_started", "tool_call_progress", "tool_call_ended"})


_CHUNK_KINDS = frozenset({"user_message_chunk", "text_chunk", "thinking_chunk"})


def _plain_chunk(stored: StoredEvent) -> tuple[tuple[str, str, str, str | None], str] | None:
    """For a stored chunk whose content is a bare text block (exactly the payload
    ``{"kind", "message_id", "content": {"type": "text", "text"}}``, which decodes to a chunk
    ``compact_for_replay`` concatenates): its run key (kind, message, agent, turn) and its
    text; ``None`` for anything else (decoded and compacted the ordinary way)."""
    data: object = orjson.loads(stored.payload)
    if type(data) is not dict:
        return None
    fields = cast(dict[str, object], data)
    content = fields.get("content")
    if type(content) is not dict:
        return None
    block = cast(dict[str, object], content)
    message_id, text = fields.get("message_id"), block.get("text")
    if (
        len(fields) != 3
        or len(block) != 2
        or block.get("type") != "text"
        or fields.get("kind") != stored.kind
        or type(message_id) is not str
        or type(text) is not str
    ):
        return None
    return (stored.kind, message_id, stored.agent_id, stored.turn_id), text


def _merged(head: Envelope, pieces: list[str]) -> Envelope:
    """``head`` (a plain-text chunk) with the texts of its run as its content."""
    event = head.event
    assert isinstance(event, UserMessageChunk | TextChunk | ThinkingChunk)
    return restamp(head, dataclasses.replace(event, content=TextContentBlock(text="".join(pieces))))


class Replay:
    """A stored session's chain (up to ``until_seq``) as a replay: iterate it (once) for
    ``(envelope, cursor)`` pairs, which a replaying attachment sends
    (:meth:`~._attachment.Attachment.replaying`).

    Each envelope comes with the cursor ``(epoch, seq)`` of the last stored event it stands
    for (a merged chunk stands for the chunks after it, a batch's last envelope for the
    observe events after it): a client resuming from it gets nothing twice. While it is read,
    state is folded into ``restored`` and tool-call events into ``tracker``.

    Args:
        store: Where the session is stored.
        session_id: The session.
        restored: Folds the stored state events (a state appended is rebuilt onto the one
            before it).
        tracker: Gets every tool-call event (the calls a crash left unfinished).
        until_seq: The last ``seq`` replayed (``None``: the whole stored chain).
    """

    __slots__ = ("_restored", "_session_id", "_store", "_tracker", "_until", "read")

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        *,
        restored: RestoredState,
        tracker: ToolCallTracker,
        until_seq: int | None = None,
    ) -> None:
        """Prepare the replay; see the class docstring for the arguments."""
        self._store = store
        self._session_id = session_id
        self._restored = restored
        self._tracker = tracker
        self._until = until_seq
        #: Stored events read so far.
        self.read = 0

    def __aiter__(self) -> AsyncIterator[tuple[Envelope, tuple[int, int]]]:
        """The replayed envelopes with their cursors, batch by batch."""
        return self._pairs()

    async def _pairs(self) -> AsyncIterator[tuple[Envelope, tuple[int, int]]]:
        until_seq, restored, tracker = self._until, self._restored, self._tracker
        async for batch in iter_events(self._store, self._session_id):
            if until_seq is not None:
                batch = [stored for stored in batch if stored.seq <= until_seq]
                if not batch:
                    break
            envelopes: list[Envelope] = []
            epochs: dict[int, int] = {}
            # The run of plain-text chunks being merged: the index in `envelopes` of its
            # first chunk, what the next chunk must match (kind, message, agent, turn), and
            # the texts. A chunk that continues the run is never decoded into an event (the
            # costliest part of a replay): compact_for_replay would fold it into the run's
            # first chunk anyway.
            run_head = -1
            run_key: tuple[str, str, str, str | None] | None = None
            pieces: list[str] = []
            for stored in batch:
                self.read += 1
                epochs[stored.seq] = stored.epoch
                if stored.layer == "observe":
                    continue
                chunk = _plain_chunk(stored) if stored.kind in _CHUNK_KINDS else None
                if chunk is not None and run_key is not None and chunk[0] == run_key:
                    pieces.append(chunk[1])
                    continue
                if len(pieces) > 1:
                    envelopes[run_head] = _merged(envelopes[run_head], pieces)
                run_key = None
                pieces = []
                if stored.kind in _STATE_KINDS:
                    envelope = restored.fold_stored(stored)
                else:
                    envelope = envelope_from_stored(stored)
                    if chunk is not None:
                        run_head, run_key, pieces = len(envelopes), chunk[0], [chunk[1]]
                    event = envelope.event
                    if isinstance(event, ToolCallStarted | ToolCallProgress | ToolCallEnded):
                        try:
                            tracker.apply(event)
                        except LocalProtocolError:
                            pass  # a stored chain is what it is; replay it anyway
                envelopes.append(envelope)
            if len(pieces) > 1:
                envelopes[run_head] = _merged(envelopes[run_head], pieces)
            compacted = compact_for_replay(envelopes)
            seqs = [stored.seq for stored in batch]
            last = seqs[-1]
            for index, envelope in enumerate(compacted):
                if index + 1 < len(compacted):
                    covered = seqs[bisect.bisect_left(seqs, compacted[index + 1].seq) - 1]
                else:
                    covered = last
                yield envelope, (epochs[covered], covered)
            if until_seq is not None and last >= until_seq:
                break
        restored.check_engine()

"""Delivery: every event is stored first and reaches the client only once it is durable.

A session's :class:`~accord.events.EventBus` has exactly one sink, the session's
:class:`DurableSink`. For each envelope it:

1. serializes it into a :class:`~accord.store.StoredEvent`;
2. appends it durably, through the running turn's
   :class:`~accord.store.GroupCommitWriter` (many events per transaction while a turn
   streams) or, outside a turn, in a transaction of its own;
3. only after the commit, forwards it to the client (a :class:`ClientChannel`).

So a client never sees an event a crash could lose, and every event a client saw is replayed
by ``session/load``. Order is kept end to end: the bus delivers render and state envelopes
one at a time in ``seq`` order, the writer commits in append order, and committed batches are
forwarded in order.

Observe envelopes must never block their publisher: :meth:`DurableSink.offer` only queues them
(bounded; beyond :data:`MAX_HELD_OBSERVE` they are dropped and counted), and they are stored
and forwarded just before the next render or state envelope, which keeps ``seq`` order in the
store. A turn always ends with one (``TurnCompleted``) or a flush.

:class:`ClientChannel` is the connection side: the standard or extended sink of
:mod:`accord.events` (chosen from the client's ``initialize``), a mapper that hides
``boolean`` config options from clients that did not advertise them, and a "gone" flag: once
the connection is closed, sends are skipped silently (the store still gets everything).
Message, thought and user chunks of the root agent, the bulk of a streamed turn, take a fast
path to a standard client: their ``session/update`` params are written directly (the same
JSON the mapper's models dump to, which a test checks) instead of building, validating and
dumping two models per chunk.

Below: :mod:`accord.events`, :mod:`accord.store`, :mod:`accord.roles`. Above: the runtime.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import anyio

from ..errors import TransportError
from ..events import (
    ROOT_AGENT_ID,
    ConfigChanged,
    Envelope,
    ExtendedSink,
    SessionUpdateMapper,
    StandardSink,
    TextChunk,
    ThinkingChunk,
    UserMessageChunk,
    event_to_json,
)
from ..schema import BooleanSessionConfigOption, SessionNotification, SessionUpdate
from ..store import GroupCommitWriter, SessionStore, StoredEvent, WriterClosed

if TYPE_CHECKING:
    from ..roles import AgentSideConnection, ChunkKind

__all__ = ("MAX_HELD_OBSERVE", "ClientChannel", "DurableSink", "stored_event")

logger = logging.getLogger("accord.agent")

#: Observe envelopes waiting for the next ordered envelope before they are dropped. Telemetry
#: comes a few per model call; a thousand covers a long tool loop without a render event.
MAX_HELD_OBSERVE: Final = 1000

_GONE: Final = (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError)

#: ``sessionUpdate`` tags of the chunk events (what the standard mapping gives them).
_CHUNK_TAGS: Final[dict[str, ChunkKind]] = {
    "user_message_chunk": "user_message_chunk",
    "text_chunk": "agent_message_chunk",
    "thinking_chunk": "agent_thought_chunk",
}

Forward = Callable[[Envelope], Awaitable[None]]
"""Hands one committed envelope on (to the client)."""


def stored_event(envelope: Envelope) -> StoredEvent:
    """Return the store's record of ``envelope`` (payload = the event's JSON)."""
    event = envelope.event
    return StoredEvent(
        session_id=envelope.session_id,
        seq=envelope.session_seq,
        epoch=envelope.session_epoch,
        turn_id=envelope.turn_id,
        agent_id=envelope.agent_id,
        kind=event.kind,
        layer=event.layer,
        payload=event_to_json(event),
        created_at=datetime.now(UTC),
    )


class _ClientMapper(SessionUpdateMapper):
    """The standard mapping, minus ``boolean`` options for clients that cannot take them."""

    def __init__(self, *, boolean_options: bool) -> None:
        super().__init__()
        self.boolean_options = boolean_options

    def config_changed(self, event: ConfigChanged) -> SessionUpdate | None:
        """``config_option_update``, without ``boolean`` options unless advertised."""
        if self.boolean_options:
            return super().config_changed(event)
        kept = tuple(
            o for o in event.config_options if not isinstance(o, BooleanSessionConfigOption)
        )
        return super().config_changed(ConfigChanged(config_options=kept))


class ClientChannel:
    """Sends one client what it should see of the runtime's sessions.

    Args:
        connection: The connection to the client.
        extended: The client opted in to ``_accord/event`` notifications.
        boolean_options: The client advertised ``session.configOptions.boolean``.
    """

    def __init__(
        self, connection: AgentSideConnection, *, extended: bool, boolean_options: bool
    ) -> None:
        """Create the channel; see the class docstring for the arguments."""
        self._connection = connection
        self.extended = extended
        self.boolean_options = boolean_options
        self.gone = False
        mapper = _ClientMapper(boolean_options=boolean_options)
        self.sink: StandardSink = (
            ExtendedSink(self._send_update, self._send_ext, mapper=mapper)
            if extended
            else StandardSink(self._send_update, mapper=mapper)
        )

    async def _send_update(self, notification: SessionNotification) -> None:
        await self._connection.session_update(notification)

    async def _send_ext(self, method: str, params: dict[str, Any]) -> None:
        await self._connection.ext_notification(method, params)

    def _mark_gone(self, error: BaseException) -> None:
        if not self.gone:
            logger.info("the client is gone; events are stored but no longer sent: %s", error)
        self.gone = True

    async def deliver(self, envelope: Envelope) -> None:
        """Send ``envelope`` as the client's sink would (nothing once the client is gone)."""
        if self.gone:
            return
        try:
            event = envelope.event
            tag = _CHUNK_TAGS.get(event.kind)
            if tag is not None and not self.extended and envelope.agent_id == ROOT_AGENT_ID:
                # The bulk of a streamed turn: the same update the mapper builds, written
                # straight to the wire (no model built, validated and dumped per chunk).
                assert isinstance(event, UserMessageChunk | TextChunk | ThinkingChunk)
                await self._connection.send_chunk(
                    envelope.session_id, event.content, message_id=event.message_id, kind=tag
                )
                return
            await self.sink.deliver(envelope)
        except _GONE as exc:
            self._mark_gone(exc)

    async def send(self, session_id: str, update: SessionUpdate) -> None:
        """Send one ``session/update`` that is not an event (activation announcements)."""
        if self.gone:
            return
        try:
            await self._send_update(SessionNotification(session_id=session_id, update=update))
        except _GONE as exc:
            self._mark_gone(exc)


class DurableSink:
    """The one sink of a session's bus: stores each envelope, then forwards it.

    Args:
        store: Where events are stored.
        forward: Called with each envelope once it is committed, in order.
    """

    __slots__ = (
        "_busy",
        "_forward",
        "_held",
        "_idle",
        "_in_writer",
        "_store",
        "_writer",
        "dropped",
    )

    def __init__(self, store: SessionStore, forward: Forward) -> None:
        """Create the sink; see the class docstring for the arguments."""
        self._store = store
        self._forward = forward
        self._writer: GroupCommitWriter | None = None
        self._in_writer: deque[Envelope] = deque()
        self._held: list[Envelope] = []
        # The bus calls deliver() one envelope at a time; detach_writer() must not switch
        # modes in the middle of one, so it waits for _busy to clear (a flag and an event:
        # a lock would cost its acquire on every event of a streaming turn).
        self._busy = False
        self._idle: anyio.Event | None = None
        #: Observe envelopes dropped because too many were waiting.
        self.dropped = 0

    # ------------------------------------------------------------------ Sink protocol

    async def deliver(self, envelope: Envelope) -> None:
        """Store a render or state envelope (with the observe ones queued before it)."""
        batch = [*self._held, envelope] if self._held else [envelope]
        self._held = []
        self._busy = True
        try:
            await self._store_batch(batch)
        finally:
            self._busy = False
            if self._idle is not None:
                self._idle.set()
                self._idle = None

    def offer(self, envelope: Envelope) -> None:
        """Queue an observe envelope for the next ordered store; never blocks."""
        if len(self._held) >= MAX_HELD_OBSERVE:
            self.dropped += 1
            return
        self._held.append(envelope)

    # ------------------------------------------------------------------ writer

    @property
    def writer(self) -> GroupCommitWriter | None:
        """The running turn's writer, while one is attached."""
        return self._writer

    def attach_writer(self, writer: GroupCommitWriter) -> None:
        """Route later envelopes through ``writer`` (a turn began)."""
        self._writer = writer

    async def detach_writer(self) -> None:
        """Store queued observe envelopes, wait until the writer delivered everything, and
        go back to one transaction per envelope. A failed writer is left as it is (its
        error surfaces from its own ``async with``)."""
        writer = self._writer
        try:
            while writer is not None:
                if self._busy:
                    self._idle = self._idle or anyio.Event()
                    await self._idle.wait()
                    continue
                if self._held:
                    held, self._held = self._held, []
                    self._busy = True
                    try:
                        await self._store_batch(held)
                    finally:
                        self._busy = False
                    continue
                if writer.statistics().pending:
                    await writer.flush()
                    continue
                break  # idle and flushed: no await from here until the switch
        except WriterClosed:
            pass
        finally:
            self._writer = None
            self._in_writer.clear()

    async def flush(self) -> None:
        """Wait until every envelope stored so far has been committed and forwarded."""
        if self._writer is not None:
            await self._writer.flush()

    async def on_committed(self, batch: Sequence[StoredEvent]) -> None:
        """The writer's callback: forward the envelopes of a committed batch, in order."""
        for _ in batch:
            await self._forward(self._in_writer.popleft())

    async def _store_batch(self, batch: list[Envelope]) -> None:
        writer = self._writer
        if writer is None:
            await self._store.append_events([stored_event(e) for e in batch])
            for envelope in batch:
                await self._forward(envelope)
            return
        for envelope in batch:
            self._in_writer.append(envelope)
            try:
                await writer.append(stored_event(envelope))
            except BaseException:
                self._in_writer.pop()
                raise

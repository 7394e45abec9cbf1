"""The delivery pipeline: stamp, store durably, fan out to every attachment of the session.

One straight line per session (:class:`DeliveryPipeline`)::

    publish(event) -> stamp (seq, epoch, turn, agent; payload serialized once)
                   -> durable append (the turn's GroupCommitWriter, or one transaction)
                   -> on commit: every tap, then every Attachment's bounded queue
                   -> each Attachment's sender task -> its client

* **Stamp.** :meth:`DeliveryPipeline.publish` gives the event the next ``seq`` and the
  current epoch (an event of an older epoch, a late event of a turn that began before a
  load, is dropped and counted) and builds its :class:`~accord.events.Envelope`, which is
  also the store's record: nothing is copied or encoded again further down.
* **Durable append.** Render and state events are appended in ``seq`` order, one at a time
  (an ordering lock): through the running turn's writer (group commit, many events per
  transaction while a turn streams) or, outside a turn, in a transaction of their own.
  Observe events never block their publisher: they are held (bounded; beyond
  :data:`MAX_HELD_OBSERVE` dropped and counted) and stored just before the next ordered
  event, which keeps ``seq`` order in the store; a turn always ends with one or a flush.
* **Fan out, after the commit only.** The writer hands back the committed envelopes
  themselves; the pipeline calls every *tap* (synchronous observers such as the activity
  log) and offers each envelope to every :class:`Attachment`. Offering never waits.

An :class:`Attachment` is one client's view of the session: a bounded queue, a ``cursor``
(the last ``seq`` it has sent, or passed over as not for its client) and a sender task
(:meth:`Attachment.run`). A slow client does not hold the turn back: when its queue is full
the attachment drops the queue and is *behind*; its sender then reads the committed events
after its cursor from the store, in batches, and rejoins the live queue once it has caught
up. :meth:`Attachment.wait_sent` is how the runtime keeps "a response after its updates":
``session/prompt``, ``session/load``, a mode change and a permission request wait until
their own client's attachment has sent everything committed before them. Several
attachments per session are allowed (each with its own queue and cursor); a cursor also says
where a client that comes back would resume.

:class:`ClientChannel` is the connection side of one client: it renders an envelope with the
one mapping (:meth:`~accord.events.SessionUpdateMapper.update_wire`, which also hides
``boolean`` config options from clients that did not advertise them and gives clients without
``session.compaction`` the ordinary marker of a compaction instead of its updates), adds
``_accord/event`` for clients that opted in (all three layers, the observe layer included),
stamps each notification's ``_meta["acp/cursor"]`` (:mod:`._cursor`: where a client that comes back
resumes), and has a "gone"
flag: once the connection is closed, sends are skipped silently (the store still gets
everything).

Below: :mod:`accord.events`, :mod:`accord.store`, :mod:`accord.roles`. Above: the runtime
(:mod:`._live_session` holds one pipeline per live session).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, final

import anyio
from pydantic import JsonValue

from ..engines import ROOT_AGENT_ID, ConfigChanged, Event, StateSnapshot
from ..errors import CURSOR_META_KEY, TransportError
from ..events import (
    EXT_EVENT_METHOD,
    STATE_APPENDED,
    Envelope,
    SessionUpdateMapper,
    apply_appended,
    envelope_from_stored,
    ext_event_params,
    stamp,
)
from ..schema import BooleanSessionConfigOption, SessionUpdate
from ..store import GroupCommitWriter, SessionStore, WriterClosed, iter_events
from ._cursor import Cursor, encode_cursor
from ._kept_state import KeptState

__all__ = (
    "DEFAULT_ATTACHMENT_QUEUE",
    "MAX_HELD_OBSERVE",
    "Attachment",
    "AttachmentStatistics",
    "ClientChannel",
    "DeliveryPipeline",
    "Notify",
    "PipelineStatistics",
    "Recipient",
    "Tap",
)

logger = logging.getLogger("accord.agent")

#: Observe envelopes waiting for the next ordered envelope before they are dropped. Telemetry
#: comes a few per model call; a thousand covers a long tool loop without a render event.
MAX_HELD_OBSERVE: Final = 1000

#: Committed envelopes an attachment may hold unsent before it falls behind (and catches up
#: from the store instead). Twice the writer's default bound on uncommitted events.
DEFAULT_ATTACHMENT_QUEUE: Final = 8192

_GONE: Final = (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError)

Tap = Callable[[Envelope], None]
"""A synchronous observer of every committed envelope (it must not block or raise)."""


# ---------------------------------------------------------------------- the client side


class Recipient(Protocol):
    """Where an :class:`Attachment` sends: one client (:class:`ClientChannel` over ACP)."""

    @property
    def extended(self) -> bool:
        """Whether the client takes the whole chain (``_accord/event``), its prompts too."""
        ...

    @property
    def gone(self) -> bool:
        """Whether the client is gone (the attachment then stops)."""
        ...

    def wants(self, envelope: Envelope) -> bool:
        """Whether the client gets anything for ``envelope`` (else it is passed over)."""
        ...

    async def deliver(self, envelope: Envelope, cursor: Cursor | None = None) -> None:
        """Send ``envelope`` to the client (``cursor``: the position it brings the client to,
        ``(epoch, seq)``, when not its own); a gone client is not an error."""
        ...


class _ClientMapper(SessionUpdateMapper):
    """The standard mapping, minus ``boolean`` options for clients that cannot take them."""

    def __init__(self, *, boolean_options: bool, compaction: bool) -> None:
        super().__init__(compaction=compaction)
        self.boolean_options = boolean_options

    def config_changed(self, event: ConfigChanged) -> SessionUpdate | None:
        """``config_option_update``, without ``boolean`` options unless advertised."""
        if self.boolean_options:
            return super().config_changed(event)
        kept = tuple(
            o for o in event.config_options if not isinstance(o, BooleanSessionConfigOption)
        )
        return super().config_changed(ConfigChanged(config_options=kept))


Notify = Callable[[str, Any], Awaitable[None]]
"""Sends one JSON-RPC notification ``(method, params)`` (``accord.jsonrpc.Connection.notify``)."""


class ClientChannel:
    """Sends one client what it should see of the runtime's sessions (a :class:`Recipient`).

    Args:
        notify: Sends a notification to the client (its connection's ``notify``).
        extended: The client opted in to ``_accord/event`` notifications.
        boolean_options: The client advertised ``session.configOptions.boolean``.
        compaction: The client advertised ``session.compaction`` (unstable compaction
            updates; else the ordinary marker).
    """

    def __init__(
        self, notify: Notify, *, extended: bool, boolean_options: bool, compaction: bool = False
    ) -> None:
        """Create the channel; see the class docstring for the arguments."""
        self._notify = notify
        self.extended = extended
        self.boolean_options = boolean_options
        self.gone = False
        self.mapper: SessionUpdateMapper = _ClientMapper(
            boolean_options=boolean_options, compaction=compaction
        )

    def wants(self, envelope: Envelope) -> bool:
        """Whether this client gets anything for ``envelope`` (observe: only if extended)."""
        return self.extended or envelope.layer != "observe"

    def _mark_gone(self, error: BaseException) -> None:
        if not self.gone:
            logger.info("the client is gone; events are stored but no longer sent: %s", error)
        self.gone = True

    async def deliver(self, envelope: Envelope, cursor: Cursor | None = None) -> None:
        """Send ``envelope`` as this client sees it (nothing once the client is gone).

        Every notification carries ``_meta["acp/cursor"]``: the envelope's own position, or
        ``cursor`` (``(epoch, seq)``) for a replayed envelope that stands for several.
        """
        if self.gone:
            return
        epoch, seq = (envelope.epoch, envelope.seq) if cursor is None else cursor
        meta = {CURSOR_META_KEY: encode_cursor(envelope.session_id, epoch, seq)}
        try:
            if self.extended:
                await self._deliver_extended(envelope, meta)
            elif envelope.agent_id == ROOT_AGENT_ID and envelope.layer != "observe":
                update = self.mapper.update_wire(envelope)
                if update is not None:
                    await self._notify(
                        "session/update",
                        {"sessionId": envelope.session_id, "update": update, "_meta": meta},
                    )
        except _GONE as exc:
            self._mark_gone(exc)

    async def _deliver_extended(self, envelope: Envelope, meta: dict[str, Any]) -> None:
        update = None if envelope.layer == "observe" else self.mapper.update_wire(envelope)
        root = envelope.agent_id == ROOT_AGENT_ID
        params = ext_event_params(envelope, None if root else update)
        params["_meta"] = meta
        await self._notify(EXT_EVENT_METHOD, params)
        if root and update is not None:
            await self._notify(
                "session/update",
                {"sessionId": envelope.session_id, "update": update, "_meta": meta},
            )

    async def send(self, session_id: str, update: SessionUpdate) -> None:
        """Send one ``session/update`` that is not an event (activation announcements)."""
        if self.gone:
            return
        try:
            await self._notify(
                "session/update", {"sessionId": session_id, "update": update.to_wire()}
            )
        except _GONE as exc:
            self._mark_gone(exc)


# ---------------------------------------------------------------------- attachments


@final
@dataclass(frozen=True, slots=True)
class AttachmentStatistics:
    """Counts of one attachment.

    Attributes:
        cursor: The last ``seq`` sent (or passed over as not for this client).
        queued: Committed envelopes waiting in the queue.
        sent: Envelopes sent.
        fell_behind: Times the queue overflowed (the sender then read from the store).
        caught_up: Envelopes sent from the store while catching up.
    """

    cursor: int
    queued: int
    sent: int
    fell_behind: int
    caught_up: int


_PROMPTED_TURNS_KEPT: Final = 4
"""How many of its own recent turns an attachment remembers (to leave their prompt out)."""


class Attachment:
    """One client attached to one session's pipeline (see the module docstring).

    Run :meth:`run` in a task for as long as the attachment lives; :meth:`close` ends it.

    Args:
        pipeline: The session's pipeline (the store to catch up from, the committed seq).
        channel: Where to send (the client's :class:`ClientChannel`).
        cursor: The last ``seq`` the client already has (0: everything after is new).
        max_queue: Envelopes queued before the attachment falls behind.
    """

    __slots__ = (
        "_caught_up",
        "_fell_behind",
        "_max_queue",
        "_pipeline",
        "_progress",
        "_prompted_turns",
        "_queue",
        "_sent",
        "_wake",
        "behind",
        "channel",
        "closed",
        "cursor",
    )

    def __init__(
        self,
        pipeline: DeliveryPipeline,
        channel: Recipient,
        *,
        cursor: int,
        max_queue: int = DEFAULT_ATTACHMENT_QUEUE,
        catch_up: bool = False,
    ) -> None:
        """Create the attachment; see the class docstring for the arguments (``catch_up``:
        start behind, sending what is stored after ``cursor`` first)."""
        if max_queue < 1:
            raise ValueError(f"max_queue must be at least 1, got {max_queue}")
        self._pipeline = pipeline
        self.channel = channel
        self.cursor = cursor
        self._max_queue = max_queue
        self._queue: deque[Envelope] = deque()
        self.behind = catch_up
        self.closed = False
        self._wake: anyio.Event | None = None
        self._progress: anyio.Event | None = None
        self._sent = 0
        self._fell_behind = 0
        self._caught_up = 0
        # The last turns this client prompted (a few: its queue may still hold the previous
        # turn's prompt when the next begins). Their prompt is not sent back to it live.
        self._prompted_turns: deque[str] = deque(maxlen=_PROMPTED_TURNS_KEPT)

    def prompted(self, turn_id: str) -> None:
        """Record that this attachment's client prompted turn ``turn_id``.

        The turn's prompt (its ``user_message_chunk`` events) is then not sent back to this
        client live: an editor already shows what it sent (Zed would show it twice). The
        other attached clients get it, with its ``messageId``; ``session/load`` replays it
        and a resume from a cursor (a new attachment) sends it if it came after the cursor.
        A client that opted in to ``_accord/event`` gets every envelope of the chain, its own
        prompt included (it matches the echo itself, as accord's client does).
        """
        self._prompted_turns.append(turn_id)

    def _wanted(self, envelope: Envelope) -> bool:
        channel = self.channel
        if (
            envelope.kind == "user_message_chunk"
            and not channel.extended  # the extension's chain has no gaps
            and envelope.turn_id is not None
            and envelope.turn_id in self._prompted_turns
        ):
            return False
        return channel.wants(envelope)

    def statistics(self) -> AttachmentStatistics:
        """Return the attachment's counts."""
        return AttachmentStatistics(
            cursor=self.cursor,
            queued=len(self._queue),
            sent=self._sent,
            fell_behind=self._fell_behind,
            caught_up=self._caught_up,
        )

    def offer(self, envelope: Envelope) -> None:
        """Queue a committed envelope; never waits (a full queue makes the attachment
        fall behind, and its sender reads from the store instead)."""
        if self.closed or self.behind or envelope.seq <= self.cursor:
            pass
        elif len(self._queue) >= self._max_queue:
            self.behind = True
            self._fell_behind += 1
            self._queue.clear()
        else:
            self._queue.append(envelope)
        self._poke()

    def resync(self) -> None:
        """Send what is committed after the cursor from the store, then rejoin the queue (the
        pipeline's numbering jumped past events this attachment was not offered)."""
        if not self.closed:
            self.behind = True
            self._queue.clear()
            self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    def _advance(self, seq: int) -> None:
        self.cursor = seq
        if self._progress is not None:
            self._progress.set()
            self._progress = None

    def close(self) -> None:
        """Stop sending; :meth:`run` returns, :meth:`wait_sent` callers go on."""
        self.closed = True
        self._queue.clear()
        self._poke()
        if self._progress is not None:
            self._progress.set()
            self._progress = None

    async def wait_sent(self, seq: int) -> None:
        """Wait until everything up to ``seq`` was sent (or the attachment or client is gone)."""
        while self.cursor < seq and not self.closed and not self.channel.gone:
            self._progress = self._progress or anyio.Event()
            await self._progress.wait()

    async def run(self) -> None:
        """The sender: send queued envelopes in order, catch up from the store when behind.

        Cancelled, it can run again later and loses nothing (it then reads from the store)."""
        channel = self.channel
        queue = self._queue
        try:
            while not self.closed:
                if channel.gone:
                    self.close()
                    break
                if queue:
                    await self._send_next()
                    continue
                if self.behind:
                    await self._catch_up()
                    continue
                self._wake = anyio.Event()
                await self._wake.wait()
        except anyio.get_cancelled_exc_class():
            # Run again (the session's task group opened anew): it goes on from the store
            # after its cursor, the envelope cut off mid-send included.
            self.resync()
            raise
        except Exception:
            logger.exception("session %s: an attachment's sender failed", self._pipeline.session_id)
            self.close()

    async def _send_next(self) -> None:
        """Send the head of the queue (a method of its own: no frame of the idle sender keeps
        the last envelope alive)."""
        envelope = self._queue.popleft()
        if envelope.seq > self.cursor:
            if self._wanted(envelope):
                await self.channel.deliver(envelope)
                self._sent += 1
            self._advance(envelope.seq)

    async def _catch_up(self) -> None:
        """Send the committed envelopes after the cursor from the store, then rejoin."""
        pipeline, channel = self._pipeline, self.channel
        async for batch in iter_events(pipeline.store, pipeline.session_id, after_seq=self.cursor):
            for stored in batch:
                if self.closed:
                    return
                if stored.seq <= self.cursor:
                    continue
                envelope = envelope_from_stored(stored)
                if self._wanted(envelope):
                    await channel.deliver(envelope)
                    self._sent += 1
                    self._caught_up += 1
                self._advance(stored.seq)
        if self.cursor >= pipeline.committed_seq:
            # No await between this check and the switch: every later commit is queued.
            self.behind = False
            self._queue.clear()


# ---------------------------------------------------------------------- the pipeline


@final
@dataclass(frozen=True, slots=True)
class PipelineStatistics:
    """Counts of one session's pipeline.

    Attributes:
        epoch: The current epoch.
        next_seq: The ``seq`` the next envelope gets.
        committed_seq: The last ``seq`` committed and fanned out.
        published: Envelopes stamped.
        stale_dropped: Events refused because they belonged to an older epoch.
        observe_dropped: Observe envelopes dropped because too many were held, or because
            another process's events took their seqs before they were stored.
        attachments: Attached clients.
    """

    epoch: int
    next_seq: int
    committed_seq: int
    published: int
    stale_dropped: int
    observe_dropped: int
    attachments: int


class DeliveryPipeline:
    """Stamps, stores and fans out the events of one session (see the module docstring).

    Args:
        session_id: The session.
        store: Where its events are stored.
        epoch: The epoch to start in.
        next_seq: The first ``seq`` to assign (the stored last seq plus one).
    """

    __slots__ = (
        "_attachments",
        "_busy",
        "_epoch",
        "_held",
        "_idle",
        "_next_seq",
        "_ordered",
        "_published",
        "_stale",
        "_taps",
        "_writer",
        "committed_seq",
        "kept_state",
        "observe_dropped",
        "session_id",
        "store",
    )

    def __init__(self, session_id: str, store: SessionStore, *, epoch: int, next_seq: int) -> None:
        """Create the pipeline; see the class docstring for the arguments."""
        if next_seq < 1:
            raise ValueError("seq starts at 1")
        self.session_id = session_id
        self.store = store
        self._epoch = epoch
        self._next_seq = next_seq
        #: The last ``seq`` committed and fanned out.
        self.committed_seq = next_seq - 1
        self._published = 0
        self._stale = 0
        self._writer: GroupCommitWriter[Envelope] | None = None
        self._held: list[Envelope] = []
        self._attachments: tuple[Attachment, ...] = ()
        self._taps: tuple[Tap, ...] = ()
        self._ordered: anyio.Lock | None = None
        #: The session's engine state (its one copy, :mod:`._kept_state`): the last
        #: snapshot stamped, or what the session was loaded with; ``chained`` while the
        #: stored chain ends with it (cleared on a change of epoch or of numbering).
        self.kept_state = KeptState()
        # detach_writer() must not switch modes in the middle of a store, so it waits for
        # _busy to clear (a flag and an event: a lock would cost its acquire on every event
        # of a streaming turn, on top of the ordering lock).
        self._busy = False
        self._idle: anyio.Event | None = None
        #: Observe envelopes dropped because too many were waiting.
        self.observe_dropped = 0

    # ------------------------------------------------------------------ epochs and seqs

    @property
    def epoch(self) -> int:
        """The current epoch."""
        return self._epoch

    def new_epoch(self) -> int:
        """Start a new epoch (on load or resume) and return it; older epochs are refused."""
        self._epoch += 1
        self.kept_state.chained = False
        return self._epoch

    @property
    def last_seq(self) -> int:
        """The ``seq`` of the last envelope stamped."""
        return self._next_seq - 1

    def continue_after(self, last_seq: int) -> None:
        """Number the next envelope after ``last_seq`` when the stored chain is ahead.

        Another process sharing the store appended to the session (see
        :mod:`._ownership`); a reload, or the catch-up before a turn, calls this between turns
        so that this pipeline's next event follows the stored ones instead of colliding with
        them. An attachment that has not sent all of them (what relays them from the store,
        :mod:`._elsewhere`, lags) sends the rest from the store.

        Raises:
            RuntimeError: a turn's writer is attached (only between turns).
        """
        if self._writer is not None:
            raise RuntimeError("continue_after() while a turn's writer is attached")
        if last_seq > self.last_seq:
            # Observe envelopes held for the next store were numbered where the other
            # process's events now are: they cannot be stored any more.
            self.observe_dropped += len(self._held)
            self._held = []
            self.kept_state.chained = False
            self.kept_state.seq = None
            self._next_seq = last_seq + 1
            self.committed_seq = last_seq
            for attachment in self._attachments:
                if attachment.cursor < last_seq:
                    attachment.resync()

    def forget_uncommitted(self) -> int:
        """Give back the seqs of envelopes stamped but never committed; return how many.

        A turn whose writer failed (the store went away mid-turn) leaves envelopes stamped
        that were never committed, so never sent either (attachments are offered committed
        envelopes only). Without this the session's next event would be numbered after
        them and its stored chain would have a gap. The kept engine state now holds more
        than the stored chain, so the next snapshot is stored whole. Should the store have
        committed a batch whose acknowledgement was lost, the catch-up before the next turn
        finds the stored chain ahead and continues after it (:meth:`continue_after`).

        Raises:
            RuntimeError: a turn's writer is attached (only once it has finished).
        """
        if self._writer is not None:
            raise RuntimeError("forget_uncommitted() while a turn's writer is attached")
        lost = self.last_seq - self.committed_seq
        if lost <= 0:
            return 0
        self.observe_dropped += len(self._held)
        self._held = []
        self._next_seq = self.committed_seq + 1
        kept = self.kept_state
        kept.chained = False
        if kept.seq is not None and kept.seq > self.committed_seq:
            kept.seq = None
        return lost

    def statistics(self) -> PipelineStatistics:
        """Return the pipeline's counts."""
        return PipelineStatistics(
            epoch=self._epoch,
            next_seq=self._next_seq,
            committed_seq=self.committed_seq,
            published=self._published,
            stale_dropped=self._stale,
            observe_dropped=self.observe_dropped,
            attachments=len(self._attachments),
        )

    # ------------------------------------------------------------------ consumers

    @property
    def attachments(self) -> tuple[Attachment, ...]:
        """The attached clients."""
        return self._attachments

    def attach(self, attachment: Attachment) -> None:
        """Offer every later committed envelope to ``attachment`` too."""
        self._attachments = (*self._attachments, attachment)

    def detach(self, attachment: Attachment) -> None:
        """Stop offering envelopes to ``attachment`` and close it."""
        self._attachments = tuple(a for a in self._attachments if a is not attachment)
        attachment.close()

    def add_tap(self, tap: Tap) -> None:
        """Call ``tap`` with every later committed envelope, before the attachments."""
        self._taps = (*self._taps, tap)

    # ------------------------------------------------------------------ publish

    async def publish(
        self, event: Event, *, epoch: int, turn_id: str | None, agent_id: str = ROOT_AGENT_ID
    ) -> Envelope | None:
        """Stamp ``event``, store it, and fan it out once committed.

        Returns the envelope, or ``None`` when ``epoch`` is not the current one (dropped).
        Render and state events return once appended (committed, outside a turn); observe
        events never wait.
        """
        if event.layer == "observe":
            envelope = self._stamp(event, epoch, turn_id, agent_id)
            if envelope is not None:
                if len(self._held) >= MAX_HELD_OBSERVE:
                    self.observe_dropped += 1
                else:
                    self._held.append(envelope)
            return envelope
        if self._ordered is None:
            # fast_acquire: an uncontended publish does not yield to the event loop (that
            # would cost one loop iteration per event of a streaming turn).
            self._ordered = anyio.Lock(fast_acquire=True)
        async with self._ordered:
            envelope = self._stamp(event, epoch, turn_id, agent_id)
            if envelope is None:
                return None
            batch = [*self._held, envelope] if self._held else [envelope]
            self._held = []
            self._busy = True
            try:
                await self._store_batch(batch)
            except BaseException:
                # Not stored for certain: the next snapshot is stored whole, and the state
                # record holds the state itself until then.
                self.kept_state.chained = False
                self.kept_state.seq = None
                raise
            finally:
                self._busy = False
                if self._idle is not None:
                    self._idle.set()
                    self._idle = None
            return envelope

    def _stamp(
        self, event: Event, epoch: int, turn_id: str | None, agent_id: str
    ) -> Envelope | None:
        if epoch != self._epoch:
            self._stale += 1
            return None
        kept = self.kept_state
        state_before: JsonValue = None
        if isinstance(event, StateSnapshot):
            if event.items is not None:
                kept.check_append(event.path, event.base)
                if not kept.chained:
                    # The stored chain does not end with the kept state: store it whole.
                    items = list(event.items)
                    part = {"path": list(event.path), "base": event.base, "items": items}
                    event = StateSnapshot(state=apply_appended(kept.whole(), part))
            elif kept.chained:
                state_before = kept.whole()
        envelope = stamp(
            event,
            session_id=self.session_id,
            seq=self._next_seq,
            epoch=epoch,
            turn_id=turn_id,
            agent_id=agent_id,
            state_before=state_before,
        )
        if isinstance(event, StateSnapshot):
            if event.items is None:
                # Stored as an append when it only appended: the chain still grows from the
                # whole snapshot before it.
                whole_at = kept.seq if envelope.kind == STATE_APPENDED else envelope.seq
                kept.replace(event.state, chained=True, seq=whole_at)
            else:
                kept.append(envelope.payload, event.path, len(event.items))
        self._next_seq += 1
        self._published += 1
        return envelope

    async def _store_batch(self, batch: list[Envelope]) -> None:
        writer = self._writer
        if writer is None:
            await self.store.append_events(batch)
            await self.on_committed(batch)
            return
        for envelope in batch:
            await writer.append(envelope)

    async def on_committed(self, batch: Sequence[Envelope]) -> None:
        """Fan out a committed batch, in order: taps first, then every attachment's queue.

        The writer's callback; it never waits on a client.
        """
        self.committed_seq = batch[-1].seq
        taps, attachments = self._taps, self._attachments
        for envelope in batch:
            for tap in taps:
                tap(envelope)
            for attachment in attachments:
                attachment.offer(envelope)

    def offer_elsewhere(self, envelope: Envelope) -> None:
        """Offer every attachment an envelope another process committed to the session
        (:mod:`._elsewhere`); never waits."""
        for attachment in self._attachments:
            attachment.offer(envelope)

    # ------------------------------------------------------------------ the turn's writer

    @property
    def writer(self) -> GroupCommitWriter[Envelope] | None:
        """The running turn's writer, while one is attached."""
        return self._writer

    def attach_writer(self, writer: GroupCommitWriter[Envelope]) -> None:
        """Route later envelopes through ``writer`` (a turn began)."""
        self._writer = writer

    async def detach_writer(self) -> None:
        """Store held observe envelopes, wait until the writer committed everything, and go
        back to one transaction per envelope. A failed writer is left as it is (its error
        surfaces from its own ``async with``)."""
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

    async def flush(self) -> None:
        """Wait until every envelope stored so far has been committed and fanned out."""
        if self._writer is not None:
            await self._writer.flush()

    async def settle(self, attachment: Attachment | None) -> None:
        """:meth:`flush`, then wait until ``attachment`` has sent everything committed."""
        await self.flush()
        if attachment is not None:
            await attachment.wait_sent(self.committed_seq)

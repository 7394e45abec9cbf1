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

What happens after the fan-out, how an envelope reaches a client (an attachment's modes and
phases, its queue, its catching up from the store, the replay, the rendering of each
notification), is :mod:`._attachment`'s.

Below: :mod:`accord.events`, :mod:`accord.store`, :mod:`._attachment`. Above: the runtime
(:mod:`._live_session` holds one pipeline per live session).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, final

import anyio
from pydantic import JsonValue

from ..engines import ROOT_AGENT_ID, Event, StateSnapshot
from ..events import STATE_APPENDED, Envelope, apply_appended, stamp
from ..store import GroupCommitWriter, SessionStore, WriterClosed
from ._attachment import Attachment
from ._kept_state import KeptState

__all__ = ("MAX_HELD_OBSERVE", "DeliveryPipeline", "PipelineStatistics", "Tap")

#: Observe envelopes waiting for the next ordered envelope before they are dropped. Telemetry
#: comes a few per model call; a thousand covers a long tool loop without a render event.
MAX_HELD_OBSERVE: Final = 1000

Tap = Callable[[Envelope], None]
"""A synchronous observer of every committed envelope (it must not block or raise)."""


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
        #: The session's engine state (:mod:`._kept_state`): the last snapshot stamped, or
        #: what the session was loaded with, in memory until the store committed it;
        #: ``chained`` while the stored chain ends with it (cleared on a change of epoch or
        #: of numbering).
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
        self.kept_state.uncommitted(self.committed_seq)
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
            kept = self.kept_state
            if isinstance(event, StateSnapshot) and (event.items is None) == kept.chained:
                # The state before it is needed (below): read it back from the stored chain
                # if only the store holds it (a release may come in while it is read).
                while not kept.in_memory:
                    await kept.read(self.store, self.session_id)
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
        whole_from_engine = isinstance(event, StateSnapshot) and event.items is None
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
                kept.replace(
                    event.state,
                    chained=True,
                    seq=whole_at,
                    newest=envelope.seq,
                    compares=whole_from_engine,
                )
            else:
                kept.append(envelope.payload, event.path, len(event.items), seq=envelope.seq)
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
        self.kept_state.release(self.committed_seq)
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

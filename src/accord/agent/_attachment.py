"""How an event reaches a client: one :class:`Attachment` per client and session.

Every event a client receives of a session goes through that client's :class:`Attachment`,
whatever asked for it (``session/new``, ``session/load``, ``session/resume``, a resume from a
cursor, a second client joining a live session, a turn streaming, another process's turn
relayed from the store). "Attach after X; tell me when you have sent it" is the one idea:

* **The start** (one of three modes, the entry of :data:`ATTACHMENT_TRANSITIONS`):

  - :meth:`Attachment.live`: the client has everything up to a ``seq`` (a new session, a
    resume, a join without history); it starts ``live``.
  - :meth:`Attachment.from_store`: the client has everything up to a cursor (``_meta
    ["acp/cursor"]``, :mod:`._cursor`); it starts ``catching_up``: the stored events after
    it, in order, then live.
  - :meth:`Attachment.replaying`: the client gets the session's history up to a ``seq``
    first, compacted as ``session/load`` replays it (:class:`._restore.Replay`: chunks of one
    message merged, tool-call progress folded, a compaction shown to clients without
    ``session.compaction`` as its marker by the channel's mapping); it starts ``replaying``
    (the attaching request runs :meth:`Attachment.replay` itself, so that a failed replay
    fails the request), then catches up on what committed meanwhile, then goes live.

* **The phases** (:data:`ATTACHMENT_TRANSITIONS`, a :class:`~accord.engines.StateTable`
  like the other lifecycles): ``replaying``, ``catching_up`` (reading the stored events after
  the cursor, in batches), ``live`` (sending the committed envelopes the pipeline offers, from
  a bounded queue), ``behind`` (the queue overflowed, or the pipeline's numbering jumped past
  what it was offered: reading from the store until it has caught up, then live again),
  ``closed``. Only ``live`` queues what it is offered; every other phase gets it from the
  store later, so nothing is lost and nothing is sent twice (the ``cursor``, the last ``seq``
  sent or passed over, only grows).

* **The sender** (:meth:`Attachment.run`, one task in the live session's own task group,
  :mod:`._live_session`) sends the queue in order and reads the store when catching up or
  behind. A slow client does not hold the turn or the other clients back: offering never
  waits. A cancelled sender loses nothing: it goes on from the store after its cursor.

* **Told when sent**: :meth:`Attachment.wait_sent` returns once everything up to a ``seq`` is
  sent (or passed over, or the client is gone). ``session/prompt``, ``session/load``, a mode
  change, a permission request and the turn notices wait on it
  (:meth:`~._live_session.LiveSession.settle`): a response comes after its updates.

* **Where the client's own turn starts**: a turn the client prompted is recorded with
  :meth:`Attachment.prompted`, with the notice to send when the prompt asked for one
  (``_meta.accord.prompt``, see :mod:`._runtime`); the sender sends it just before the turn's
  first envelope, from the queue or from the store alike, so the client can tell the tail of
  an earlier turn (caught up late, after a resume, or of another client) from its own.

Where the envelopes come from: the session's :class:`~._pipeline.DeliveryPipeline` offers
every envelope it committed (and :mod:`._elsewhere` the ones another process committed) to
every attachment (:meth:`Attachment.offer`); the store has every committed envelope for the
other phases. :class:`ClientChannel` is the connection side of one client: it renders an
envelope with the one mapping (:meth:`~accord.events.SessionUpdateMapper.update_wire`, which
also hides ``boolean`` config options from clients that did not advertise them and gives
clients without ``session.compaction`` the ordinary marker of a compaction instead of its
updates), adds ``_accord/event`` for clients that opted in (all three layers, the observe layer
included), stamps each notification's ``_meta["acp/cursor"]`` (:mod:`._cursor`: where a client
that comes back resumes), and has a "gone" flag: once the connection is closed, sends are
skipped silently (the store still gets everything).

Below: :mod:`accord.events`, :mod:`accord.store`, :mod:`._cursor`. Above: the pipeline that
offers (:mod:`._pipeline`), the session table that attaches (:mod:`._session_table`).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, TypeAlias, final

import anyio

from ..engines import ROOT_AGENT_ID, ConfigChanged, StateTable
from ..errors import CURSOR_META_KEY, LocalProtocolError, TransportError
from ..events import (
    EXT_EVENT_METHOD,
    Envelope,
    SessionUpdateMapper,
    envelope_from_stored,
    ext_event_params,
)
from ..schema import BooleanSessionConfigOption, SessionUpdate
from ..store import SessionStore, iter_events
from ._cursor import Cursor, encode_cursor

__all__ = (
    "ATTACHMENT_TRANSITIONS",
    "DEFAULT_ATTACHMENT_QUEUE",
    "Announce",
    "Attachment",
    "AttachmentPhase",
    "AttachmentStatistics",
    "AttachmentTrigger",
    "ClientChannel",
    "History",
    "Notify",
    "Recipient",
    "Source",
)

logger = logging.getLogger("accord.agent")

#: Committed envelopes an attachment may hold unsent before it falls behind (and catches up
#: from the store instead). Twice the writer's default bound on uncommitted events.
DEFAULT_ATTACHMENT_QUEUE: Final = 8192

_GONE: Final = (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError)

Announce: TypeAlias = Callable[[], Awaitable[None]]
"""Sends a client the notice that its turn starts (see :meth:`Attachment.prompted`); a gone
client is not an error."""

History: TypeAlias = AsyncIterable[tuple[Envelope, Cursor]]
"""A replay: envelopes in ``seq`` order, each with the cursor ``(epoch, seq)`` of the last
stored event it stands for (:class:`._restore.Replay`)."""


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


AttachmentPhase: TypeAlias = Literal["replaying", "catching_up", "live", "behind", "closed"]
"""Where an attachment is (module docstring): sending a replay, reading the store after its
cursor (started from one, or after a replay), sending its live queue, reading the store
after falling behind, ended."""

AttachmentTrigger: TypeAlias = Literal[
    "attach_live",
    "attach_from_store",
    "attach_replaying",
    "replayed",
    "caught_up",
    "overflow",
    "resync",
    "close",
]
"""What happens to an attachment: its start in one of the three modes, the end of its replay,
reaching the last committed ``seq`` from the store, its queue overflowing, the pipeline's
numbering jumping past it (or its sender being cancelled mid-send), its end."""

ATTACHMENT_TRANSITIONS: Final[StateTable[AttachmentPhase | None, AttachmentTrigger]] = StateTable(
    {
        (None, "attach_live"): "live",
        (None, "attach_from_store"): "catching_up",
        (None, "attach_replaying"): "replaying",
        ("replaying", "replayed"): "catching_up",
        ("replaying", "resync"): "replaying",
        ("replaying", "close"): "closed",
        ("catching_up", "caught_up"): "live",
        ("catching_up", "resync"): "catching_up",
        ("catching_up", "close"): "closed",
        ("live", "overflow"): "behind",
        ("live", "resync"): "behind",
        ("live", "close"): "closed",
        ("behind", "caught_up"): "live",
        ("behind", "resync"): "behind",
        ("behind", "close"): "closed",
        ("closed", "resync"): "closed",
        ("closed", "close"): "closed",
    },
    final=("closed",),
)
"""``(phase, trigger) -> next phase`` of an attachment (``None``: not started); an absent
pair is a bug in the runtime."""


class Source(Protocol):
    """What an attachment reads besides its queue: the session's pipeline
    (:class:`~._pipeline.DeliveryPipeline`)."""

    @property
    def session_id(self) -> str:
        """The session."""
        ...

    @property
    def store(self) -> SessionStore:
        """Where the session's committed envelopes are (catching up reads them)."""
        ...

    @property
    def committed_seq(self) -> int:
        """The last ``seq`` committed and offered to the attachments."""
        ...


@final
@dataclass(frozen=True, slots=True)
class AttachmentStatistics:
    """Counts of one attachment.

    Attributes:
        cursor: The last ``seq`` sent (or passed over as not for this client).
        queued: Committed envelopes waiting in the queue.
        sent: Envelopes sent.
        fell_behind: Times the queue overflowed (the sender then read from the store).
        caught_up: Envelopes sent from the store while catching up or behind.
        replayed: Envelopes sent by a replay.
        phase: Where the attachment is.
    """

    cursor: int
    queued: int
    sent: int
    fell_behind: int
    caught_up: int
    replayed: int = 0
    phase: AttachmentPhase = "live"


_PROMPTED_TURNS_KEPT: Final = 4
"""How many of its own recent turns an attachment remembers (to leave their prompt out)."""


class Attachment:
    """One client attached to one session (see the module docstring).

    Start one with :meth:`live`, :meth:`from_store` or :meth:`replaying` (the constructor is
    :meth:`live`'s); run :meth:`run` in a task for as long as the attachment lives (after
    :meth:`replay`, for a replaying one); :meth:`close` ends it.

    Args:
        source: The session's pipeline (the store to catch up from, the committed seq).
        channel: Where to send (the client's :class:`ClientChannel`).
        cursor: The last ``seq`` the client already has (0: everything after is new).
        max_queue: Envelopes queued before the attachment falls behind.

    Raises:
        ValueError: ``max_queue`` is below 1, or ``cursor`` is negative.
    """

    __slots__ = (
        "_announcers",
        "_caught_up",
        "_fell_behind",
        "_history",
        "_max_queue",
        "_progress",
        "_prompted_turns",
        "_queue",
        "_replayed",
        "_sent",
        "_source",
        "_turn_seen",
        "_until",
        "_wake",
        "channel",
        "cursor",
        "phase",
    )

    def __init__(
        self,
        source: Source,
        channel: Recipient,
        *,
        cursor: int,
        max_queue: int = DEFAULT_ATTACHMENT_QUEUE,
    ) -> None:
        """Create a ``live`` attachment; see the class docstring for the arguments."""
        if max_queue < 1:
            raise ValueError(f"max_queue must be at least 1, got {max_queue}")
        if cursor < 0:
            raise ValueError(f"cursor must be at least 0, got {cursor}")
        self._source = source
        self.channel = channel
        self.cursor = cursor
        self._max_queue = max_queue
        self._queue: deque[Envelope] = deque()
        self.phase: AttachmentPhase = "live"
        self._history: History | None = None
        self._until = 0
        self._wake: anyio.Event | None = None
        self._progress: anyio.Event | None = None
        self._sent = 0
        self._fell_behind = 0
        self._caught_up = 0
        self._replayed = 0
        # The last turns this client prompted (a few: its queue may still hold the previous
        # turn's prompt when the next begins). Their prompt is not sent back to it live.
        self._prompted_turns: deque[str] = deque(maxlen=_PROMPTED_TURNS_KEPT)
        # What to send the client just before the first envelope of a turn it prompted (the
        # turn-start notice), by turn id; and the turn of the last envelope sent or passed.
        self._announcers: dict[str, Announce] = {}
        self._turn_seen: str | None = None

    # ------------------------------------------------------------------ the three modes

    @classmethod
    def live(
        cls,
        source: Source,
        channel: Recipient,
        *,
        after: int,
        max_queue: int = DEFAULT_ATTACHMENT_QUEUE,
    ) -> Attachment:
        """Attach a client that has everything up to ``after``: it gets what commits later."""
        return cls(source, channel, cursor=after, max_queue=max_queue)

    @classmethod
    def from_store(
        cls,
        source: Source,
        channel: Recipient,
        *,
        after: int,
        max_queue: int = DEFAULT_ATTACHMENT_QUEUE,
    ) -> Attachment:
        """Attach a client that has everything up to ``after`` (its cursor's ``seq``): the
        stored envelopes after it first, in order, then what commits later."""
        attachment = cls(source, channel, cursor=after, max_queue=max_queue)
        attachment.phase = "catching_up"
        return attachment

    @classmethod
    def replaying(
        cls,
        source: Source,
        channel: Recipient,
        *,
        history: History,
        until: int,
        max_queue: int = DEFAULT_ATTACHMENT_QUEUE,
    ) -> Attachment:
        """Attach a client that gets ``history`` (the session replayed up to ``until``)
        first, then what committed after ``until``, then what commits later.

        The attaching request runs :meth:`replay` before it starts :meth:`run`.
        """
        attachment = cls(source, channel, cursor=0, max_queue=max_queue)
        attachment.phase = "replaying"
        attachment._history = history
        attachment._until = until
        return attachment

    # ------------------------------------------------------------------ phases

    def _step(self, trigger: AttachmentTrigger) -> AttachmentPhase:
        phase = ATTACHMENT_TRANSITIONS.step(self.phase, trigger)
        if phase is None:
            raise LocalProtocolError(
                f"session {self._source.session_id!r}: an attachment cannot {trigger} while "
                f"{self.phase}"
            )
        self.phase = phase
        return phase

    @property
    def closed(self) -> bool:
        """Whether the attachment has ended."""
        return self.phase == "closed"

    @property
    def behind(self) -> bool:
        """Whether the sender reads from the store (catching up or behind), not its queue."""
        return self.phase in ("catching_up", "behind")

    def prompted(self, turn_id: str, *, announce: Announce | None = None) -> None:
        """Record that this attachment's client prompted turn ``turn_id``.

        ``announce`` is sent (awaited by the sender) just before the turn's first envelope,
        in order with the envelopes: what the client receives after it is the turn's, what it
        received before is not (the turn-start notice, ``_accord/turn`` with the prompt's
        tag; the runtime passes it when the prompt asked for it).

        The turn's prompt (its ``user_message_chunk`` events) is then not sent back to this
        client live: an editor already shows what it sent (Zed would show it twice). The
        other attached clients get it, with its ``messageId``; ``session/load`` replays it
        and a resume from a cursor (a new attachment) sends it if it came after the cursor.
        A client that opted in to ``_accord/event`` gets every envelope of the chain, its own
        prompt included (it matches the echo itself, as accord's client does).
        """
        self._prompted_turns.append(turn_id)
        if announce is not None:
            announcers = self._announcers
            announcers[turn_id] = announce
            while len(announcers) > _PROMPTED_TURNS_KEPT:  # of turns that never sent anything
                del announcers[next(iter(announcers))]

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
            replayed=self._replayed,
            phase=self.phase,
        )

    def offer(self, envelope: Envelope) -> None:
        """Queue a committed envelope while ``live``; never waits (a full queue makes the
        attachment fall behind, and its sender reads from the store instead; in the other
        phases the store has it for later)."""
        if self.phase != "live" or envelope.seq <= self.cursor:
            pass
        elif len(self._queue) >= self._max_queue:
            self._step("overflow")
            self._fell_behind += 1
            self._queue.clear()
        else:
            self._queue.append(envelope)
        self._poke()

    def resync(self) -> None:
        """Send what is committed after the cursor from the store, then rejoin the queue (the
        pipeline's numbering jumped past envelopes this attachment was not offered)."""
        self._step("resync")
        if self.phase == "behind":
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
        self._step("close")
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

    # ------------------------------------------------------------------ sending

    async def replay(self) -> None:
        """Send the history of a :meth:`replaying` attachment, then catch up (nothing for the
        other modes). Run by the attaching request before :meth:`run`: a replay that fails
        fails the request (the attachment stays ``replaying``; detach it)."""
        history = self._history
        if self.phase != "replaying" or history is None:
            return
        channel = self.channel
        async for envelope, (epoch, seq) in history:
            if self.closed:
                return
            await channel.deliver(envelope, (epoch, seq))
            self._sent += 1
            self._replayed += 1
            self._advance(max(seq, self.cursor))
        self._history = None
        if self.closed:
            return
        self._advance(max(self._until, self.cursor))
        self._step("replayed")
        self._rejoin()

    def _rejoin(self) -> None:
        """Go live once the cursor has reached the last committed ``seq`` (no await between
        this check and the switch: every later commit is queued)."""
        if self.cursor >= self._source.committed_seq:
            self._step("caught_up")
            self._queue.clear()
        self._poke()

    async def run(self) -> None:
        """The sender: send queued envelopes in order, read from the store when catching up
        or behind; waits while a replay is being sent (:meth:`replay`).

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
            logger.exception("session %s: an attachment's sender failed", self._source.session_id)
            self.close()

    async def _send_next(self) -> None:
        """Send the head of the queue (a method of its own: no frame of the idle sender keeps
        the last envelope alive)."""
        envelope = self._queue.popleft()
        if envelope.seq > self.cursor:
            if envelope.turn_id != self._turn_seen:
                await self._turn_begins(envelope.turn_id)
            if self._wanted(envelope):
                await self.channel.deliver(envelope)
                self._sent += 1
            self._advance(envelope.seq)

    async def _turn_begins(self, turn_id: str | None) -> None:
        """The next envelope is of another turn than the last one (or of none): if this
        client prompted it and asked to be told, tell it now, before the envelope."""
        announce = self._announcers.get(turn_id) if turn_id is not None else None
        if announce is not None and not self.channel.gone:
            await announce()
        if turn_id is not None:
            self._announcers.pop(turn_id, None)
        self._turn_seen = turn_id

    async def _catch_up(self) -> None:
        """Send the committed envelopes after the cursor from the store, then rejoin."""
        source, channel = self._source, self.channel
        async for batch in iter_events(source.store, source.session_id, after_seq=self.cursor):
            for stored in batch:
                if self.closed:
                    return
                if stored.seq <= self.cursor:
                    continue
                envelope = envelope_from_stored(stored)
                if envelope.turn_id != self._turn_seen:
                    await self._turn_begins(envelope.turn_id)
                if self._wanted(envelope):
                    await channel.deliver(envelope)
                    self._sent += 1
                    self._caught_up += 1
                self._advance(stored.seq)
        if not self.closed:
            self._rejoin()

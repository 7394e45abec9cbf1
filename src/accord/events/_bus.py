"""The per-session event bus: stamps envelopes and fans them out to sinks and observers.

:meth:`EventBus.publish` is the one place where an event becomes an :class:`Envelope`: it
assigns the next ``session_seq`` and the current epoch, then

* offers the envelope to every observer channel (all layers; never blocks, lossy);
* for an observe event, offers it to every sink (never blocks) and returns;
* for a render or state event, awaits ``sink.deliver`` on every sink in turn, holding the
  bus's ordering lock, so each sink sees render and state envelopes in ``seq`` order.

Epochs: :meth:`EventBus.new_epoch` is called on ``session/load`` and ``session/resume``.
A publisher states the epoch it belongs to; an event of an older epoch (a late event of a turn
that began before the load) is dropped and counted, never delivered into the new epoch.

Errors raised by a sink propagate to the publisher: a sink's senders decide whether a gone
client is an error (for the store it is; for a detached client the runtime's sender ignores it).

This module sits on envelopes, sinks and channels; the agent runtime owns one bus per session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

import anyio

from ._channels import DEFAULT_OBSERVER_BUFFER, ObserverChannel
from ._envelope import Envelope
from ._events import ROOT_AGENT_ID, Event
from ._sinks import Sink

__all__ = ("BusStatistics", "EventBus")


@final
@dataclass(frozen=True, slots=True)
class BusStatistics:
    """Counts of one event bus.

    Attributes:
        epoch: The current epoch.
        next_seq: The ``session_seq`` the next envelope gets.
        published: Envelopes built and fanned out.
        stale_dropped: Events refused because they belonged to an older epoch.
        sinks: Attached sinks.
        observers: Open observer channels.
    """

    epoch: int
    next_seq: int
    published: int
    stale_dropped: int
    sinks: int
    observers: int


@final
class EventBus:
    """Stamps and fans out the events of one session.

    Args:
        session_id: The session.
        epoch: The epoch to start in (the stored epoch plus one after a load).
        next_seq: The first ``session_seq`` to assign (the stored last seq plus one).
    """

    def __init__(self, session_id: str, *, epoch: int = 0, next_seq: int = 1) -> None:
        """Create a bus with no sinks or observers."""
        if next_seq < 1:
            raise ValueError("session_seq starts at 1")
        self.session_id = session_id
        self._epoch = epoch
        self._next_seq = next_seq
        self._published = 0
        self._stale = 0
        self._sinks: list[Sink] = []
        self._observers: list[ObserverChannel] = []
        self._ordered: anyio.Lock | None = None

    @property
    def epoch(self) -> int:
        """The current epoch."""
        return self._epoch

    def new_epoch(self) -> int:
        """Start a new epoch (on load or resume) and return it; older epochs are refused."""
        self._epoch += 1
        return self._epoch

    def attach(self, sink: Sink) -> None:
        """Deliver every later envelope to ``sink`` too."""
        self._sinks.append(sink)

    def detach(self, sink: Sink) -> None:
        """Stop delivering to ``sink`` (no effect if it is not attached)."""
        if sink in self._sinks:
            self._sinks.remove(sink)

    def observe(self, max_buffer: int = DEFAULT_OBSERVER_BUFFER) -> ObserverChannel:
        """Return a new observer channel that receives every later envelope, lossily.

        Close the channel when done; the bus forgets closed channels.
        """
        channel = ObserverChannel(max_buffer)
        self._observers.append(channel)
        return channel

    def close(self) -> None:
        """Close every observer channel (their readers end after draining)."""
        for channel in self._observers:
            channel.close()
        self._observers.clear()

    async def publish(
        self,
        event: Event,
        *,
        epoch: int,
        turn_id: str | None,
        agent_id: str = ROOT_AGENT_ID,
    ) -> Envelope | None:
        """Stamp ``event`` and deliver it; return the envelope, or ``None`` if stale.

        Args:
            event: What happened.
            epoch: The epoch the publisher belongs to (read :attr:`epoch` when it started).
            turn_id: The prompt turn, or ``None`` outside a turn.
            agent_id: The producing agent (:data:`ROOT_AGENT_ID` or a sub-agent id).

        Render and state events wait for every sink (in ``seq`` order); observe events never
        wait.
        """
        if event.layer == "observe":
            envelope = self._stamp(event, epoch, turn_id, agent_id)
            if envelope is not None:
                for sink in tuple(self._sinks):
                    sink.offer(envelope)
            return envelope
        if self._ordered is None:
            # fast_acquire: an uncontended publish does not yield to the event loop (that
            # would cost one loop iteration per event of a streaming turn).
            self._ordered = anyio.Lock(fast_acquire=True)
        async with self._ordered:
            envelope = self._stamp(event, epoch, turn_id, agent_id)
            if envelope is not None:
                for sink in tuple(self._sinks):
                    await sink.deliver(envelope)
            return envelope

    def _stamp(
        self, event: Event, epoch: int, turn_id: str | None, agent_id: str
    ) -> Envelope | None:
        if epoch != self._epoch:
            self._stale += 1
            return None
        envelope = Envelope(
            session_id=self.session_id,
            session_seq=self._next_seq,
            session_epoch=epoch,
            turn_id=turn_id,
            agent_id=agent_id,
            event=event,
        )
        self._next_seq += 1
        self._published += 1
        open_channels: list[ObserverChannel] = []
        for channel in self._observers:
            channel.offer(envelope)
            if not channel.closed:
                open_channels.append(channel)
        self._observers = open_channels
        return envelope

    def statistics(self) -> BusStatistics:
        """Return the bus's counts."""
        return BusStatistics(
            epoch=self._epoch,
            next_seq=self._next_seq,
            published=self._published,
            stale_dropped=self._stale,
            sinks=len(self._sinks),
            observers=len(self._observers),
        )

"""Bounded, lossy channels: how observers receive envelopes without ever slowing a turn.

The publisher calls :meth:`ObserverChannel.offer`, which never blocks: when the observer has
fallen ``max_buffer`` envelopes behind, the new envelope is skipped and counted instead. The
observer drains the channel at its own pace (``async for envelope in channel``) and can spot a
skip as a gap in ``session_seq``; :meth:`ObserverChannel.statistics` reports the counts.

This module sits on envelopes and anyio events; the event bus and the extended sink
above it own one channel per observer.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final, Self, final

import anyio
import anyio.lowlevel

from ._envelope import Envelope

__all__ = ("DEFAULT_OBSERVER_BUFFER", "ObserverChannel", "ObserverStatistics")

DEFAULT_OBSERVER_BUFFER: Final = 256
"""Envelopes an observer may lag behind before it skips: a few seconds of a fast token stream
(models stream at most a few hundred chunks a second), small enough to bound memory per
observer."""


@final
@dataclass(frozen=True, slots=True)
class ObserverStatistics:
    """Counts of one observer channel.

    Attributes:
        offered: Envelopes the publisher offered.
        skipped: Envelopes dropped because the observer lagged ``max_buffer`` behind.
        buffered: Envelopes waiting to be received.
        max_buffer: The lag bound.
        closed: Whether the channel was closed.
    """

    offered: int
    skipped: int
    buffered: int
    max_buffer: int
    closed: bool


@final
class ObserverChannel:
    """A bounded channel of envelopes that drops (and counts) what a slow reader cannot take.

    Use as an async iterator; it ends after :meth:`close` once the buffer is drained. Meant
    for one reader; it holds no resources beyond its buffer, so it needs no cleanup.
    """

    __slots__ = ("_buffer", "_closed", "_max_buffer", "_offered", "_skipped", "_wakeup")

    def __init__(self, max_buffer: int = DEFAULT_OBSERVER_BUFFER) -> None:
        """Create an open channel holding at most ``max_buffer`` (>= 1) envelopes.

        Raises:
            ValueError: ``max_buffer`` is less than 1.
        """
        if max_buffer < 1:
            raise ValueError("max_buffer must be at least 1")
        self._buffer: deque[Envelope] = deque()
        self._wakeup: anyio.Event | None = None
        self._max_buffer = max_buffer
        self._offered = 0
        self._skipped = 0
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def offer(self, envelope: Envelope) -> bool:
        """Queue ``envelope`` if there is room; never blocks.

        Returns:
            ``True`` if queued, ``False`` if skipped (full) or the channel is closed.
        """
        if self._closed:
            return False
        self._offered += 1
        if len(self._buffer) >= self._max_buffer:
            self._skipped += 1
            return False
        self._buffer.append(envelope)
        self._wake()
        return True

    def receive_nowait(self) -> Envelope:
        """Return the next envelope without waiting.

        Raises:
            anyio.WouldBlock: nothing is buffered yet.
            anyio.EndOfStream: the channel was closed and is drained.
        """
        if self._buffer:
            return self._buffer.popleft()
        if self._closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> Envelope:
        """Wait for the next envelope.

        Raises:
            anyio.EndOfStream: the channel was closed and is drained.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                envelope = self.receive_nowait()
            except anyio.WouldBlock:
                if self._wakeup is None:
                    self._wakeup = anyio.Event()
                await self._wakeup.wait()
            else:
                # Yield without a cancellation point: a taken envelope is never lost.
                await anyio.lowlevel.cancel_shielded_checkpoint()
                return envelope

    def close(self) -> None:
        """Stop accepting envelopes; the reader still gets what is buffered, then the end."""
        self._closed = True
        self._wake()

    def statistics(self) -> ObserverStatistics:
        """Return the channel's counts (offered, skipped, buffered)."""
        return ObserverStatistics(
            offered=self._offered,
            skipped=self._skipped,
            buffered=len(self._buffer),
            max_buffer=self._max_buffer,
            closed=self._closed,
        )

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    def __aiter__(self) -> Self:
        """Iterate over envelopes until the channel is closed and drained."""
        return self

    async def __anext__(self) -> Envelope:
        """Return the next envelope; ``StopAsyncIteration`` at the end."""
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

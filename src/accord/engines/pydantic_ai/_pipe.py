"""The hand-off between the task that drives a pydantic-ai run and the turn's async generator.

Why a task of its own: ``Agent.iter`` keeps an anyio task group open for the whole run
(pydantic-graph's ``GraphRun``). An async generator that drove the run itself would hold that
scope across its ``yield`` s: any cancel scope its consumer enters before a step and leaves after
it (a scope per step, a shielded ``aclose()`` after an early exit) would be exited out of order,
which anyio refuses ("Attempted to exit a cancel scope that isn't the current task's current
cancel scope"), and the consumer's own code between steps would run inside pydantic-ai's task
group. So :func:`run_in_task` runs the producer in a task and the generator only receives from a
bounded memory stream: it holds no scope across a yield, whoever consumes it and however.

The task is an asyncio task, not a task-group child, because no task group may span the
generator's yields. Its lifetime is still bounded by the generator: when the generator ends,
is closed or is cancelled, the task is cancelled and awaited (shielded, bounded) before the
generator finishes; an exception of the producer is re-raised by the generator. pydantic-ai
runs on asyncio only, so nothing is lost by using asyncio here.

Cost: the producer hands events over with ``send_nowait`` (no task switch while there is room)
and the generator takes them with ``receive_nowait`` while any are buffered, so a switch
happens only when one side waits for the other.

Ordering: some of what the producer does must wait until the consumer has *handled* every
event before it (a permission request must reach the client after the tool call it is about).
:meth:`Pipe.wait_handled` waits for that: the generator counts an event as handled when the
consumer asks for the next one.

This module sits on anyio and the engine protocol; the session uses it for every turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ...schema import TextContentBlock
from .. import TextChunk, ThinkingChunk, TurnOutput

__all__ = ("MAX_BUFFERED_EVENTS", "STOP_TIMEOUT", "Pipe", "Receiver", "run_in_task")

MAX_BUFFERED_EVENTS: Final = 256
"""Events the producer may run ahead of the consumer: enough that a burst of deltas never
waits on a consumer busy writing to the client, small enough to bound memory and to keep
backpressure (a slow client slows the model stream down rather than filling memory)."""

STOP_TIMEOUT: Final = 5.0
"""Seconds the generator waits (shielded) for a cancelled producer to finish; pydantic-ai tears
down in milliseconds, and a producer that does not is abandoned rather than hang a turn."""


class Pipe:
    """The producer's end: :meth:`put` events in order, :meth:`wait_handled` for the consumer."""

    __slots__ = ("_barrier", "_send", "handled", "sent", "wake")

    def __init__(self, send: MemoryObjectSendStream[TurnOutput]) -> None:
        """Wrap the send end of the stream."""
        self._send = send
        self._barrier: anyio.Event | None = None
        self.sent = 0
        """Events put so far."""
        self.handled = 0
        """Events the consumer has handled so far."""
        self.wake: anyio.Event | None = None
        """Set by a consumer waiting out a chunk interval: anything but a chunk (or a full
        buffer, or the end) ends its wait at once."""

    async def put(self, event: TurnOutput) -> None:
        """Hand ``event`` to the consumer; waits only while the buffer is full."""
        self.sent += 1
        try:
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            self.wake_consumer()
            await self._send.send(event)
            return
        if (
            self.wake is not None
            and type(event) is not TextChunk
            and type(event) is not ThinkingChunk
        ):
            self.wake_consumer()

    def wake_consumer(self) -> None:
        """End a consumer's wait for more chunks now."""
        if self.wake is not None:
            self.wake.set()
            self.wake = None

    async def wait_handled(self) -> None:
        """Wait until the consumer has handled every event put so far."""
        while self.handled < self.sent:
            self._barrier = barrier = anyio.Event()
            await barrier.wait()

    def mark_handled(self, count: int = 1) -> None:
        """The consumer is back for more: the ``count`` events it was given are handled."""
        self.handled += count
        if self._barrier is not None and self.handled >= self.sent:
            self._barrier.set()
            self._barrier = None

    def close(self) -> None:
        """No more events (the consumer sees the end once the buffer is empty)."""
        self._send.close()


def _plain_text(event: TurnOutput) -> tuple[str, str, str] | None:
    """``(kind, message id, text)`` of a chunk that may merge with its neighbours: plain text,
    no annotations or ``_meta``, so the merged chunk is exactly what a client shows after
    appending both."""
    if isinstance(event, TextChunk | ThinkingChunk):
        block = event.content
        if isinstance(block, TextContentBlock) and block.annotations is None and block.meta is None:
            return event.kind, event.message_id, block.text
    return None


class Receiver:
    """The generator's end: takes events, merging chunks as allowed (see :func:`run_in_task`).

    Args:
        receive: The receive end of the stream.
        pipe: The producer's end (to be woken from a wait).
        coalesce: Merge consecutive plain chunks of one message that are waiting.
        interval: With ``coalesce``, the least time between two chunks of one message.
    """

    __slots__ = (
        "_coalesce",
        "_held",
        "_interval",
        "_last_id",
        "_last_time",
        "_now",
        "_pipe",
        "_receive",
    )

    def __init__(
        self,
        receive: MemoryObjectReceiveStream[TurnOutput],
        pipe: Pipe,
        *,
        coalesce: bool,
        interval: float,
    ) -> None:
        """Start with nothing held back."""
        self._receive = receive
        self._pipe = pipe
        self._coalesce = coalesce
        self._interval = interval
        self._held: TurnOutput | None = None
        self._last_id: str | None = None
        self._last_time = 0.0
        # The loop's clock, read directly: ``anyio.current_time()`` looks the backend up on
        # every call, and this is read once per chunk (pydantic-ai runs on asyncio only).
        self._now = asyncio.get_running_loop().time

    async def next(self) -> tuple[TurnOutput, int] | None:
        """The next event and how many produced events it stands for; ``None`` at the end."""
        event = self._held
        self._held = None
        if event is None:
            try:
                event = self._receive.receive_nowait()
            except anyio.WouldBlock:
                try:
                    event = await self._receive.receive()
                except anyio.EndOfStream:
                    return None
            except anyio.EndOfStream:
                return None
        if not self._coalesce or not isinstance(event, TextChunk | ThinkingChunk):
            return event, 1
        previous, self._last_id = self._last_id, event.message_id
        merged = await self._merged(event, previous)
        self._last_time = self._now()
        return merged

    async def _merged(
        self, event: TextChunk | ThinkingChunk, previous: str | None
    ) -> tuple[TurnOutput, int]:
        first = _plain_text(event)
        if first is None:
            return event, 1
        deadline: float | None = None
        if self._interval > 0 and event.message_id == previous:
            deadline = self._last_time + self._interval
        texts = [first[2]]
        while (following := await self._following(deadline)) is not None:
            plain = _plain_text(following)
            if plain is None or plain[:2] != first[:2]:
                self._held = following
                break
            texts.append(plain[2])
        if len(texts) == 1:
            return event, 1
        merged = TextContentBlock(text="".join(texts))
        if isinstance(event, TextChunk):
            return TextChunk(message_id=event.message_id, content=merged), len(texts)
        return ThinkingChunk(message_id=event.message_id, content=merged), len(texts)

    async def _following(self, deadline: float | None) -> TurnOutput | None:
        """The next buffered event, or one arriving before ``deadline``; else ``None``."""
        try:
            return self._receive.receive_nowait()
        except anyio.EndOfStream:
            return None
        except anyio.WouldBlock:
            pass
        if deadline is None or (remaining := deadline - self._now()) <= 0:
            return None
        # One wait for the whole interval, not one wake-up per arriving delta.
        self._pipe.wake = wake = anyio.Event()
        with anyio.move_on_after(remaining):
            await wake.wait()
        self._pipe.wake = None
        try:
            return self._receive.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            return None


async def run_in_task(
    produce: Callable[[Pipe], Awaitable[None]],
    *,
    coalesce: bool = False,
    interval: float = 0.0,
) -> AsyncGenerator[TurnOutput]:
    """Yield what ``produce`` puts into its pipe, ``produce`` running in a task of its own.

    With ``coalesce``, consecutive plain text (or thinking) chunks of one message that are
    already waiting when the consumer asks for the next event are merged into one, so a consumer
    that falls behind gets fewer, larger chunks. With an ``interval`` too, a chunk that follows
    one of the same message by less than ``interval`` seconds waits until then for more to
    merge: each message then streams at most one chunk per interval. Any other event ends the
    wait at once, and so does the end of the stream.

    Raises:
        Exception: whatever ``produce`` raised, after every event it put was yielded.
    """
    send, receive = anyio.create_memory_object_stream[TurnOutput](MAX_BUFFERED_EVENTS)
    pipe = Pipe(send)
    receiver = Receiver(receive, pipe, coalesce=coalesce, interval=interval)

    async def producer() -> None:
        with send:
            try:
                await produce(pipe)
            finally:
                pipe.wake_consumer()

    # Not a task-group child: no task group may span this generator's yields (module docstring).
    task = asyncio.get_running_loop().create_task(producer())
    try:
        with receive:
            while (taken := await receiver.next()) is not None:
                event, count = taken
                yield event
                pipe.mark_handled(count)
        await task  # re-raises the producer's exception
    finally:
        if not task.done():
            task.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_TIMEOUT):
                await asyncio.wait((task,))
        if task.done() and not task.cancelled():
            task.exception()  # retrieved, so asyncio never logs it as unhandled

"""The hand-off between the task that drives a pydantic-ai run and the turn's async generator.

Why a task of its own: ``Agent.iter`` keeps an anyio task group open for the whole run
(pydantic-graph's ``GraphRun``). An async generator that drove the run itself would hold that
scope across its ``yield`` s: any cancel scope its consumer enters before a step and leaves after
it (a scope per step, a shielded ``aclose()`` after an early exit) would be exited out of order,
which anyio refuses ("Attempted to exit a cancel scope that isn't the current task's current
cancel scope"), and the consumer's own code between steps would run inside pydantic-ai's task
group. So :func:`run_in_task` runs the producer in a task and the generator only takes what it
put into a :class:`Pipe`: it holds no scope across a yield, whoever consumes it and however.

The task is an asyncio task, not a task-group child, because no task group may span the
generator's yields. Its lifetime is still bounded by the generator: when the generator ends,
is closed or is cancelled, the task is cancelled and awaited (shielded, bounded) before the
generator finishes; an exception of the producer is re-raised by the generator. pydantic-ai
runs on asyncio only, so nothing is lost by using asyncio here.

Cost, the hot path being text deltas (thousands per reply): the pipe is a queue of items. With
coalescing on, a plain text (or thinking) chunk that follows one of the same message still
waiting in the queue is *appended to it* (one list append: no queue entry, no wake-up, no
event built); the consumer joins the texts into one chunk when it takes the item. Any other
event is an item of its own. The producer puts without waiting while the queue has room
(:meth:`Pipe.put_nowait`), and a task switch happens only when one side waits for the other.

Ordering: some of what the producer does must wait until the consumer has *handled* every
event before it (a permission request must reach the client after the tool call it is about).
:meth:`Pipe.wait_handled` waits for that: the generator counts an event as handled when the
consumer asks for the next one.

This module sits on anyio and the engine protocol; the session uses it for every turn.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Final

import anyio

from ...schema import TextContentBlock
from .. import TextChunk, ThinkingChunk, TurnOutput

__all__ = ("MAX_BUFFERED_EVENTS", "STOP_TIMEOUT", "Pipe", "run_in_task")

MAX_BUFFERED_EVENTS: Final = 256
"""Queue entries the producer may run ahead of the consumer (merged text is one entry):
enough that a burst of events never waits on a consumer busy writing to the client, small
enough to bound memory and to keep backpressure (a slow client slows the model stream down
rather than filling memory)."""

STOP_TIMEOUT: Final = 5.0
"""Seconds the generator waits (shielded) for a cancelled producer to finish; pydantic-ai tears
down in milliseconds, and a producer that does not is abandoned rather than hang a turn."""


class _Merged:
    """Plain chunks of one message put one after another: one chunk when taken."""

    __slots__ = ("first", "texts")

    def __init__(self, first: TextChunk | ThinkingChunk, text: str) -> None:
        self.first = first
        self.texts = [text]

    def event(self) -> TurnOutput:
        """The first chunk alone, or one chunk with every text in order."""
        first = self.first
        if len(self.texts) == 1:
            return first
        merged = TextContentBlock(text="".join(self.texts))
        if type(first) is TextChunk:
            return TextChunk(message_id=first.message_id, content=merged)
        return ThinkingChunk(message_id=first.message_id, content=merged)


def _plain_text(event: TurnOutput) -> str | None:
    """The text of a chunk that may merge with its neighbours: plain text, no annotations or
    ``_meta``, so the merged chunk is exactly what a client shows after appending both."""
    if type(event) is TextChunk or type(event) is ThinkingChunk:
        block = event.content
        if type(block) is TextContentBlock and block.annotations is None and block.meta is None:
            return block.text
    return None


class Pipe:
    """The queue between the producer task and the turn's generator.

    The producer :meth:`put` s events in order and may :meth:`wait_handled` for the consumer;
    the generator takes them with :meth:`next` and reports them handled with
    :meth:`mark_handled`.

    Args:
        coalesce: Append a plain chunk to the queued one of the same message (see the module
            docstring); otherwise every event is an entry of its own.
        interval: With ``coalesce``, the least time between two chunks of one message.
    """

    __slots__ = (
        "_barrier",
        "_closed",
        "_coalesce",
        "_interval",
        "_items",
        "_last_id",
        "_last_time",
        "_loop",
        "_now",
        "_open",
        "_ready",
        "_room",
        "handled",
        "sent",
    )

    def __init__(self, *, coalesce: bool = False, interval: float = 0.0) -> None:
        """Start empty (in a running event loop)."""
        self._coalesce = coalesce
        self._interval = interval if coalesce else 0.0
        self._items: deque[TurnOutput | _Merged] = deque()
        # The last entry while more text of its message may be appended to it.
        self._open: _Merged | None = None
        self._closed = False
        self._ready: anyio.Event | None = None  # the consumer waits for a new entry
        self._room: anyio.Event | None = None  # producers wait for room in the queue
        self._barrier: anyio.Event | None = None
        self._last_id: str | None = None  # the message of the last chunk taken, and when
        self._last_time = 0.0
        # The loop itself (pydantic-ai runs on asyncio only): its clock read directly
        # (``anyio.current_time()`` looks the backend up on every call) and its timers.
        self._loop = asyncio.get_running_loop()
        self._now = self._loop.time
        self.sent = 0
        """Events put so far."""
        self.handled = 0
        """Events the consumer has handled so far."""

    # -- the producer's end --------------------------------------------------------------------

    def put_nowait(self, event: TurnOutput) -> bool:
        """Queue ``event`` unless the queue is full; ``False``: nothing was done, :meth:`put`."""
        item: TurnOutput | _Merged = event
        if self._coalesce and (text := _plain_text(event)) is not None:
            assert isinstance(event, TextChunk | ThinkingChunk)
            merged = self._open
            if (
                merged is not None
                and type(merged.first) is type(event)
                and merged.first.message_id == event.message_id
            ):
                merged.texts.append(text)
                self.sent += 1
                return True
            if len(self._items) >= MAX_BUFFERED_EVENTS:
                return False
            item = self._open = _Merged(event, text)
        elif len(self._items) >= MAX_BUFFERED_EVENTS:
            return False
        else:
            self._open = None
        self._items.append(item)
        self.sent += 1
        self._wake()
        return True

    def append_text(self, message_id: str, text: str) -> bool:
        """Append ``text`` to the queued plain text chunk of ``message_id`` if it is still
        open (what :meth:`put_nowait` of that chunk would do, without the chunk being built);
        ``False``: nothing was done."""
        merged = self._open
        if merged is None or type(merged.first) is not TextChunk:
            return False
        if merged.first.message_id != message_id:
            return False
        merged.texts.append(text)
        self.sent += 1
        return True

    async def put(self, event: TurnOutput) -> None:
        """Hand ``event`` to the consumer; waits only while the queue is full."""
        while not self.put_nowait(event):
            if self._room is None:
                self._room = anyio.Event()
            await self._room.wait()

    def close(self) -> None:
        """No more events (the consumer sees the end once the queue is empty)."""
        self._closed = True
        self._wake()

    async def wait_handled(self) -> None:
        """Wait until the consumer has handled every event put so far."""
        while self.handled < self.sent:
            self._barrier = barrier = anyio.Event()
            await barrier.wait()

    # -- the consumer's end --------------------------------------------------------------------

    async def next(self) -> tuple[TurnOutput, int] | None:
        """The next event and how many events put it stands for; ``None`` at the end."""
        items = self._items
        while not items:
            if self._closed:
                return None
            await self._wait_ready()
        head = items[0]
        if type(head) is not _Merged:
            event = self._take()
            assert not isinstance(event, _Merged)
            if type(event) is TextChunk or type(event) is ThinkingChunk:
                self._last_id = event.message_id
                self._last_time = self._now()
            return event, 1
        message_id = head.first.message_id
        if self._interval > 0 and message_id == self._last_id and head is self._open:
            # More of this message may come: wait out the interval since its last chunk, in
            # one wait (not one wake-up per delta); anything else queued ends it at once.
            # A loop timer ends it rather than a cancel scope's deadline: no cancellation
            # raised through the wait once per chunk.
            remaining = self._last_time + self._interval - self._now()
            if remaining > 0:
                timer = self._loop.call_later(remaining, self._wake)
                try:
                    await self._wait_ready()
                finally:
                    timer.cancel()
        self._take()
        self._last_id = message_id
        self._last_time = self._now()
        return head.event(), len(head.texts)

    def mark_handled(self, count: int = 1) -> None:
        """The consumer is back for more: the ``count`` events it was given are handled."""
        self.handled += count
        if self._barrier is not None and self.handled >= self.sent:
            self._barrier.set()
            self._barrier = None

    # -- both ----------------------------------------------------------------------------------

    def _wake(self) -> None:
        if self._ready is not None:
            self._ready.set()
            self._ready = None

    async def _wait_ready(self) -> None:
        """Wait until an entry is queued (not merely appended to) or the pipe is closed."""
        if self._ready is None:
            self._ready = anyio.Event()
        await self._ready.wait()

    def _take(self) -> TurnOutput | _Merged:
        item = self._items.popleft()
        if item is self._open:
            self._open = None
        if self._room is not None:
            self._room.set()
            self._room = None
        return item


async def run_in_task(
    produce: Callable[[Pipe], Awaitable[None]],
    *,
    coalesce: bool = False,
    interval: float = 0.0,
) -> AsyncGenerator[TurnOutput]:
    """Yield what ``produce`` puts into its pipe, ``produce`` running in a task of its own.

    With ``coalesce``, consecutive plain text (or thinking) chunks of one message that are
    still queued when the consumer asks for the next event are merged into one, so a consumer
    that falls behind gets fewer, larger chunks. With an ``interval`` too, a chunk that follows
    one of the same message by less than ``interval`` seconds waits until then for more to
    merge: each message then streams at most one chunk per interval. Any other event ends the
    wait at once, and so does the end of the stream.

    Raises:
        Exception: whatever ``produce`` raised, after every event it put was yielded.
    """
    pipe = Pipe(coalesce=coalesce, interval=interval)

    async def producer() -> None:
        try:
            await produce(pipe)
        finally:
            pipe.close()

    # Not a task-group child: no task group may span this generator's yields (module docstring).
    task = asyncio.get_running_loop().create_task(producer())
    try:
        while (taken := await pipe.next()) is not None:
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

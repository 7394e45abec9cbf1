"""NDJSON messages over a pair of anyio byte streams.

``StreamTransport`` frames messages as UTF-8 JSON lines: it is what stdio and subprocess
transports are made of. Reads are large (64 KiB) and parsed lines are buffered, so a burst of
small notifications costs one system call per read rather than one per message. Writes keep
one queue, so concurrent senders never interleave lines. A line sent while the pipe is idle
is written at once by its sender; with ``run_writer`` running (the connection starts it), a
burst sent without yielding is written with one system call per pipe buffer rather than one
per message.

On asyncio, a pipe is read from the event loop's readiness callback, registered once for as
long as the transport reads (the way asyncio's own pipe transports read), rather than by a
task that registers its interest anew for every read. The callback hands a message straight
to the consumer's direct receiver when there is one (:meth:`StreamTransport.set_direct_receiver`).
Other backends (trio) and streams that are not pipes are read by the receiving task.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from time import perf_counter
from typing import Any

import anyio
import anyio.lowlevel
import orjson
from anyio.abc import ByteReceiveStream, ByteSendStream

from ..errors import ConnectionClosed
from ._fd import FdReceiveStream, FdSendStream
from ._framing import (
    MAX_MESSAGE_BYTES,
    LineDecoder,
    decode_line,
    encode_message,
)

__all__ = ("BURST_WINDOW", "CLOSE_FLUSH_TIMEOUT", "COALESCE_BYTES", "READ_SIZE", "StreamTransport")

#: Bytes asked for per read: one OS pipe buffer's worth.
READ_SIZE = 65536
#: Queued bytes at which a sender stops queueing and writes them itself.
COALESCE_BYTES = 8192
#: How long closing may spend writing out lines still queued.
CLOSE_FLUSH_TIMEOUT = 5.0
#: A line sent within this many seconds of one written directly, with the writer not run
#: since, is part of a burst: it is queued and written with the lines that follow it. A
#: sender this fast is not yielding between lines. On asyncio a line sent before the event
#: loop turned since the last direct write is part of the burst however long its sender
#: took to build it (a streaming agent's batch of chunks, each a few hundred microseconds
#: on a busy machine): one system call, and one wake-up of the reader, per batch.
BURST_WINDOW = 50e-6

_LONG_AGO = float("-inf")

logger = logging.getLogger("accord.transports")

#: What a failed write raises: the peer is gone or the stream was closed.
_WRITE_ERRORS = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class StreamTransport:
    """A message transport over a byte stream pair (newline-delimited JSON).

    Args:
        reader: the stream messages arrive on.
        writer: the stream messages are written to.
        max_message_bytes: the largest line accepted; longer ones become a ``MalformedFrame``.
    """

    def __init__(
        self,
        reader: ByteReceiveStream,
        writer: ByteSendStream,
        *,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._decoder = LineDecoder(max_message_bytes)
        # Lines read but not yet returned: raw (bytes), MalformedFrame, or a message the
        # direct receiver left, already parsed (never bytes: JSON never parses to bytes).
        self._frames: deque[Any] = deque()
        self._eof = False
        self._write_lock = anyio.Lock(fast_acquire=True)
        # A pipe we write with non-blocking system calls: a line that fits goes out at once,
        # without taking the lock, as long as no earlier line is still waiting to be written.
        self._fd_writer = writer if isinstance(writer, FdSendStream) else None
        # A pipe we read with non-blocking system calls (see _read()).
        self._fd_reader = reader if isinstance(reader, FdReceiveStream) else None
        self._read_was_short = False
        # Lines waiting to be written, oldest first (see send() and run_writer()). The lock
        # holder writes them; while it writes a batch, later lines queue here behind it.
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        # Some queued line's send() has already returned (or part of a line is on the wire):
        # closing must still write them out. Lines of sends still waiting need not be.
        self._owed = False
        self._write_error: BaseException | None = None
        self._writer_running = False
        self._wake = anyio.Event()
        # When a line last went out directly (see send()); reset when the writer runs.
        self._last_direct_write = _LONG_AGO
        # On asyncio: a line went out directly and the loop has not turned since (see send()).
        self._in_step_burst = False
        # Reading a pipe on asyncio (see _wait_for_frames()): the loop whose readiness
        # callback reads it, whether that callback is registered, the future the receiving
        # task waits on, and the direct receiver messages are offered to.
        self._read_loop: asyncio.AbstractEventLoop | None = None
        self._loop_reading_failed = False
        self._watching = False
        self._read_waiter: asyncio.Future[None] | None = None
        self._take: Callable[[Any], bool] | None = None

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as a JSON line.

        Without a running :meth:`run_writer`, the line is written before this returns
        (waiting while the pipe is full). With one, a line sent while the pipe is idle is
        still written at once, and no task is woken for it (a lone request pays for one
        system call and, on asyncio, one loop callback). Lines that follow it within
        ``BURST_WINDOW``, or on asyncio before the event loop turns (a sender that is not
        yielding between them), are queued and written together: by the writer
        task as soon as the sender yields, or by the sender itself once ``COALESCE_BYTES``
        are waiting (waiting while the pipe is full, which is the backpressure).

        A send cancelled while it waits may still have its line written later (never half of
        it). Over a stream that is not a pipe, cancelling a write in progress ends the
        transport, since how much of it was written is unknown.

        Raises:
            ConnectionClosed: the peer is gone (possibly noticed by an earlier write).
        """
        data = encode_message(message)
        if self._write_error is not None:
            raise self._closed_error()
        if self._pending or self._write_lock.locked():
            # Earlier lines are queued or being written: this one goes after them.
            self._queue(data)
            if not self._writer_running:
                await self._flush()
            elif self._pending_bytes >= COALESCE_BYTES:
                await self._flush()  # backpressure: wait while the pipe is full
                self._last_direct_write = perf_counter()  # the burst goes on
            else:
                self._owed = True
                # The lock holder writes it; should none be left, the writer does.
                self._wake_writer()
            return
        if self._writer_running:
            now = perf_counter()
            if (
                self._in_step_burst
                or now - self._last_direct_write < BURST_WINDOW
                or self._fd_writer is None
            ):
                # A burst: queue it; the writer writes the lot once the sender yields.
                self._queue(data)
                self._owed = True
                self._wake_writer()
                return
            # Idle: write at once, with no task to wake (the lone request's path).
            self._last_direct_write = now
            self._open_step_burst()
        fd_writer = self._fd_writer
        if fd_writer is not None:
            try:
                written = fd_writer.write_nowait(data)
            except _WRITE_ERRORS as exc:
                raise self._record_error(exc) from exc
            if written == len(data):
                return
            if written:
                self._owed = True  # part of the line is on the wire: closing must end it
            data = data[written:]
        # The pipe is full (or not a pipe): the rest must go out before any later line.
        self._queue(data)
        if self._writer_running:
            self._owed = True  # the writer writes the rest
            self._wake_writer()
            return
        await self._flush()

    async def run_writer(self) -> None:
        """Write queued lines in the background until cancelled.

        Optional: `Connection` runs it in its task group, so that a burst of messages sent
        without yielding costs one system call per pipe buffer rather than one per message.
        It returns once a write fails (the next :meth:`send` raises ``ConnectionClosed``).
        Lines still queued when it stops are written by the next send or by :meth:`aclose`.
        """
        if self._writer_running:
            raise RuntimeError("run_writer() is already running for this transport")
        self._writer_running = True
        if self._pending:
            self._wake_writer()  # left over from before (a send cancelled mid-write)
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                # The sender has yielded: its next line starts a new burst.
                self._last_direct_write = _LONG_AGO
                if self._pending:
                    try:
                        await self._flush()
                    except ConnectionClosed:
                        return  # recorded: the next send raises it
        finally:
            self._writer_running = False
            self._last_direct_write = _LONG_AGO

    def _open_step_burst(self) -> None:
        """On asyncio, make later lines part of this burst until the loop turns: a callback
        scheduled now runs only after every task ready in this iteration has yielded."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio: the time window alone tells a burst
            return
        self._in_step_burst = True
        loop.call_soon(self._end_step_burst)

    def _end_step_burst(self) -> None:
        self._in_step_burst = False

    def _wake_writer(self) -> None:
        wake = self._wake
        if not wake.is_set():
            wake.set()

    def _queue(self, data: bytes) -> None:
        self._pending.append(data)
        self._pending_bytes += len(data)

    async def _flush(self) -> None:
        """Write everything queued, in order, waiting while the pipe is full.

        Raises:
            ConnectionClosed: a write failed, this one or an earlier one (whose batch may
                have held lines of the caller's that are therefore lost).
        """
        async with self._write_lock:
            while True:
                if self._write_error is not None:
                    raise self._closed_error()
                pending = self._pending
                if not pending:
                    self._owed = False
                    return
                batch = pending[0] if len(pending) == 1 else b"".join(pending)
                self._pending = []
                self._pending_bytes = 0
                await self._write_batch(batch)

    async def _write_batch(self, batch: bytes) -> None:
        """Write one batch whole; the lock is held.

        Cancelled while the pipe is full, it puts back what is left at the head of the queue:
        the lines in it may belong to sends that have returned, and the next flush must end
        the line that is half on the wire before anything else is written.
        """
        fd_writer = self._fd_writer
        if fd_writer is None:
            await self._write_to_stream(batch)
            return
        view = memoryview(batch)
        try:
            while view:
                written = fd_writer.write_nowait(view)
                if written:
                    view = view[written:]
                else:
                    await fd_writer.wait_writable()
        except _WRITE_ERRORS as exc:
            raise self._record_error(exc) from exc
        except BaseException:
            if view:
                self._pending.insert(0, bytes(view))
                self._pending_bytes += len(view)
                if len(view) < len(batch):
                    self._owed = True  # part of a line is on the wire: close must end it
                if self._writer_running:
                    self._wake_writer()  # the lines queued behind us must not be stranded
            raise

    async def _write_to_stream(self, batch: bytes) -> None:
        """Write one batch to a stream that is not a pipe; the lock is held.

        How much of a cancelled write reached such a stream is unknown, so a cancelled write
        ends the transport rather than risk a torn or repeated line.
        """
        try:
            await self._writer.send(batch)
        except _WRITE_ERRORS as exc:
            raise self._record_error(exc) from exc
        except BaseException:
            self._write_error = anyio.BrokenResourceError("a write was cancelled part-way")
            raise

    async def _flush_before_close(self) -> None:
        """Write out the lines sends were promised, bounded by ``CLOSE_FLUSH_TIMEOUT``.

        Then refuse further sends: they raise ``ConnectionClosed`` instead of queueing.
        """
        if self._owed and self._write_error is None:
            with anyio.move_on_after(CLOSE_FLUSH_TIMEOUT, shield=True):
                try:
                    await self._flush()
                except ConnectionClosed:
                    pass
        if self._write_error is None:
            self._write_error = anyio.ClosedResourceError("the transport was closed")

    def _record_error(self, exc: BaseException) -> ConnectionClosed:
        self._write_error = exc
        return self._closed_error()

    def _closed_error(self) -> ConnectionClosed:
        return ConnectionClosed(f"cannot write to the peer: {self._write_error!r}")

    async def receive(self) -> Any:
        """Return the next message (or ``MalformedFrame``); ``EndOfStream`` at the end."""
        frames = self._frames
        while not frames:
            if self._eof:
                raise anyio.EndOfStream
            if self._fd_reader is not None and self._reading_from_loop():
                await self._wait_for_frames()
                continue
            try:
                chunk = await self._read()
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._end_reading()
                continue
            frames.extend(self._decoder.feed(chunk))
        frame = frames.popleft()
        if type(frame) is bytes:
            return decode_line(frame)
        return frame  # a MalformedFrame, or a message already parsed (see _offer())

    async def receive_batch(self, max_messages: int) -> list[Any]:
        """Return the messages already read (at least one, at most ``max_messages``).

        The connection's fast path: one call per read instead of one per message.
        Raises ``EndOfStream`` at the end, like :meth:`receive`.
        """
        first = await self.receive()
        frames = self._frames
        if not frames:
            return [first]
        batch = [first]
        append = batch.append
        popleft = frames.popleft
        loads = orjson.loads
        for _ in range(min(len(frames), max_messages - 1)):
            frame = popleft()
            if type(frame) is bytes:
                try:
                    append(loads(frame))  # decode_line() inlined: this runs per message
                    continue
                except orjson.JSONDecodeError:
                    append(decode_line(frame))  # the MalformedFrame, with its reason
                    continue
            append(frame)
        return batch

    def set_direct_receiver(self, take: Callable[[Any], bool] | None) -> None:
        """Offer each message to ``take`` as it is read (see ``DirectReceiveTransport``).

        Only a pipe read on asyncio reads from the event loop's callback; elsewhere messages
        are read by the receiving task and ``take`` is never called.
        """
        self._take = take

    def _reading_from_loop(self) -> bool:
        """Whether the pipe is read from this asyncio loop's readiness callback.

        Decided at the first read under each loop: on asyncio with a loop that can watch a
        descriptor (not on trio, where this returns ``False`` and the task reads).
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio
            return False
        if loop is self._read_loop:
            return not self._loop_reading_failed
        self._stop_watching()
        self._read_loop = loop
        self._loop_reading_failed = False
        return True

    async def _wait_for_frames(self) -> None:
        """Wait until the readiness callback has queued frames or seen the end of the pipe."""
        loop = self._read_loop
        fd_reader = self._fd_reader
        assert loop is not None and fd_reader is not None
        if not self._watching:
            if fd_reader.closed:
                self._end_reading()
                return
            try:
                loop.add_reader(fd_reader.fileno(), self._on_readable)
            except (NotImplementedError, PermissionError):
                # A loop that cannot watch descriptors (Windows), or a descriptor that epoll
                # refuses (a regular file): the receiving task reads it instead.
                self._loop_reading_failed = True
                return
            self._watching = True
        waiter = loop.create_future()
        self._read_waiter = waiter
        try:
            await waiter
        finally:
            self._read_waiter = None

    def _on_readable(self) -> None:
        """The loop's readiness callback: read one chunk, offer or queue its frames."""
        frames = self._frames
        fd_reader = self._fd_reader
        if frames or fd_reader is None:
            # The consumer has not caught up: read on once it waits again (backpressure).
            self._stop_watching()
            return
        try:
            chunk = fd_reader.read_nowait(READ_SIZE)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._end_reading()
            return
        if chunk is None:
            return
        # The loop is turning, so whoever sent last has yielded: a new burst may start.
        self._last_direct_write = _LONG_AGO
        found = self._decoder.feed(chunk)
        if self._take is not None and self._read_waiter is not None:
            found = self._offer(found, self._take)
        if found:
            frames.extend(found)
            self._wake_receiver()

    def _offer(self, found: list[Any], take: Callable[[Any], bool]) -> list[Any]:
        """Hand frames to ``take`` in order; return those it left, from the first one left."""
        loads = orjson.loads
        for index, frame in enumerate(found):
            if type(frame) is not bytes:
                return found[index:]  # a MalformedFrame: receive() returns it
            try:
                message = loads(frame)
            except orjson.JSONDecodeError:
                return found[index:]  # receive() turns it into a MalformedFrame
            try:
                taken = take(message)
            except Exception:
                logger.exception("direct receiver failed; the message goes to receive()")
                taken = False
            if not taken:
                found[index] = message
                return found[index:]
        return []

    def _wake_receiver(self) -> None:
        waiter = self._read_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _end_reading(self) -> None:
        """The pipe ended, failed or was closed: a last unterminated line still counts."""
        self._eof = True
        self._frames.extend(self._decoder.end_of_stream())
        self._stop_watching()
        self._wake_receiver()

    def _stop_watching(self) -> None:
        if self._watching:
            self._watching = False
            loop = self._read_loop
            if loop is not None and not loop.is_closed() and self._fd_reader is not None:
                loop.remove_reader(self._fd_reader.fileno())

    async def _close_reader(self) -> None:
        """Stop reading and close the reading stream (a receiver waiting sees the end)."""
        if not self._eof:
            self._end_reading()
        await self._reader.aclose()

    async def _read(self) -> bytes:
        """Read the next chunk, having yielded to the other tasks once since the last read.

        A pipe's last read came back short: it is most likely empty, so this waits for it
        to become readable (which yields) instead of trying a read that would fail. After
        a full read, more is probably waiting: this yields (so a peer that keeps the pipe
        full cannot starve the other tasks), then reads. Either way, the tasks that the
        previous read's messages woke (the caller of a request whose answer came in, the
        handler of a request) run before this reader spends time on the next read.
        """
        fd_reader = self._fd_reader
        if fd_reader is None:
            chunk = await self._reader.receive(READ_SIZE)
            await anyio.lowlevel.checkpoint()
            return chunk
        if self._read_was_short:
            await fd_reader.wait_readable()
        else:
            await anyio.lowlevel.checkpoint()
        while True:
            chunk = fd_reader.read_nowait(READ_SIZE)
            if chunk is not None:
                self._read_was_short = len(chunk) < READ_SIZE
                # This task ran, so whoever sent last has yielded: a new burst may start.
                self._last_direct_write = _LONG_AGO
                return chunk
            await fd_reader.wait_readable()

    @property
    def buffered_bytes(self) -> int:
        """Bytes read but not yet returned as messages."""
        return self._decoder.buffered_bytes + sum(
            len(frame) for frame in self._frames if isinstance(frame, bytes)
        )

    async def aclose(self) -> None:
        """Write out what is queued (bounded), then close both streams."""
        try:
            await self._flush_before_close()
            await self._writer.aclose()
        finally:
            await self._close_reader()

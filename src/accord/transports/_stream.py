"""NDJSON messages over a pair of anyio byte streams.

``StreamTransport`` frames messages as UTF-8 JSON lines: it is what stdio and subprocess
transports are made of. Reads are large (64 KiB) and parsed lines are buffered, so a burst of
small notifications costs one system call per read rather than one per message. Writes are
serialized by a lock so concurrent senders never interleave lines.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

from ..errors import ConnectionClosed
from ..jsonrpc._framing import (
    MAX_MESSAGE_BYTES,
    LineDecoder,
    MalformedFrame,
    decode_line,
    encode_message,
)
from ._fd import FdSendStream

__all__ = ("READ_SIZE", "StreamTransport")

#: Bytes asked for per read: one OS pipe buffer's worth.
READ_SIZE = 65536


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
        self._frames: deque[bytes | MalformedFrame] = deque()
        self._eof = False
        self._write_lock = anyio.Lock(fast_acquire=True)
        # A pipe we write with non-blocking system calls: lines that fit go out at once,
        # without taking the lock, as long as no earlier line is still waiting to be written.
        self._fd_writer = writer if isinstance(writer, FdSendStream) else None
        self._writers_waiting = 0

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as a JSON line."""
        data = encode_message(message)
        try:
            fd_writer = self._fd_writer
            if fd_writer is not None and not self._writers_waiting:
                written = fd_writer.write_nowait(data)
                if written == len(data):
                    return
                data = data[written:]
                # The rest must go out before any later line: the writers behind us queue up.
                self._writers_waiting += 1
                try:
                    async with self._write_lock:
                        await self._writer.send(data)
                finally:
                    self._writers_waiting -= 1
                return
            self._writers_waiting += 1
            try:
                async with self._write_lock:
                    await self._writer.send(data)
            finally:
                self._writers_waiting -= 1
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise ConnectionClosed(f"cannot write to the peer: {exc!r}") from exc

    async def receive(self) -> Any:
        """Return the next message (or ``MalformedFrame``); ``EndOfStream`` at the end."""
        frames = self._frames
        while not frames:
            if self._eof:
                raise anyio.EndOfStream
            try:
                chunk = await self._reader.receive(READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._eof = True
                frames.extend(self._decoder.end_of_stream())
                continue
            frames.extend(self._decoder.feed(chunk))
            # A read that found data did not yield; yield once per read so a peer that
            # keeps the pipe full cannot starve the other tasks.
            await anyio.lowlevel.checkpoint()
        frame = frames.popleft()
        if isinstance(frame, MalformedFrame):
            return frame
        return decode_line(frame)

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
        while frames and len(batch) < max_messages:
            frame = frames.popleft()
            append(frame if isinstance(frame, MalformedFrame) else decode_line(frame))
        return batch

    @property
    def buffered_bytes(self) -> int:
        """Bytes read but not yet returned as messages."""
        return self._decoder.buffered_bytes + sum(
            len(frame) for frame in self._frames if isinstance(frame, bytes)
        )

    async def aclose(self) -> None:
        """Close both streams."""
        try:
            await self._writer.aclose()
        finally:
            await self._reader.aclose()

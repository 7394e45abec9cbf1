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

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as a JSON line."""
        data = encode_message(message)
        try:
            async with self._write_lock:
                await self._writer.send(data)
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

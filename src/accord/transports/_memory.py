"""An in-memory transport pair, for running an agent and a client in one process.

Messages pass as Python objects without text serialization, through bounded anyio memory
streams: a full buffer makes the sender wait (backpressure) and closing one end makes the other
end's ``receive`` raise ``EndOfStream``, exactly as with a pipe. The shared transport test suite
(``accord.testing.check_transport``) runs over this pair and over real pipes alike.
"""

from __future__ import annotations

from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..errors import ConnectionClosed

__all__ = ("MEMORY_BUFFER_MESSAGES", "MemoryTransport", "memory_transport_pair")

#: Messages one direction may hold before the sender waits: about what a 64 KiB OS pipe
#: holds of small updates, so the in-memory pair and stdio apply backpressure alike.
MEMORY_BUFFER_MESSAGES = 256


class MemoryTransport:
    """One end of an in-memory pair; build pairs with :func:`memory_transport_pair`."""

    def __init__(
        self,
        send_stream: MemoryObjectSendStream[dict[str, Any]],
        receive_stream: MemoryObjectReceiveStream[dict[str, Any]],
    ) -> None:
        self._send_stream = send_stream
        self._receive_stream = receive_stream

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message to the other end."""
        try:
            try:
                self._send_stream.send_nowait(message)
            except anyio.WouldBlock:
                await self._send_stream.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise ConnectionClosed("the other end of the in-memory transport is closed") from exc

    async def receive(self) -> dict[str, Any]:
        """Receive the next message; raises ``anyio.EndOfStream`` once the peer closed."""
        try:
            try:
                return self._receive_stream.receive_nowait()
            except anyio.WouldBlock:
                return await self._receive_stream.receive()
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None

    async def receive_batch(self, max_messages: int) -> list[dict[str, Any]]:
        """Receive the messages waiting (at least one, at most ``max_messages``)."""
        batch = [await self.receive()]
        receive_nowait = self._receive_stream.receive_nowait
        while len(batch) < max_messages:
            try:
                batch.append(receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
        return batch

    async def aclose(self) -> None:
        """Close this end."""
        await self._send_stream.aclose()
        await self._receive_stream.aclose()


def memory_transport_pair(
    max_buffered_messages: int = MEMORY_BUFFER_MESSAGES,
) -> tuple[MemoryTransport, MemoryTransport]:
    """Return two connected transports: what one sends, the other receives."""
    a_send, b_receive = anyio.create_memory_object_stream[dict[str, Any]](max_buffered_messages)
    b_send, a_receive = anyio.create_memory_object_stream[dict[str, Any]](max_buffered_messages)
    return MemoryTransport(a_send, a_receive), MemoryTransport(b_send, b_receive)

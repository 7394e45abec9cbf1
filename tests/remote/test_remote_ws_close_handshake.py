"""WebSocket close handshakes that never complete: the server frees the connection anyway.

The server never waits for the peer's half of a close handshake. A client that sends its
close and then neither reads nor closes gets the answering close and the socket shut; a client
that never answers the server's close (its heartbeat pings unanswered, then ``1001``) has the
socket shut right after the close frame. A close frame that cannot even be written (the peer
reads nothing and the socket is full) is given up after ``CLOSE_WRITE_TIMEOUT`` and the socket
closed. On real loopback sockets the connection's slot under ``max_connections_per_token``
comes back and other clients are served meanwhile; the write bound is checked on a peer in
memory that takes no byte.
"""

from __future__ import annotations

import logging
import socket
import struct
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import pytest
from _remote_support import UPGRADE, request_bytes
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT
from wsproto.connection import Connection, ConnectionType

from accord.client import connect
from accord.errors import ConnectionClosed
from accord.remote import ServerLimits
from accord.remote._websocket import CLOSE_WRITE_TIMEOUT, WebSocketTransport
from accord.testing import Say

pytestmark = pytest.mark.anyio

_CLOSE, _TEXT = 8, 1


def _frame(opcode: int, payload: bytes) -> bytes:
    """A masked client frame (zero mask key, so the payload goes as it is); short payloads."""
    assert len(payload) < 126
    return bytes((0x80 | opcode, 0x80 | len(payload))) + b"\0\0\0\0" + payload


class _Closes(logging.Handler):
    """Sets an event per WebSocket connection the server logs as closed (its slot is free
    then: the count drops right after that line, with no wait between)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0
        self.changed = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("WebSocket connection ") and message.endswith(" closed"):
            self.count += 1
            self.changed.set()
            self.changed = anyio.Event()

    async def wait_for(self, count: int) -> None:
        while self.count < count:
            await self.changed.wait()


@asynccontextmanager
async def _watching() -> AsyncGenerator[_Closes]:
    logger = logging.getLogger("accord.remote")
    closes = _Closes()
    level = logger.level
    logger.addHandler(closes)
    logger.setLevel(logging.INFO)
    try:
        yield closes
    finally:
        logger.removeHandler(closes)
        logger.setLevel(level)


async def _upgraded(port: int) -> anyio.abc.SocketStream:
    """A raw upgraded socket with a small receive buffer (no kernel cushion)."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    await stream.send(request_bytes("GET", headers=UPGRADE))
    head = b""
    while b"\r\n\r\n" not in head:
        head += await stream.receive()
    assert head.startswith(b"HTTP/1.1 101")
    return stream


async def _read_to_end(stream: anyio.abc.SocketStream) -> bytes:
    """Everything the server sent, up to its end of the stream."""
    data = b""
    while True:
        try:
            data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
            return data


def _close_code(data: bytes) -> int:
    """The code of the server's (unmasked) close frame in ``data``."""
    at = 0
    while at + 2 <= len(data):
        opcode, size = data[at] & 0x0F, data[at + 1] & 0x7F
        at += 2
        if size == 126:
            size = int.from_bytes(data[at : at + 2], "big")
            at += 2
        elif size == 127:
            size = int.from_bytes(data[at : at + 8], "big")
            at += 8
        if opcode == _CLOSE:
            return struct.unpack("!H", data[at : at + 2])[0]
        at += size
    raise AssertionError(f"no close frame in {data[:80]!r}")


async def _served(url: str) -> str:
    async with connect(url, token=TOKEN, reconnect=False) as conn:
        return (await (await conn.new_session()).prompt("hi")).text


async def test_a_client_that_sends_its_close_then_neither_reads_nor_closes_is_freed() -> None:
    limits = ServerLimits(max_connections_per_token=2)
    async with (
        _watching() as closes,
        served_agent([[Say("during")], [Say("after")]], limits=limits) as server,
    ):
        with anyio.fail_after(TIMEOUT):
            hanging = await _upgraded(server.port)
            hello = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
            await hanging.send(_frame(_TEXT, hello))
            # The close: the client's half of the handshake, then nothing read, nothing closed.
            await hanging.send(_frame(_CLOSE, struct.pack("!H", 1000) + b"bye"))
            # The second slot serves another client meanwhile.
            during = await _served(server.url())
            await closes.wait_for(2)  # the hanging connection and that client's: both freed
            after = await _served(server.url())
            sent = await _read_to_end(hanging)
            await hanging.aclose()
    assert (during, after) == ("during", "after")
    assert _close_code(sent) == 1000  # the answer to its close, then the end of the stream


async def test_a_client_that_never_answers_the_servers_close_nor_reads_is_freed() -> None:
    """The server closes (``1001``: its heartbeat pings unanswered) and shuts the socket at
    once: it does not wait for a close the client never sends."""
    limits = ServerLimits(max_connections_per_token=1, heartbeat_interval=0.2)
    async with (
        _watching() as closes,
        served_agent([[Say("after")]], limits=limits) as server,
    ):
        with anyio.fail_after(TIMEOUT):
            hanging = await _upgraded(server.port)  # then silent: no pong, no close, no read
            await closes.wait_for(1)
            after = await _served(server.url())  # the one slot is free again
            sent = await _read_to_end(hanging)
            await hanging.aclose()
    assert after == "after"
    assert _close_code(sent) == 1001


class _DeafPeer(anyio.abc.ByteStream):
    """A peer that takes no byte (every write waits until the stream is closed) and sends
    ``incoming`` once (after ``stuck`` if it is given: a write is waiting), then nothing."""

    def __init__(self, incoming: bytes = b"", *, after_stuck: bool = False) -> None:
        self.incoming = incoming
        self.after_stuck = after_stuck
        self.stuck = anyio.Event()
        self.gone = anyio.Event()

    async def send(self, item: bytes) -> None:
        self.stuck.set()
        await self.gone.wait()
        raise anyio.ClosedResourceError

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self.after_stuck:
            await self.stuck.wait()
        if self.incoming:
            data, self.incoming = self.incoming, b""
            return data
        await self.gone.wait()
        raise anyio.EndOfStream

    async def send_eof(self) -> None:
        self.gone.set()

    async def aclose(self) -> None:
        self.gone.set()


def _transport(peer: _DeafPeer) -> WebSocketTransport:
    return WebSocketTransport(peer, Connection(ConnectionType.SERVER), max_message_bytes=4096)


async def test_a_close_frame_the_peer_never_takes_is_given_up_after_the_close_timeout() -> None:
    peer = _DeafPeer()
    transport = _transport(peer)
    with anyio.fail_after(TIMEOUT):
        began = anyio.current_time()
        await transport.aclose()
        took = anyio.current_time() - began
    assert peer.gone.is_set()  # the socket is closed all the same
    assert transport.closed
    assert took >= CLOSE_WRITE_TIMEOUT * 0.9  # it did wait for the write, up to the bound


async def test_the_answer_to_a_peers_close_that_it_never_takes_is_given_up_too() -> None:
    """The peer sends its close and reads nothing: the answering close is not written; the
    socket is closed after the bound."""
    peer = _DeafPeer(_frame(_CLOSE, struct.pack("!H", 1000)))
    transport = _transport(peer)
    with anyio.fail_after(TIMEOUT):
        began = anyio.current_time()
        with pytest.raises(anyio.EndOfStream):
            await transport.receive()
        took = anyio.current_time() - began
    assert peer.gone.is_set()
    assert transport.closed
    assert took >= CLOSE_WRITE_TIMEOUT * 0.9


async def test_a_peers_close_while_a_write_is_stuck_ends_the_connection() -> None:
    """The peer stopped reading mid-message (the write waits on it), then sends its close:
    the answer is not waited for behind the stuck write; the socket is closed."""
    peer = _DeafPeer(_frame(_CLOSE, struct.pack("!H", 1000)), after_stuck=True)
    transport = _transport(peer)
    stuck: list[BaseException] = []

    async def send_stuck() -> None:
        try:
            await transport.send({"jsonrpc": "2.0", "method": "x", "params": {"t": "x" * 2**20}})
        except ConnectionClosed as exc:
            stuck.append(exc)

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(send_stuck)
            with pytest.raises(anyio.EndOfStream):
                await transport.receive()
    assert peer.gone.is_set()
    assert transport.closed
    assert len(stuck) == 1

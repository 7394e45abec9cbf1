"""A WebSocket client that stops reading during a 50 MB turn: bounded memory, then 1008.

The agent streams 50 chunks of 1 MiB; the client reads its prompt's first bytes, then
nothing. The server's write queue makes the agent wait past ``WRITE_HIGH_WATER`` (the
backpressure), so what it holds stays a few megabytes, not the turn's 50; once the socket
has taken nothing for a whole heartbeat interval the connection is closed with ``1008`` and
the log line ``the peer stopped reading``. Another client is served meanwhile. Real loopback
sockets; the bytes held are read off the server's own transport.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import cast

import anyio
import anyio.abc
import orjson
import pytest
from _remote_support import UPGRADE, raw_request, request_bytes
from _remote_support import event_stream as _event_stream
from _remote_support import next_event as _next_event
from _remote_support import post_bytes as _post_bytes
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.errors import ConnectionClosed
from accord.remote import ServerLimits
from accord.testing import Say

pytestmark = pytest.mark.anyio

#: Heartbeat interval under test (the default is 20 s): the stall is found after one or two;
#: long enough that on a loaded machine the turn is streaming by the second.
_INTERVAL = 2.0

_MIB = 1024 * 1024

#: The turn: 50 chunks of 1 MiB (one string object, so the script itself costs 1 MiB).
_TURN = Say(pieces=("x" * _MIB,) * 50)


def _text_frame(message: dict[str, object]) -> bytes:
    """A masked client text frame (zero mask key, so the payload goes as it is)."""
    payload = orjson.dumps(message)
    size = len(payload)
    if size < 126:
        head = bytes((0x81, 0x80 | size))
    elif size < 65536:
        head = bytes((0x81, 0x80 | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((0x81, 0x80 | 127)) + size.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


class _Reader:
    """Reads the server's unmasked text frames off a raw socket, answering its pings.

    While the test reads (before it stalls) the heartbeat is answered, so the connection is
    closed for not reading, never for a ping that went unanswered while nothing waited (a
    slow setup on a loaded machine once passed two heartbeats: closed ``1001``, no stall).
    """

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def _need(self, n: int) -> None:
        while len(self.buffer) < n:
            self.buffer += await self.stream.receive()

    async def message(self) -> dict[str, object]:
        await self._need(2)
        first, size, at = self.buffer[0], self.buffer[1] & 0x7F, 2
        if size == 126:
            await self._need(4)
            size, at = int.from_bytes(self.buffer[2:4], "big"), 4
        elif size == 127:
            await self._need(10)
            size, at = int.from_bytes(self.buffer[2:10], "big"), 10
        await self._need(at + size)
        payload, self.buffer = self.buffer[at : at + size], self.buffer[at + size :]
        if first & 0x0F == 0x9:  # the heartbeat ping: a masked pong with its payload
            await self.stream.send(bytes((0x8A, 0x80 | len(payload))) + b"\0\0\0\0" + payload)
            return await self.message()
        return orjson.loads(payload)

    async def answer(self, request_id: int) -> dict[str, object]:
        while True:
            message = await self.message()
            if message.get("id") == request_id:
                return message


def _buffered(transport: object) -> int:
    """The server transport's ``buffered_bytes`` (the WebSocket transport's own count)."""
    value = getattr(transport, "buffered_bytes", None)
    assert isinstance(value, int), f"{type(transport).__name__} does not count its bytes"
    return value


def _closed(transport: object) -> bool:
    """Whether the server transport is closed (its own ``closed``)."""
    return bool(getattr(transport, "closed", False))


async def test_a_client_that_stops_reading_mid_turn_holds_a_bounded_amount_then_is_closed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    limits = ServerLimits(heartbeat_interval=_INTERVAL)
    peak = 0
    other = ""
    async with served_agent([[_TURN], [Say("served")]], limits=limits) as server:
        with caplog.at_level(logging.INFO, logger="accord.remote"), anyio.fail_after(TIMEOUT):
            stream = await anyio.connect_tcp("127.0.0.1", server.port)
            raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # no kernel cushion
            await stream.send(request_bytes("GET", headers=UPGRADE))
            reader = _Reader(stream)
            while b"\r\n\r\n" not in reader.buffer:
                reader.buffer += await stream.receive()
            head, _, reader.buffer = reader.buffer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 101")
            hello: dict[str, object] = {"protocolVersion": 1, "clientCapabilities": {}}
            await stream.send(
                _text_frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
            )
            await reader.answer(0)
            new: dict[str, object] = {"cwd": str(tmp_path), "mcpServers": []}
            await stream.send(
                _text_frame({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new})
            )
            created = await reader.answer(1)
            result = created["result"]
            assert isinstance(result, dict)
            prompt: dict[str, object] = {
                "sessionId": result["sessionId"],
                "prompt": [{"type": "text", "text": "go"}],
            }
            await stream.send(
                _text_frame(
                    {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt}
                )
            )
            stalled = server.served[0]
            # The turn's first update read (the heartbeat answered till then): the turn is
            # under way. Not its first chunk: 1 MiB through a 4 KiB window takes longer than
            # a heartbeat interval, and rightly ends the connection as one that reads too slow.
            while (await reader.message()).get("method") != "session/update":
                pass
            # From here the client reads nothing.

            async def watch() -> None:
                nonlocal peak
                while not _closed(stalled):
                    peak = max(peak, _buffered(stalled))
                    await anyio.sleep(0.005)

            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                async with connect(server.url(), token=TOKEN, reconnect=False) as conn:
                    other = (await (await conn.new_session()).prompt("hi")).text
            await stream.aclose()
    assert other == "served"
    # The queue's high water, one chunk over it and one write under way: a few MiB of 50.
    assert 0 < peak <= 5 * _MIB, peak
    assert any("(1008): the peer stopped reading" in r.getMessage() for r in caplog.records)


class _TricklingPeer(anyio.abc.ByteStream):
    """A peer that takes one write every ``pause`` seconds and never sends a byte (no pong)."""

    def __init__(self, pause: float) -> None:
        self.pause = pause
        self.taken = 0
        self._gone = anyio.Event()

    async def send(self, item: bytes) -> None:
        await anyio.sleep(self.pause)
        self.taken += len(item)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await self._gone.wait()
        raise anyio.EndOfStream

    async def send_eof(self) -> None:
        self._gone.set()

    async def aclose(self) -> None:
        self._gone.set()


async def test_a_peer_that_reads_slowly_and_never_answers_the_ping_is_closed_1008(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The flaky case of the test above, made the rule: the socket takes a slice well within
    every heartbeat interval (so it never sits a whole interval unwritten), yet the ping waits
    behind the frames and is never answered. The peer does not read what it is sent: closed
    ``1008`` with ``the peer stopped reading``, never ``1001`` (once the verdict of whichever
    check came first, as the load on the machine decided)."""
    from wsproto.connection import Connection, ConnectionType

    from accord.remote._websocket import WebSocketTransport

    interval = 0.5
    peer = _TricklingPeer(pause=interval / 10)
    transport = WebSocketTransport(peer, Connection(ConnectionType.SERVER), max_message_bytes=_MIB)
    chunk = {"jsonrpc": "2.0", "method": "x", "params": {"text": "x" * 100_000}}

    async def send_until_closed() -> None:
        while not transport.closed:
            try:
                await transport.send(chunk)
            except ConnectionClosed:
                return

    with caplog.at_level(logging.INFO, logger="accord.remote"), anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            # The sender runs before the heartbeat starts: under load the first two heartbeats
            # could otherwise pass before the sender queued anything (then a silent, unanswering
            # peer is rightly taken to be gone, 1001: not the case under test).
            await transport.send(chunk)
            tg.start_soon(send_until_closed)
            tg.start_soon(transport.keepalive, interval, 10 * TIMEOUT)
    closes = [r.getMessage() for r in caplog.records if "closing a WebSocket" in r.getMessage()]
    assert len(closes) == 1, closes
    assert "(1008): the peer stopped reading" in closes[0], closes
    assert peer.taken > _MIB  # it did read: slowly, never a whole interval without a write


# ---------------------------------------------------------------------- Streamable HTTP


async def _http_session(port: int, cwd: Path) -> tuple[str, str, anyio.abc.SocketStream]:
    """A Streamable HTTP connection with one new session: its ids and its own GET stream."""
    hello: dict[str, object] = {"protocolVersion": 1, "clientCapabilities": {}}
    initialize: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": hello,
    }
    answer = await raw_request(port, _post_bytes(None, initialize))
    assert answer.status == 200
    cid = answer.headers["acp-connection-id"]
    own = await _event_stream(port, cid, None)
    new: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/new",
        "params": {"cwd": str(cwd), "mcpServers": []},
    }
    assert (await raw_request(port, _post_bytes(cid, new))).status == 202
    created = await _next_event(own, bytearray())
    result = created["result"]
    assert isinstance(result, dict)
    sid = cast("dict[str, object]", result)["sessionId"]
    assert isinstance(sid, str)
    return cid, sid, own


def _prompt(sid: str) -> dict[str, object]:
    params: dict[str, object] = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
    return {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": params}


async def _peak_while_open(connection: object, served: str, port: int, peak: list[int]) -> str:
    """Watch ``connection``'s bytes till it closes while another client is served (what it
    held when it closed counts too: a close keeps its queues till the connection is gone)."""

    async def watch() -> None:
        while not _closed(connection):
            peak[0] = max(peak[0], _buffered(connection))
            await anyio.sleep(0.005)
        peak[0] = max(peak[0], _buffered(connection))

    text = ""
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        url = f"http://127.0.0.1:{port}/acp"
        async with connect(url, token=TOKEN, reconnect=False) as conn:
            text = (await (await conn.new_session()).prompt("hi")).text
    assert text == served
    return text


async def test_a_streamable_http_client_that_stops_reading_mid_turn_is_bounded_then_closed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    limits = ServerLimits(heartbeat_interval=_INTERVAL)
    peak = [0]
    async with served_agent([[_TURN], [Say("served")]], limits=limits) as server:
        with caplog.at_level(logging.INFO, logger="accord.remote"), anyio.fail_after(TIMEOUT):
            cid, sid, own = await _http_session(server.port, tmp_path)
            stalled_stream = await _event_stream(server.port, cid, sid, rcvbuf=4096)
            assert (
                await raw_request(server.port, _post_bytes(cid, _prompt(sid), sid))
            ).status == 202
            # From here the client reads nothing of the session's stream.
            await _peak_while_open(server.served[0], "served", server.port, peak)
            await stalled_stream.aclose()
            await own.aclose()
    # The stream's high water and one event over it, one write of at most as much under
    # way: about 2 MiB of the turn's 50, 4 MiB at the very most.
    assert 0 < peak[0] <= 4 * _MIB + 1024, peak
    assert any("the peer stopped reading" in r.getMessage() for r in caplog.records)


async def test_a_session_stream_no_get_reads_holds_its_byte_bound_then_the_connection_closes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bound = 3 * _MIB
    limits = ServerLimits(sse_buffer_bytes=bound)
    peak = [0]
    async with served_agent([[_TURN], [Say("served")]], limits=limits) as server:
        with caplog.at_level(logging.INFO, logger="accord.remote"), anyio.fail_after(TIMEOUT):
            cid, sid, own = await _http_session(server.port, tmp_path)
            # The prompt goes in, but nothing ever GETs the session's stream.
            assert (
                await raw_request(server.port, _post_bytes(cid, _prompt(sid), sid))
            ).status == 202
            await _peak_while_open(server.served[0], "served", server.port, peak)
            await own.aclose()
    # Far under the 8,192 messages of ``sse_buffer``: the bytes bound it, one event past.
    assert bound <= peak[0] <= bound + _MIB + 1024, peak
    assert any("over its bound" in r.getMessage() for r in caplog.records)


def test_events_a_broken_stream_did_not_wholly_send_are_kept_for_the_next_get() -> None:
    from accord.remote._server import _unsent

    batch = [b"a" * 10, b"b" * 10, b"c" * 10]
    assert _unsent(batch, 0) == batch
    assert _unsent(batch, 10) == batch[1:]
    assert _unsent(batch, 15) == batch[1:]  # cut in the middle: sent again whole
    assert _unsent(batch, 30) == []

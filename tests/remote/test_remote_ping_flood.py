"""A WebSocket client that floods pings and never reads: the server holds one pong.

RFC 6455 (5.5.3) lets a pong answer only the newest ping, so the server holds one pong at
most, however many pings arrive, and goes on reading (before, each ping queued its own pong
until a megabyte backed up, then the server stopped reading and its heartbeat waited behind
the queue, so the connection was never closed). The flooder answers no heartbeat ping and is
closed by the heartbeat with a log line; meanwhile another client is served. Real loopback
sockets; the server's buffered bytes are read off its own transport.
"""

from __future__ import annotations

import logging
import socket

import anyio
import anyio.abc
import pytest
from _remote_support import UPGRADE, request_bytes
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.remote import ServerLimits
from accord.testing import Say

pytestmark = pytest.mark.anyio

#: Heartbeat interval under test: short, so the stall is found quickly (the default is 20 s).
_INTERVAL = 2.0

#: A masked ping with the largest payload a control frame may carry (125 bytes, zero mask).
_PING = b"\x89" + bytes([0x80 | 125]) + b"\0\0\0\0" + b"p" * 125

#: What the flood writes at most: far more than any buffer on the way could hold.
_FLOOD_BYTES = 32 * 1024 * 1024


def _buffered(transport: object) -> int:
    """The server transport's ``buffered_bytes`` (the WebSocket transport's own count)."""
    value = getattr(transport, "buffered_bytes", None)
    assert isinstance(value, int), f"{type(transport).__name__} does not count its bytes"
    return value


def _closed(transport: object) -> bool:
    """Whether the server transport is closed (its own ``closed``)."""
    return bool(getattr(transport, "closed", False))


async def test_a_ping_flood_that_never_reads_holds_one_pong_and_is_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = ServerLimits(heartbeat_interval=_INTERVAL)
    peak = 0
    sent = 0
    text = ""
    async with served_agent([[Say("served")]], limits=limits) as server:
        with caplog.at_level(logging.INFO, logger="accord.remote"), anyio.fail_after(TIMEOUT):
            stream = await anyio.connect_tcp("127.0.0.1", server.port)
            raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
            # A tiny receive window: the server's pongs back up at once.
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            await stream.send(request_bytes("GET", headers=UPGRADE))
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive(1)  # the 101 only, nothing after it
            assert head.startswith(b"HTTP/1.1 101")
            while len(server.served) < 1:  # the upgrade reaches the handler just after 101
                await anyio.sleep(0.01)
                continue
            flooded = server.served[0]
            burst = _PING * 512

            async def flood() -> None:
                nonlocal sent
                try:
                    while sent < _FLOOD_BYTES and not _closed(flooded):
                        await stream.send(burst)
                        sent += len(burst)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass

            async def watch() -> None:
                nonlocal peak
                while not _closed(flooded):
                    peak = max(peak, _buffered(flooded))
                    await anyio.sleep(0.002)

            async with anyio.create_task_group() as tg:
                tg.start_soon(flood)
                # Meanwhile another client is served a whole turn.
                async with connect(server.url(), token=TOKEN, reconnect=False) as conn:
                    text = (await (await conn.new_session()).prompt("hi")).text
                await watch()
                tg.cancel_scope.cancel()  # a send blocked on the full socket stops here
            # The server's socket is gone: reading what it had sent ends in EOF or a reset.
            ended = False
            while not ended:
                try:
                    await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    ended = True
            await stream.aclose()
    assert text == "served"
    assert sent > 1024 * 1024  # the flood was real: the server read on, answering one pong
    # One pong, the heartbeat ping and one write under way, never the flood's worth.
    assert peak <= 64 * 1024, peak
    # It answered no heartbeat ping either: closed by the heartbeat, saying so.
    closes = [r.getMessage() for r in caplog.records if "closing a WebSocket" in r.getMessage()]
    assert closes and ("(1001)" in closes[0] or "(1008)" in closes[0]), closes

"""A TLS handshake that never finishes is cut within ``ServerLimits.request_timeout``.

A client that connects to a TLS listener and sends nothing, half a ClientHello, or a whole
one trickled a byte at a time would hold a socket, a task and a TLS object for ever; the
server gives the whole handshake the same bound as a request head (``request_timeout``, one
deadline, not renewed by each byte), and serves an authenticated client meanwhile. Real
loopback sockets, a real certificate (trustme), a real ClientHello (the standard library's
``ssl`` over memory buffers).
"""

from __future__ import annotations

import ssl
import time

import anyio
import anyio.abc
import pytest
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT
from helpers.tls import loopback_tls_contexts

from accord.client import connect
from accord.remote import ServerLimits
from accord.testing import Say

pytestmark = pytest.mark.anyio

#: The handshake bound under test: short, so the test is quick; the code's default is 30 s.
_BOUND = 2.0


def _client_hello(context: ssl.SSLContext) -> bytes:
    """The bytes a real TLS client sends first."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = outgoing.read()
    assert hello[:1] == b"\x16"  # a handshake record
    return hello


async def _seconds_until_closed(stream: anyio.abc.ByteStream) -> float:
    """How long the server takes to close ``stream`` (it sends nothing before that)."""
    started = time.monotonic()
    with anyio.fail_after(TIMEOUT):
        while True:
            try:
                await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return time.monotonic() - started


async def _stall(port: int, first: bytes, trickle: bytes) -> float:
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        started = time.monotonic()
        if first:
            await stream.send(first)

        async def trickle_bytes() -> None:
            for byte in trickle:
                await anyio.sleep(_BOUND / 10)
                try:
                    await stream.send(bytes([byte]))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(trickle_bytes)
            await _seconds_until_closed(stream)
            tg.cancel_scope.cancel()
        return time.monotonic() - started


@pytest.mark.parametrize("how", ["nothing", "half-hello", "trickled-hello"])
async def test_a_stalled_handshake_is_closed_within_the_bound_while_others_are_served(
    how: str,
) -> None:
    server_context, client_context = loopback_tls_contexts()
    hello = _client_hello(client_context)
    first, trickle = {
        "nothing": (b"", b""),
        "half-hello": (hello[: len(hello) // 2], b""),
        # One byte every tenth of the bound: each byte alone would renew a per-read timeout.
        "trickled-hello": (b"", hello[:40]),
    }[how]
    limits = ServerLimits(request_timeout=_BOUND)
    durations: list[float] = []
    text, closed_before_served = "", -1
    async with served_agent([[Say("served")]], limits=limits, ssl_context=server_context) as s:

        async def stall() -> None:
            durations.append(await _stall(s.port, first, trickle))

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(stall)
                await anyio.sleep(_BOUND / 4)
                # While five handshakes stall, an authenticated TLS client gets a whole turn.
                async with connect(
                    s.url("wss"), token=TOKEN, ssl_context=client_context, reconnect=False
                ) as conn:
                    text = (await (await conn.new_session()).prompt("hi")).text
                    closed_before_served = len(durations)
    assert text == "served"
    assert closed_before_served == 0  # served while all five still stalled
    assert len(durations) == 5
    # Not before the bound (the client might just be slow), and not long after it: the
    # server's own deadline, not the test's, closed them (slack for a loaded machine).
    assert all(_BOUND * 0.9 <= d < _BOUND + TIMEOUT / 6 for d in durations), durations

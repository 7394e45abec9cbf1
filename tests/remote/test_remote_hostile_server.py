"""The client side of the network against a hostile server, on real loopback sockets.

A "server" here is a bare TCP listener that answers what no ACP server should: bytes that are
not HTTP, a redirect to somewhere else (the token must not follow it), nothing at all, a
WebSocket frame or a response body cut off halfway, a frame declaring a terabyte. Each time
``open_remote`` (the WebSocket and the Streamable HTTP client, as ``accord bridge`` and
``connect`` use them) must end with a clear error, promptly, holding no more than a bounded
amount. Then a server that keeps accepting and dropping the connection: ``connect(url)``'s
reconnecting (:class:`accord.client.Backoff`) backs off instead of storming it.
"""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
import pytest
from helpers.served_agent import TOKEN
from helpers.timeouts import TIMEOUT

import accord.remote._client as remote_client
import accord.remote._http_client as http_client
from accord.client import Backoff, connect
from accord.errors import ConnectionRefused, TransportError
from accord.remote import AccessPolicy, open_remote, serve_remote
from accord.transports import Transport

pytestmark = pytest.mark.anyio

Reply = Callable[[anyio.abc.SocketStream], Awaitable[None]]

_INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}


@dataclass
class _Listener:
    port: int
    connections: int = 0
    heads: list[bytes] = field(default_factory=list[bytes])


@asynccontextmanager
async def _hostile(reply: Reply) -> AsyncGenerator[_Listener]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    state = _Listener(listener.extra(anyio.abc.SocketAttribute.local_port))

    async def serve(stream: anyio.abc.SocketStream) -> None:
        state.connections += 1
        async with stream:
            head = b""
            with anyio.move_on_after(TIMEOUT):
                while b"\r\n\r\n" not in head:
                    try:
                        head += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return
            state.heads.append(head)
            try:
                await reply(stream)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        yield state
        tg.cancel_scope.cancel()


async def _open_and_use(url: str) -> None:
    """What a client does first: open, initialize, read the answer and one more message."""
    async with open_remote(url, token=TOKEN) as transport:
        await transport.send(dict(_INIT))
        await transport.receive()
        await transport.receive()


def _upgrade(head: bytes) -> bytes:
    from wsproto.utilities import generate_accept_token

    key = next(
        line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"sec-websocket-key:")
    )
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + generate_accept_token(key) + b"\r\n\r\n"
    )


def _replies(listener: Callable[[], _Listener]) -> dict[str, Reply]:
    async def garbage(stream: anyio.abc.SocketStream) -> None:
        await stream.send(b"SSH-2.0-OpenSSH_9.6\r\n" + bytes(range(256)) + b"\r\n\r\n")

    async def silent(stream: anyio.abc.SocketStream) -> None:
        await anyio.sleep(TIMEOUT)

    async def cut_off(stream: anyio.abc.SocketStream) -> None:
        head = listener().heads[-1]
        if b"upgrade: websocket" in head.lower():
            # A text frame declaring 256 bytes, ten of them, then the socket closes.
            await stream.send(_upgrade(head) + b"\x81\x7e\x01\x00" + b'{"jsonrpc"')
        else:
            await stream.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Acp-Connection-Id: c1\r\nContent-Length: 500\r\n\r\n" + b'{"jsonrpc"'
            )

    async def huge(stream: anyio.abc.SocketStream) -> None:
        head = listener().heads[-1]
        if b"upgrade: websocket" in head.lower():
            # A frame declaring 2**40 bytes, then a trickle that never ends.
            await stream.send(_upgrade(head) + b"\x81\x7f" + (1 << 40).to_bytes(8, "big"))
        else:
            await stream.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Acp-Connection-Id: c1\r\nContent-Length: 1099511627776\r\n\r\n"
            )
        while True:
            await stream.send(b"a" * 65536)
            await anyio.sleep(0.01)

    return {"garbage": garbage, "silent": silent, "cut-off": cut_off, "huge": huge}


@pytest.mark.parametrize("scheme", ["ws", "http"])
@pytest.mark.parametrize("name", ["garbage", "silent", "cut-off", "huge"])
async def test_a_hostile_server_ends_in_a_clear_error(
    scheme: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_client, "CONNECT_TIMEOUT", 1.0)
    monkeypatch.setattr(http_client, "RESPONSE_TIMEOUT", 1.0)
    holder: list[_Listener] = []
    reply = _replies(lambda: holder[0])[name]
    async with _hostile(reply) as server:
        holder.append(server)
        with anyio.fail_after(TIMEOUT):
            with pytest.raises((TransportError, TimeoutError, anyio.EndOfStream)) as failed:
                await _open_and_use(f"{scheme}://127.0.0.1:{server.port}/acp")
    assert str(failed.value) or isinstance(failed.value, anyio.EndOfStream)


@pytest.mark.parametrize("scheme", ["ws", "http"])
@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_is_not_followed_and_the_token_stays_home(
    scheme: str, status: int
) -> None:
    async def nothing(stream: anyio.abc.SocketStream) -> None:
        pass

    async with _hostile(nothing) as elsewhere:
        location = f"{scheme}://127.0.0.1:{elsewhere.port}/acp"

        async def redirect(stream: anyio.abc.SocketStream) -> None:
            await stream.send(
                f"HTTP/1.1 {status} Moved\r\nLocation: {location}\r\n"
                "Content-Length: 0\r\n\r\n".encode()
            )

        async with _hostile(redirect) as server:
            with anyio.fail_after(TIMEOUT), pytest.raises(ConnectionRefused) as refused:
                await _open_and_use(f"{scheme}://127.0.0.1:{server.port}/acp")
    assert refused.value.status == status
    assert location in str(refused.value) and "not followed" in str(refused.value)
    assert elsewhere.connections == 0


async def test_a_server_that_drops_every_connection_is_not_stormed() -> None:
    """Each connection is accepted and initialized, then dropped at once; in 3 s the client
    must back off (0.1, 0.25, 0.5, 1, 2 s: about six connections), not reconnect every 0.1 s
    as it would if each brief success reset its backoff."""
    connections = 0

    async def handler(transport: Transport) -> None:
        nonlocal connections
        connections += 1
        request = await transport.receive()
        assert isinstance(request, dict)
        await transport.send(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
            }
        )
        await anyio.sleep(0.05)

    policy = AccessPolicy.build(TOKEN, loopback=True)
    statuses: list[str] = []
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            functools.partial(serve_remote, handler, host="127.0.0.1", port=0, policy=policy)
        )
        url = f"ws://127.0.0.1:{port}/acp"
        with anyio.fail_after(TIMEOUT):
            async with connect(url, token=TOKEN, on_status=statuses.append):
                await anyio.sleep(3.0)
        tg.cancel_scope.cancel()
    assert any(s.startswith("reconnected") for s in statuses)  # it did reconnect
    assert 3 <= connections <= 8, connections


def test_the_pauses_between_attempts_grow_and_are_jittered() -> None:
    draws = random.Random(7)
    pauses = [[Backoff.pause(attempt, draws.random) for attempt in range(8)] for _ in range(50)]
    for attempt in range(8):
        base = Backoff.PAUSES[min(attempt, len(Backoff.PAUSES) - 1)]
        at = [p[attempt] for p in pauses]
        assert all(base / 2 <= pause <= base for pause in at), (attempt, at)
        # Fifty clients dropped at once do not come back at the same instants.
        assert len({round(pause, 6) for pause in at}) > 40

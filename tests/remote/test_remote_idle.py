"""The idle bound: a connection with no message either way for ``idle_timeout`` is closed.

Only messages count. Over Streamable HTTP a connection nobody posts to is closed once the
bound has passed (its id then gets ``404`` on every method), and so is one whose client only
holds its GET streams open: the heartbeat comments written to them are not activity (before,
a GET held open kept a connection alive for ever). Over WebSocket a client that answers every
heartbeat and sends pings of its own, but no message, is closed ``1001`` "idle timeout".
Real loopback sockets; the server's bound is set small, and the tests wait for the close, not
for a time (the lower bound on when it came holds whatever the load).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
import orjson
import pytest
from _remote_support import UPGRADE, event_stream, raw_request, request_bytes
from helpers.served_agent import TOKEN
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.remote import AccessPolicy, ServerLimits, serve_remote
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine
from accord.transports import Transport

pytestmark = pytest.mark.anyio

_JSON = ("Content-Type", "application/json")
_EVENTS = ("Accept", "text/event-stream")

#: The bound under test, and a heartbeat far shorter: many heartbeats pass within the bound.
_IDLE = 2.0
_HEARTBEAT = 0.05


@dataclass
class _Served:
    port: int = 0
    #: Set when the handler of the n-th connection returned (the connection is over).
    ended: list[anyio.Event] = field(default_factory=list[anyio.Event])


@asynccontextmanager
async def _serve() -> AsyncGenerator[_Served]:
    runtime = AgentRuntime(ScriptedEngine([]), store=MemorySessionStore(), grace=0)
    served = _Served()

    async def handler(transport: Transport) -> None:
        ended = anyio.Event()
        served.ended.append(ended)
        try:
            await runtime.serve(transport)
        finally:
            ended.set()

    limits = ServerLimits(idle_timeout=_IDLE, heartbeat_interval=_HEARTBEAT)
    policy = AccessPolicy.build(TOKEN, loopback=True)
    async with anyio.create_task_group() as tg:
        served.port = await tg.start(
            functools.partial(
                serve_remote, handler, host="127.0.0.1", port=0, policy=policy, limits=limits
            )
        )
        yield served
        await runtime.aclose()
        tg.cancel_scope.cancel()


async def _initialize(port: int) -> str:
    body = orjson.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    answer = await raw_request(port, request_bytes("POST", headers=[_JSON], body=body))
    assert answer.status == 200
    return answer.headers["acp-connection-id"]


async def _statuses(port: int, connection_id: str) -> list[int]:
    """What GET, POST and DELETE with ``connection_id`` are answered."""
    statuses: list[int] = []
    for method in ("GET", "POST", "DELETE"):
        headers = [("Acp-Connection-Id", connection_id), _JSON, _EVENTS]
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}})
        response = await raw_request(
            port, request_bytes(method, headers=headers, body=body if method == "POST" else b"")
        )
        statuses.append(response.status)
    return statuses


async def test_a_streamable_http_connection_nobody_uses_is_closed_after_the_bound() -> None:
    async with _serve() as served:
        connection_id = await _initialize(served.port)
        opened = anyio.current_time()
        with anyio.fail_after(TIMEOUT):
            await served.ended[0].wait()
        waited = anyio.current_time() - opened
        statuses = await _statuses(served.port, connection_id)
    assert waited >= _IDLE * 0.9  # closed by the idle bound, not by anything sooner
    assert statuses == [404, 404, 404]


async def test_a_client_that_only_listens_to_its_streams_is_closed_all_the_same() -> None:
    """Pings are not activity: GETs held open, heartbeats flowing, no message either way."""
    async with _serve() as served:
        connection_id = await _initialize(served.port)
        opened = anyio.current_time()
        own = await event_stream(served.port, connection_id, None)
        session = await event_stream(served.port, connection_id, "a-session")
        received = {own: b"", session: b""}

        async def read_to_the_end(stream: anyio.abc.SocketStream) -> None:
            while not received[stream].endswith(b"0\r\n\r\n"):  # the chunked body's end
                try:
                    received[stream] += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(read_to_the_end, own)
                tg.start_soon(read_to_the_end, session)
            await served.ended[0].wait()
        waited = anyio.current_time() - opened
        await own.aclose()
        await session.aclose()
        statuses = await _statuses(served.port, connection_id)
    # Heartbeats reached both streams while the bound ran: they did not keep it open.
    assert b": ping" in received[own] and b": ping" in received[session]
    assert waited >= _IDLE * 0.9
    assert statuses == [404, 404, 404]


async def test_a_websocket_client_that_only_pings_and_pongs_is_closed_idle() -> None:
    from wsproto.connection import Connection, ConnectionType
    from wsproto.events import CloseConnection, Ping

    async with _serve() as served:
        stream = await anyio.connect_tcp("127.0.0.1", served.port)
        await stream.send(request_bytes("GET", headers=UPGRADE))
        head = b""
        while b"\r\n\r\n" not in head:
            head += await stream.receive(1)  # the 101 only, nothing after it
        assert head.startswith(b"HTTP/1.1 101")
        opened = anyio.current_time()
        ws = Connection(ConnectionType.CLIENT)
        pings_answered = 0
        close: CloseConnection | None = None
        sending = anyio.Lock()  # one writer at a time on the socket (trio insists)

        async def send(data: bytes) -> None:
            async with sending:
                await stream.send(data)

        async def ping_often() -> None:
            while True:
                await send(ws.send(Ping(payload=b"client")))
                await anyio.sleep(_HEARTBEAT)

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ping_often)
                while close is None:
                    try:
                        ws.receive_data(await stream.receive())
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        break
                    for event in ws.events():
                        if isinstance(event, Ping):  # the server's heartbeat: answered
                            await send(ws.send(event.response()))
                            pings_answered += 1
                        elif isinstance(event, CloseConnection):
                            close = event
                tg.cancel_scope.cancel()
        waited = anyio.current_time() - opened
        await stream.aclose()
    assert pings_answered >= 1  # its heartbeats were answered: the client was alive
    assert close is not None and close.code == 1001 and close.reason == "idle timeout"
    assert waited >= _IDLE * 0.9

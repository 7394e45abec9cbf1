"""Streamable HTTP ids under attack: another connection's session, unknown ids, stream counts.

A connection id is the credential of its connection (144 random bits, shown only to the
client that posted ``initialize``), so the attacks here hold the token and a connection of
their own: with it they name a session another connection is running (reading its stream,
prompting, cancelling), connection ids that are unknown or ended, and more session streams
than the server holds for one connection. One runtime serves every connection, as
``accord serve --listen`` does, on real loopback sockets.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import orjson
import pytest
from _remote_support import raw_request, request_bytes
from helpers.served_agent import TOKEN
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client import connect
from accord.errors import ConnectionClosed
from accord.remote import AccessPolicy, ServerLimits, serve_remote
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, ScriptStep, WaitFor
from accord.transports import Transport

pytestmark = pytest.mark.anyio

_JSON = ("Content-Type", "application/json")
_EVENTS = ("Accept", "text/event-stream")


@asynccontextmanager
async def _shared_runtime(
    turns: list[list[ScriptStep]],
    limits: ServerLimits | None = None,
    ended: list[anyio.Event] | None = None,
) -> AsyncIterator[int]:
    """Serve one runtime; ``ended`` gets, per connection, an event set once it is over."""
    runtime = AgentRuntime(ScriptedEngine(turns), store=MemorySessionStore(), grace=0)

    async def handler(transport: Transport) -> None:
        over = anyio.Event()
        if ended is not None:
            ended.append(over)
        try:
            await runtime.serve(transport)
        finally:
            over.set()

    policy = AccessPolicy.build(TOKEN, loopback=True)
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            functools.partial(
                serve_remote, handler, host="127.0.0.1", port=0, policy=policy, limits=limits
            )
        )
        yield port
        await runtime.aclose()
        tg.cancel_scope.cancel()


def _message(method: str, request_id: int | None = None, **params: object) -> bytes:
    message: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        message["id"] = request_id
    return orjson.dumps(message)


async def _initialize(port: int) -> str:
    answer = await raw_request(
        port,
        request_bytes("POST", headers=[_JSON], body=_message("initialize", 0, protocolVersion=1)),
    )
    assert answer.status == 200
    return answer.headers["acp-connection-id"]


async def _post(port: int, connection_id: str, body: bytes, session: str | None = None) -> int:
    headers = [_JSON, ("Acp-Connection-Id", connection_id)]
    if session is not None:
        headers.append(("Acp-Session-Id", session))
    return (await raw_request(port, request_bytes("POST", headers=headers, body=body))).status


class _EventStream:
    """One GET event stream on a raw socket: its status and the messages it carried."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.received = b""
        self.arrived = anyio.Event()

    @property
    def status(self) -> int:
        return int(self.received.split(b" ", 2)[1]) if b" " in self.received else 0

    @property
    def messages(self) -> list[dict[str, object]]:
        return [
            orjson.loads(line[6:])
            for line in self.received.split(b"\n")
            if line.startswith(b"data: ")
        ]

    async def read(self) -> None:
        try:
            while True:
                self.received += await self.stream.receive()
                self.arrived.set()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.arrived.set()


@asynccontextmanager
async def _get(port: int, connection_id: str, session: str | None) -> AsyncIterator[_EventStream]:
    headers = [_EVENTS, ("Acp-Connection-Id", connection_id)]
    if session is not None:
        headers.append(("Acp-Session-Id", session))
    async with (
        await anyio.connect_tcp("127.0.0.1", port) as stream,
        anyio.create_task_group() as tg,
    ):
        reader = _EventStream(stream)
        await stream.send(request_bytes("GET", headers=headers))
        tg.start_soon(reader.read)
        with anyio.fail_after(TIMEOUT):
            await reader.arrived.wait()
        yield reader
        tg.cancel_scope.cancel()


async def test_another_connection_cannot_read_prompt_or_cancel_a_session_it_did_not_attach() -> (
    None
):
    gate, cancel_arrived = anyio.Event(), anyio.Event()
    turns: list[list[ScriptStep]] = [
        [Say("begun "), WaitFor(gate, noticed=cancel_arrived), Say("after")]
    ]
    with anyio.fail_after(TIMEOUT):
        async with (
            _shared_runtime(turns) as port,
            connect(f"http://127.0.0.1:{port}/acp", token=TOKEN, reconnect=False) as owner,
        ):
            session = await owner.new_session()
            sid = session.session_id
            async with anyio.create_task_group() as tg:
                results: list[object] = []

                async def prompt() -> None:
                    results.append(await session.prompt("go"))

                tg.start_soon(prompt)
                # The turn is running once its first words are in the owner's view.
                while not any("begun" in m.text for m in session.view.messages):  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                # Same token, its own connection, naming the owner's session.
                intruder = await _initialize(port)
                async with _get(port, intruder, sid) as spy:
                    prompted = await _post(
                        port, intruder, _message("session/prompt", 5, sessionId=sid, prompt=[]), sid
                    )
                    cancelled = await _post(
                        port, intruder, _message("session/cancel", sessionId=sid), sid
                    )
                    closed = await _post(
                        port, intruder, _message("session/close", 6, sessionId=sid), sid
                    )
                    while len(spy.messages) < 2:
                        await spy.arrived.wait()
                        spy.arrived = anyio.Event()
                    gate.set()
                await anyio.sleep(0.2)
            result = results[0]
    assert prompted == cancelled == closed == 202
    # The intruder got an error for its prompt, and nothing of the owner's turn.
    assert spy.status == 200
    assert sorted(str(m.get("id")) for m in spy.messages) == ["5", "6"]
    error = next(m for m in spy.messages if m.get("id") == 5)["error"]
    assert isinstance(error, dict) and error["code"] == -32002
    # The owner's turn ran to its end, neither cancelled nor closed by the intruder.
    assert not cancel_arrived.is_set()
    assert result.stop_reason == "end_turn"
    assert result.text.endswith("after")


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
async def test_unknown_and_ended_connection_ids_get_404(method: str) -> None:
    limits = ServerLimits(idle_timeout=0.2, heartbeat_interval=0.05)
    over: list[anyio.Event] = []
    async with _shared_runtime([], limits, over) as port:
        ended = await _initialize(port)
        assert (
            await raw_request(port, request_bytes("DELETE", headers=[("Acp-Connection-Id", ended)]))
        ).status == 202
        reaped = await _initialize(port)
        with anyio.fail_after(TIMEOUT):  # nobody posts or listens: the idle bound closes it
            await over[1].wait()
        statuses = []
        for connection_id in ("not-a-connection", ended, reaped):
            headers = [("Acp-Connection-Id", connection_id), _JSON, _EVENTS]
            body = _message("session/list", 1) if method == "POST" else b""
            response = await raw_request(port, request_bytes(method, headers=headers, body=body))
            statuses.append((response.status, response.body))
    assert statuses == [(404, b"Unknown Acp-Connection-Id\n")] * 3


async def test_session_streams_per_connection_are_bounded_and_freed() -> None:
    limits = ServerLimits(max_streams_per_connection=4)
    async with _shared_runtime([], limits) as port:
        connection_id = await _initialize(port)
        for n in range(3):  # each round holds the most under new ids, then lets them go
            async with (
                _get(port, connection_id, f"a{n}") as a,
                _get(port, connection_id, f"b{n}") as b,
                _get(port, connection_id, f"c{n}") as c,
                _get(port, connection_id, f"d{n}") as d,
                _get(port, connection_id, f"e{n}") as over,
            ):
                held = [s.status for s in (a, b, c, d)]
                refused = over.status
            assert held == [200] * 4
            assert refused == 429
            assert b"too many event streams" in over.received
            # The connection's own stream is not one of them.
            async with _get(port, connection_id, None) as own:
                assert own.status == 200


async def test_another_connection_cannot_close_a_session_in_its_grace_period() -> None:
    gate = anyio.Event()
    engine = ScriptedEngine([[Say("begun "), WaitFor(gate), Say("after")]])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=60)

    async def handler(transport: Transport) -> None:
        await runtime.serve(transport)

    policy = AccessPolicy.build(TOKEN, loopback=True)
    url_of = "http://127.0.0.1:{}/acp".format
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            port = await tg.start(
                functools.partial(serve_remote, handler, host="127.0.0.1", port=0, policy=policy)
            )
            async with connect(url_of(port), token=TOKEN, reconnect=False) as owner:
                session = await owner.new_session()
                sid = session.session_id

                async def prompt() -> None:
                    with contextlib.suppress(ConnectionClosed):  # the owner leaves mid-turn
                        await session.prompt("go")

                tg.start_soon(prompt)
                while not any("begun" in m.text for m in session.view.messages):  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            # The owner is gone; its turn goes on for the grace period. A stranger closes it.
            intruder = await _initialize(port)
            closed = await _post(port, intruder, _message("session/close", 1, sessionId=sid), sid)
            async with connect(url_of(port), token=TOKEN, reconnect=False) as back:
                resumed = await back.resume_session(sid)
                gate.set()
                while not any("after" in m.text for m in resumed.view.messages):  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            await runtime.aclose()
            tg.cancel_scope.cancel()
    # The turn went on to its end: "after" reached the client that came back.
    assert closed == 202

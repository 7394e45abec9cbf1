"""A dropped connection is reopened and its sessions resumed, on real loopback sockets.

``connect(url)`` does it in the client's connection layer (``accord.client``'s reconnector):
a plain new transport, ``initialize`` again, ``session/resume`` with the cursor each tracked
session's view last saw; the pauses between attempts are jittered (:class:`Backoff`).
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import pytest
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.cli._bridge_link import run_bridge
from accord.client import Backoff, connect
from accord.errors import CURSOR_META_KEY, ConnectionClosed, ConnectionRefused
from accord.remote import AccessPolicy, serve_remote
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, ScriptStep, WaitFor
from accord.transports import Transport, memory_transport_pair

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_dropped_connection_reconnects_and_resumes_the_session(scheme: str) -> None:
    lines: list[str] = []
    back = anyio.Event()

    def status(line: str) -> None:
        lines.append(line)
        if line.startswith("reconnected"):
            back.set()

    async with served_agent([[Say("before")], [Say("after")]]) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(scheme), token=TOKEN, on_status=status) as conn:
                session = await conn.new_session()
                first = await session.prompt("one")
                await server.served[-1].aclose()  # the server drops the connection
                await back.wait()
                second = await session.prompt("two")
    assert (first.text, second.text) == ("before", "after")
    assert lines == ["connection to the agent lost; reconnecting", "reconnected; resumed 1 session"]
    assert len(server.served) == 2


async def test_without_reconnect_a_drop_ends_the_connection() -> None:
    async with served_agent([[Say("x")]]) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(), token=TOKEN, reconnect=False) as conn:
                session = await conn.new_session()
                await server.served[-1].aclose()
                with pytest.raises(ConnectionClosed):
                    await session.prompt("two")
    assert len(server.served) == 1


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_wrong_token_is_not_retried(scheme: str) -> None:
    async with served_agent() as server:
        with pytest.raises(ConnectionRefused), anyio.fail_after(TIMEOUT):
            async with connect(server.url(scheme), token="wrong-token-0123456789abcdef"):
                pass
        assert server.served == []


@dataclass
class _Connection:
    """One connection the recording server accepted: when, and what the client sent on it."""

    at: float
    sent: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def resumes(self) -> list[dict[str, Any]]:
        return [m["params"] for m in self.sent if m.get("method") == "session/resume"]


class _Recording:
    """A transport passing everything through, keeping what the client sent."""

    def __init__(self, inner: Transport, into: _Connection) -> None:
        self._inner = inner
        self._into = into

    async def send(self, message: Any) -> None:
        await self._inner.send(message)

    async def receive(self) -> Any:
        message: Any = await self._inner.receive()
        if isinstance(message, dict):
            self._into.sent.append(cast("dict[str, Any]", message))
        return cast("Any", message)

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def _recording_agent(
    turns: list[list[ScriptStep]],
) -> AsyncGenerator[tuple[str, list[_Connection], list[Transport]]]:
    """A scripted agent on a loopback WebSocket (one runtime per connection, one store):
    its URL, the connections it accepted and their transports (to drop them)."""
    store = MemorySessionStore()
    engine = ScriptedEngine(turns)
    connections: list[_Connection] = []
    transports: list[Transport] = []

    async def handler(transport: Transport) -> None:
        connection = _Connection(anyio.current_time())
        connections.append(connection)
        transports.append(transport)
        await AgentRuntime(engine, store=store).serve(_Recording(transport, connection))

    policy = AccessPolicy.build(TOKEN, loopback=True)
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            functools.partial(serve_remote, handler, host="127.0.0.1", port=0, policy=policy)
        )
        yield f"ws://127.0.0.1:{port}/acp", connections, transports
        tg.cancel_scope.cancel()


async def test_the_resume_after_a_reconnect_carries_the_sessions_cursor() -> None:
    """The new link's ``session/resume`` names the session, its cwd and the cursor of the last
    update its view folded; the same :class:`ClientSession` goes on, on the new transport."""
    back = anyio.Event()

    def status(line: str) -> None:
        if line.startswith("reconnected"):
            back.set()

    async with _recording_agent([[Say("before")], [Say("after")]]) as (url, seen, transports):
        with anyio.fail_after(TIMEOUT):
            async with connect(url, token=TOKEN, on_status=status) as conn:
                session = await conn.new_session()
                await session.prompt("one")
                cursor = session.cursor
                first = conn.transport
                await transports[-1].aclose()
                await back.wait()
                assert conn.sessions[session.session_id] is session
                assert conn.transport is not first and not conn.closed
                assert conn.reconnects == 1
                second = await session.prompt("two")
    assert cursor is not None and second.text == "after"
    assert [c.resumes() for c in seen] == [
        [],
        [
            {
                "sessionId": session.session_id,
                "cwd": session.cwd,
                "mcpServers": [],
                "_meta": {CURSOR_META_KEY: cursor},
            }
        ],
    ]
    # The new link was initialized like the first one, before the resume.
    assert [m.get("method") for m in seen[1].sent][:2] == ["initialize", "session/resume"]
    # Nothing came twice: the agent sent only what followed the cursor.
    assert [m.text for m in session.view.messages if m.role == "agent"] == ["before", "after"]


async def test_a_storm_of_clients_dropped_at_once_comes_back_spread_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twenty clients lose their connections in the same instant (a server restart): each
    waits its own jittered first pause (half to all of 0.1 s, twenty different ones) before
    it comes back, none sooner, each comes back once, and every session resumes."""
    clients = 20
    pauses: list[float] = []
    pause = Backoff.pause

    def spied(attempt: int, draw: Callable[[], float] = random.random) -> float:
        pauses.append(pause(attempt, draw))
        return pauses[-1]

    monkeypatch.setattr(Backoff, "pause", staticmethod(spied))
    backs = [anyio.Event() for _ in range(clients)]
    async with _recording_agent([[Say("hi")]]) as (url, seen, transports):
        with anyio.fail_after(TIMEOUT):
            async with AsyncExitStack() as stack:
                conns = [
                    await stack.enter_async_context(
                        connect(url, token=TOKEN, on_status=_on_back(backs[i]))
                    )
                    for i in range(clients)
                ]
                sessions = [await conn.new_session() for conn in conns]
                assert len(seen) == clients
                dropped = anyio.current_time()
                for transport in list(transports):
                    await transport.aclose()
                for back in backs:
                    await back.wait()
                reconnects = [conn.reconnects for conn in conns]
    returns = sorted(c.at - dropped for c in seen[clients:])
    assert len(returns) == clients, returns  # one new connection each, no retry storm
    step = Backoff.PAUSES[0]
    assert returns[0] >= step / 2 - 0.01, returns  # nobody skipped its pause
    # Jittered and bounded: one pause each, twenty different ones, each within its step.
    assert len(pauses) == clients and len(set(pauses)) == clients, pauses
    assert all(step / 2 <= p <= step for p in pauses), pauses
    assert all(len(c.resumes()) == 1 for c in seen[clients:])
    assert reconnects == [1] * clients
    assert {s.session_id for s in sessions} == {c.resumes()[0]["sessionId"] for c in seen[clients:]}


def _on_back(event: anyio.Event) -> Callable[[str], None]:
    def status(line: str) -> None:
        if line.startswith("reconnected"):
            event.set()

    return status


# ---------------------------------------------------------------------- accord bridge


class _Editor:
    """An editor speaking raw JSON-RPC to the bridge over a memory transport."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.updates: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    async def send(self, method: str, params: dict[str, Any]) -> int:
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        await self.transport.send(message)
        return request_id

    async def answer(self, request_id: int) -> dict[str, Any]:
        """The answer to ``request_id``; the updates before it are kept."""
        while True:
            message = cast("dict[str, Any]", await self.transport.receive())
            if message.get("method") == "session/update":
                self.updates.append(message["params"])
            elif message.get("id") == request_id:
                return message

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.answer(await self.send(method, params))

    async def update_saying(self, text: str) -> None:
        """Read until an update carrying ``text`` came."""
        while not any(_says(u, text) for u in self.updates):
            message = cast("dict[str, Any]", await self.transport.receive())
            if message.get("method") == "session/update":
                self.updates.append(message["params"])


def _says(update: dict[str, Any], text: str) -> bool:
    content = update["update"].get("content")
    return isinstance(content, dict) and cast("dict[str, Any]", content).get("text") == text


async def test_the_bridge_answers_a_lost_request_and_resumes_from_the_editors_cursor() -> None:
    """``accord bridge`` in-process between an editor (raw JSON-RPC) and a served agent: a
    prompt in flight when the link drops is answered -32603 (reconnecting); the new link
    gets the editor's own ``initialize`` and ``session/resume`` with the cursor of the last
    update the editor saw; the editor's next request goes on the new link."""
    gate = anyio.Event()
    statuses: list[str] = []
    back = anyio.Event()

    def status(line: str) -> None:
        statuses.append(line)
        if line.startswith("reconnected"):
            back.set()

    turns: list[list[ScriptStep]] = [[Say("before")], [Say("waiting"), WaitFor(gate)]]
    async with _recording_agent(turns) as (url, seen, transports), anyio.create_task_group() as tg:
        editor_side, bridge_side = memory_transport_pair()
        tg.start_soon(
            functools.partial(run_bridge, bridge_side, url, token=TOKEN, on_status=status)
        )
        editor = _Editor(editor_side)
        with anyio.fail_after(TIMEOUT):
            init: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}}
            assert "result" in await editor.call("initialize", init)
            new = await editor.call("session/new", {"cwd": "/", "mcpServers": []})
            session_id: str = new["result"]["sessionId"]
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "one"}]}
            assert (await editor.call("session/prompt", prompt))["result"]["stopReason"]
            second = await editor.send("session/prompt", prompt)
            await editor.update_saying("waiting")  # the second turn runs, and waits
            cursor = editor.updates[-1]["_meta"][CURSOR_META_KEY]
            await transports[-1].aclose()
            lost = await editor.answer(second)
            await back.wait()
            listed = await editor.call("session/list", {})  # the new link carries on
            gate.set()
        sessions: list[dict[str, Any]] = listed["result"]["sessions"]
        assert session_id in [s["sessionId"] for s in sessions]
        assert lost["error"]["code"] == -32603
        assert lost["error"]["data"] == {"reconnecting": True}
        assert statuses == [
            "connection to the agent lost; reconnecting",
            "reconnected; resumed 1 session",
        ]
        assert len(seen) == 2
        assert seen[1].sent[0]["method"] == "initialize"
        assert seen[1].sent[0]["params"] == init
        assert seen[1].resumes() == [
            {"sessionId": session_id, "cwd": "/", "_meta": {CURSOR_META_KEY: cursor}}
        ]
        tg.cancel_scope.cancel()

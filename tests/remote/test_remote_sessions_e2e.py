"""Several clients on one served session, end to end: a real server process, real sockets.

The agent runs as its own process (``_remote_served_agent.py``: one runtime behind ``serve_remote``,
as ``accord serve --listen`` runs it); every client is a :func:`accord.client.connect` over a
loopback socket, some through a TCP relay the test controls so it can cut a connection or stop
a client reading. Each test waits on what the clients received, never on the clock; every wait
is bounded.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.abc
import pytest
from helpers.timeouts import TIMEOUT

from accord.client import (
    AllowAll,
    DenyAll,
    PermissionContext,
    PermissionDecision,
    PermissionRequested,
    connect,
)
from accord.errors import CURSOR_META_KEY
from accord.remote import open_remote
from accord.schema import SessionNotification
from accord.transports import Transport

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess, pytest.mark.timeout(240)]

SCRIPT = Path(__file__).with_name("_remote_served_agent.py")
TOKEN = "e2e-test-token-0123456789abcdef"


@dataclass
class Server:
    """The agent's process: its port and its command pipe."""

    port: int
    process: anyio.abc.Process
    lines: AsyncIterator[str]

    def url(self, port: int | None = None, scheme: str = "ws") -> str:
        return f"{scheme}://127.0.0.1:{port or self.port}/acp"

    async def command(self, text: str) -> str:
        """Send one command line; return the process's answer line."""
        assert self.process.stdin is not None
        await self.process.stdin.send(f"{text}\n".encode())
        with anyio.fail_after(TIMEOUT):
            return await anext(self.lines)


async def _lines(process: anyio.abc.Process) -> AsyncIterator[str]:
    assert process.stdout is not None
    buffer = b""
    async for chunk in process.stdout:
        buffer += chunk
        while b"\n" in buffer:
            line, _, buffer = buffer.partition(b"\n")
            yield line.decode()


@asynccontextmanager
async def agent_process(scenario: str, grace: float = 600) -> AsyncGenerator[Server]:
    """Start the served agent process; yield it once it listens; stop it on exit."""
    process = await anyio.open_process([sys.executable, str(SCRIPT), scenario, str(grace)])
    try:
        lines = _lines(process)
        with anyio.fail_after(TIMEOUT):
            first = await anext(lines)
        assert first.startswith("listening on "), first
        yield Server(int(first.split()[-1]), process, lines)
    finally:
        assert process.stdin is not None
        await process.stdin.aclose()
        with anyio.move_on_after(TIMEOUT):
            await process.wait()
        if process.returncode is None:
            process.kill()
        await process.aclose()


@dataclass
class Relay:
    """A loopback TCP relay in front of the server: it can cut its connections or stop
    forwarding to the client (a client that stops reading)."""

    target: int
    port: int = 0
    flowing: anyio.Event = field(default_factory=anyio.Event)
    pairs: list[tuple[anyio.abc.SocketStream, anyio.abc.SocketStream]] = field(
        default_factory=list[tuple[anyio.abc.SocketStream, anyio.abc.SocketStream]]
    )
    admitting: anyio.Event = field(default_factory=anyio.Event)
    accepted: int = 0

    async def cut(self) -> None:
        """Close every relayed connection on both sides (as a dropped network does), and
        hold new connections until :meth:`admit`."""
        self.admitting = anyio.Event()
        pairs, self.pairs = self.pairs, []
        for inner, outer in pairs:
            await inner.aclose()
            await outer.aclose()

    def pause(self) -> None:
        """Stop forwarding what the server sends (the client stops reading)."""
        self.flowing = anyio.Event()

    def resume(self) -> None:
        """Forward again."""
        self.flowing.set()

    def admit(self) -> None:
        """Let connections through again."""
        self.admitting.set()

    async def _pump(
        self, source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream, gated: bool
    ) -> None:
        try:
            async for chunk in source:
                if gated:
                    await self.flowing.wait()
                await sink.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            await sink.aclose()
            await source.aclose()

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        await self.admitting.wait()
        self.accepted += 1
        server = await anyio.connect_tcp("127.0.0.1", self.target)
        self.pairs.append((client, server))
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._pump, client, server, False)
            tg.start_soon(self._pump, server, client, True)


@asynccontextmanager
async def relay_to(port: int, *, flowing: bool = True) -> AsyncGenerator[Relay]:
    relay = Relay(port)
    relay.admitting.set()
    if flowing:
        relay.flowing.set()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    relay.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, relay._handle)
        yield relay
        tg.cancel_scope.cancel()


@dataclass
class Seen:
    """What one client received of the session: each update's wire form and its cursor."""

    updates: list[tuple[dict[str, Any], str | None]] = field(
        default_factory=list[tuple[dict[str, Any], str | None]]
    )
    changed: anyio.Event = field(default_factory=anyio.Event)

    def __call__(self, notification: SessionNotification) -> None:
        # An activation announcement (the session's title and commands, sent to the client
        # that activated it, without a cursor) is not part of the session's update stream.
        accord: dict[str, Any] = (notification.update.meta or {}).get("accord") or {}
        if accord.get("announcement") is True:
            return
        meta = notification.meta or {}
        self.updates.append((notification.update.to_wire(), meta.get(CURSOR_META_KEY)))
        self.changed.set()
        self.changed = anyio.Event()

    def chunks(self) -> list[str]:
        return [
            u["content"]["text"]
            for u, _ in self.updates
            if u["sessionUpdate"] == "agent_message_chunk"
        ]

    def shown(self) -> list[tuple[dict[str, Any], str | None]]:
        """The updates without the prompts (a prompter is not sent its own back)."""
        return [(u, c) for u, c in self.updates if u["sessionUpdate"] != "user_message_chunk"]

    def prompts(self) -> list[str]:
        """The text of the prompts received (other clients' prompts)."""
        return [
            u["content"]["text"]
            for u, _ in self.updates
            if u["sessionUpdate"] == "user_message_chunk"
        ]

    async def until(self, done: Callable[[Seen], bool]) -> None:
        """Wait (bounded) until ``done(self)`` holds."""
        with anyio.fail_after(TIMEOUT):
            while not done(self):
                await self.changed.wait()


# ---------------------------------------------------------------------- ten clients


async def test_ten_clients_on_one_session_see_identical_sequences() -> None:
    async with agent_process("stream") as server, AsyncExitStack() as stack:
        seen = [Seen() for _ in range(10)]
        conns = [
            await stack.enter_async_context(
                connect(server.url(), token=TOKEN, reconnect=False, update_listener=s)
            )
            for s in seen
        ]
        session = await conns[0].new_session()
        for conn in conns[1:]:
            await conn.resume_session(session.session_id)
        for s in seen:
            s.updates.clear()
        with anyio.fail_after(TIMEOUT):
            result = await session.prompt("go")
        assert result.stop_reason == "end_turn"
        expected = seen[0].updates
        for s in seen[1:]:
            await s.until(lambda s: len(s.updates) > len(expected))
        # The nine others saw the prompt first (not sent back to the client that sent it),
        # then exactly what the prompter saw.
        for s in seen[1:]:
            first, _ = s.updates[0]
            assert first["sessionUpdate"] == "user_message_chunk"
            assert first["content"]["text"] == "go"
        assert [s.updates[1:] for s in seen[1:]] == [expected] * 9
        # Every update carries a cursor, and the cursors are all different.
        cursors = [c for _, c in expected]
        assert None not in cursors and len(set(cursors)) == len(cursors)
        chunks = seen[0].chunks()
        assert len([c for c in chunks if c.startswith("w")]) == 40
        assert "".join(chunks).endswith("end of turn")


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_the_creator_sees_another_client_s_turn_without_asking(scheme: str) -> None:
    # The creator sends nothing more for its session: what reaches it of another client's
    # turn belongs to no request of its own (over HTTP: its session's event stream).
    async with agent_process("stream") as server:
        seen = Seen()
        async with connect(
            server.url(scheme=scheme), token=TOKEN, reconnect=False, update_listener=seen
        ) as creator:
            session = await creator.new_session()
            async with connect(server.url(), token=TOKEN, reconnect=False) as other:
                resumed = await other.resume_session(session.session_id)
                seen.updates.clear()
                with anyio.fail_after(TIMEOUT):
                    result = await resumed.prompt("go")
                await seen.until(lambda s: "".join(s.chunks()).endswith("end of turn"))
    assert result.stop_reason == "end_turn"
    assert "".join(seen.chunks()) == result.text


# ---------------------------------------------------------------------- cut and resume


async def test_a_connection_cut_mid_turn_resumes_from_its_cursor_losing_nothing() -> None:
    status: list[str] = []
    back = anyio.Event()

    def on_status(line: str) -> None:
        status.append(line)
        if line.startswith("reconnected"):
            back.set()

    watched, cut = Seen(), Seen()
    async with (
        agent_process("cut") as server,
        relay_to(server.port) as relay,
        connect(server.url(), token=TOKEN, reconnect=False, update_listener=watched) as observer,
        connect(
            server.url(relay.port), token=TOKEN, update_listener=cut, on_status=on_status
        ) as leaver,
        anyio.create_task_group() as tg,
    ):
        session = await observer.new_session()
        await leaver.resume_session(session.session_id)
        watched.updates.clear()
        cut.updates.clear()
        stops: list[str] = []
        finished = anyio.Event()

        async def prompt() -> None:
            stops.append((await session.prompt("go")).stop_reason)
            finished.set()

        tg.start_soon(prompt)
        # The turn waits at its gate after 20 chunks; cut the leaver's connection there.
        await cut.until(lambda s: len(s.chunks()) == 20)
        await relay.cut()
        # The turn goes on while the leaver is away (its reconnects are held at the relay).
        assert await server.command("release") == "released"
        with anyio.fail_after(TIMEOUT):
            await finished.wait()
        assert stops == ["end_turn"]
        assert len(cut.chunks()) == 20
        relay.admit()
        with anyio.fail_after(TIMEOUT):
            await back.wait()
        await cut.until(lambda s: len(s.shown()) >= len(watched.updates))
        assert cut.prompts() == ["go"] and watched.prompts() == []
        assert cut.shown() == watched.updates
        assert cut.chunks() == [f"a{i} " for i in range(20)] + [f"b{i} " for i in range(20)]
    assert status == [
        "connection to the agent lost; reconnecting",
        "reconnected; resumed 1 session",
    ]
    assert relay.accepted == 2


# ---------------------------------------------------------------------- first answer wins


@dataclass
class Recording:
    """A transport that keeps every message it received (to see ``$/cancel_request``)."""

    inner: Transport
    received: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    changed: anyio.Event = field(default_factory=anyio.Event)

    async def send(self, message: dict[str, Any]) -> None:
        await self.inner.send(message)

    async def receive(self) -> Any:
        message: Any = await self.inner.receive()
        if isinstance(message, dict):
            self.received.append(cast(dict[str, Any], message))
            self.changed.set()
            self.changed = anyio.Event()
        return message  # pyright: ignore[reportUnknownVariableType]

    async def aclose(self) -> None:
        await self.inner.aclose()

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("method") == method]

    async def until_received(self, method: str) -> None:
        """Wait (bounded) until a ``method`` message came in."""
        with anyio.fail_after(TIMEOUT):
            while not self.requests(method):
                await self.changed.wait()


@dataclass
class Racer:
    """Answers only once both clients were asked, so the two answers leave together."""

    answer: AllowAll | DenyAll
    both_asked: anyio.Event
    asked: list[str]

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        self.asked.append(context.session_id)
        if len(self.asked) == 2:
            self.both_asked.set()
        await self.both_asked.wait()
        return await self.answer.decide(context)


async def test_two_answers_at_once_exactly_one_decision_takes_effect() -> None:
    both_asked, asked = anyio.Event(), list[str]()
    seen = {"allow": Seen(), "reject": Seen()}
    async with (
        agent_process("ask") as server,
        open_remote(server.url(), token=TOKEN) as allow_wire,
        open_remote(server.url(), token=TOKEN) as reject_wire,
    ):
        wires = {"allow": Recording(allow_wire), "reject": Recording(reject_wire)}
        async with (
            connect(
                wires["allow"],
                update_listener=seen["allow"],
                permission_policy=Racer(AllowAll(), both_asked, asked),
            ) as allowing,
            connect(
                wires["reject"],
                update_listener=seen["reject"],
                permission_policy=Racer(DenyAll(), both_asked, asked),
            ) as rejecting,
        ):
            session = await allowing.new_session()
            await rejecting.resume_session(session.session_id)
            for s in seen.values():
                s.updates.clear()
            with anyio.fail_after(TIMEOUT):
                assert (await session.prompt("deploy")).stop_reason == "end_turn"
            await seen["reject"].until(lambda s: len(s.shown()) >= len(seen["allow"].updates))
            # Each was asked once; exactly one of them was told its question is withdrawn.
            asks = {k: w.requests("session/request_permission") for k, w in wires.items()}
            assert [len(a) for a in asks.values()] == [1, 1]
            cancelled = {
                k
                for k, w in wires.items()
                for c in w.requests("$/cancel_request")
                if c["params"]["requestId"] == asks[k][0]["id"]
            }
    # Both saw the same turn (the prompt went to the other client only), and exactly one
    # decision reached the tool call.
    assert seen["reject"].prompts() == ["deploy"] and seen["allow"].prompts() == []
    assert seen["allow"].updates == seen["reject"].shown()
    statuses = [
        u.get("status")
        for u, _ in seen["allow"].updates
        if u["sessionUpdate"] == "tool_call_update" and u.get("status")
    ]
    assert len([s for s in statuses if s in ("completed", "failed")]) == 1
    # A loser still waiting for its answer is withdrawn with $/cancel_request; one whose
    # answer crossed the winner's on the wire has nothing left to withdraw.
    assert len(cancelled) <= 1
    if cancelled:
        (winner,) = set(wires) - cancelled
        assert ("completed" in statuses) == (winner == "allow"), (winner, statuses)


@dataclass
class Holding:
    """Never answers by itself: only a ``$/cancel_request`` ends its question."""

    asked: anyio.Event

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        self.asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def test_the_first_answer_wins_and_the_other_client_gets_cancel_request() -> None:
    held = anyio.Event()
    seen = Seen()
    async with (
        agent_process("ask") as server,
        open_remote(server.url(), token=TOKEN) as holder_wire,
    ):
        wire = Recording(holder_wire)
        async with (
            connect(wire, update_listener=seen, permission_policy=Holding(held)) as holder,
            connect(
                server.url(),
                token=TOKEN,
                reconnect=False,
                permission_policy=Racer(AllowAll(), held, ["held", "answering"]),
            ) as answerer,
        ):
            session = await answerer.new_session()
            await holder.resume_session(session.session_id)
            with anyio.fail_after(TIMEOUT):
                assert (await session.prompt("deploy")).stop_reason == "end_turn"
            (asked,) = wire.requests("session/request_permission")
            await wire.until_received("$/cancel_request")
            assert [c["params"]["requestId"] for c in wire.requests("$/cancel_request")] == [
                asked["id"]
            ]
            # The holder's feed runs on its own: the completion may come after the answer.
            with anyio.move_on_after(TIMEOUT):
                while not any(u.get("status") == "completed" for u, _ in seen.updates):
                    await seen.changed.wait()
            statuses = [u.get("status") for u, _ in seen.updates if u.get("status")]
            assert "completed" in statuses


@dataclass
class Withdrawn:
    """Never answers; records when its question was called off (cancelled)."""

    asked: anyio.Event = field(default_factory=anyio.Event)
    cancelled_at: list[float] = field(default_factory=list[float])

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        self.asked.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled_at.append(anyio.current_time())
            raise
        raise AssertionError("unreachable")


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_closing_the_client_while_its_question_is_open_ends_at_once(scheme: str) -> None:
    """The client leaves ``connect()`` while its permission handler waits, the turn still
    running on a server whose grace period (60 s) keeps the question open: the handler is
    cancelled and the close returns at once, not when the agent withdraws the question."""
    policy = Withdrawn()
    async with agent_process("ask", grace=60) as server:
        closing = 0.0
        with anyio.fail_after(TIMEOUT):
            async with connect(
                server.url(scheme=scheme), token=TOKEN, permission_policy=policy
            ) as client:
                session = await client.new_session()
                async with session.stream("deploy") as stream:
                    async for event in stream:
                        if isinstance(event, PermissionRequested):
                            break
                await policy.asked.wait()
                closing = anyio.current_time()
            closed = anyio.current_time()
        assert closed - closing < 2.0, f"closing took {closed - closing:.1f} s"
        assert len(policy.cancelled_at) == 1 and policy.cancelled_at[0] - closing < 2.0
        # The server is still serving (the session lives on in its grace period).
        assert (await server.command("live")) == "live 1"


# ---------------------------------------------------------------------- the grace period

GRACE = 5.0


async def test_a_session_left_alone_stays_live_for_the_grace_period_then_is_closed() -> None:
    async with agent_process("grace", grace=GRACE) as server:
        async with connect(server.url(), token=TOKEN, reconnect=False) as conn:
            session = await conn.new_session()
            with anyio.fail_after(TIMEOUT):
                assert (await session.prompt("hi")).text == "kept"
            assert await server.command("live") == "live 1"
        # The last client left: the session is still live (the grace period is running)...
        assert await server.command("live") == "live 1"
        # ...and closed once it is over (polled, bounded: the clock is not asserted on).
        for _ in range(int(TIMEOUT / 0.2)):
            if await server.command("live") == "live 0":
                break
            await anyio.sleep(0.2)  # the agent's process owns the clock; it is polled
        else:
            raise AssertionError(f"still live {TIMEOUT} s after a {GRACE} s grace period")
        # Closed, not deleted: it still lists and loads, with its history.
        async with connect(server.url(), token=TOKEN, reconnect=False) as conn:
            listed = await conn.list_sessions()
            assert session.session_id in [s.session_id for s in listed.sessions]
            loaded = await conn.load_session(session.session_id)
            assert [(m.role, m.text) for m in loaded.view.messages] == [
                ("user", "hi"),
                ("agent", "kept"),
            ]
            assert await server.command("live") == "live 1"


# ---------------------------------------------------------------------- a slow client


async def test_a_client_that_stops_reading_does_not_hold_the_others_and_catches_up() -> None:
    fast, slow = Seen(), Seen()
    async with (
        agent_process("slow") as server,
        relay_to(server.port) as relay,
        connect(server.url(), token=TOKEN, reconnect=False, update_listener=fast) as prompter,
        connect(server.url(relay.port), token=TOKEN, update_listener=slow) as lagging,
    ):
        session = await prompter.new_session()
        await lagging.resume_session(session.session_id)
        with anyio.fail_after(TIMEOUT):
            await session.prompt("warm up")
        await slow.until(lambda s: len(s.shown()) >= len(fast.updates))
        assert slow.shown() == fast.updates
        relay.pause()
        # A turn of ~6 MB goes out while the lagging client reads nothing.
        with anyio.fail_after(TIMEOUT):
            assert (await session.prompt("stream")).stop_reason == "end_turn"
        assert len([c for c in fast.chunks() if c.startswith("x")]) == 1500
        behind = len(slow.shown())
        assert behind < len(fast.updates)
        relay.resume()
        # It catches up (from its queue, or by reconnecting from its cursor), in order.
        await slow.until(lambda s: len(s.shown()) >= len(fast.updates))
        assert slow.shown() == fast.updates
        assert slow.prompts() == ["warm up", "stream"]

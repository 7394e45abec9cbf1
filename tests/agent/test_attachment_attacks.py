"""Several clients on one session, attacked: who may cancel, leaving with a question open,
the grace period running out under a turn, and forged cursors.

Each client is a real connection (the in-memory pair) to one :class:`AgentRuntime`; a client
that drops is served as a network server serves a connection (``runtime.serve``), so its
leaving is the runtime's own detection, not a call of the test. What is decided here (and in
``docs/architecture.md``, "Several clients"): any *attached* client may cancel a turn, one
that never attached cannot; a client leaving with a question open is no longer waited for;
a session whose grace period ends while a turn runs is closed once the turn ends, unless the
turn waits for an answer nobody is attached to give (then the turn is cancelled).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest
from _agent_support import CWD, RecordingClient, scripted, text
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.errors import CURSOR_META_KEY, ConnectionClosed, InvalidParams, is_cursor_rejection
from accord.roles import AgentSideConnection, ClientSideConnection
from accord.schema import (
    CancelNotification,
    InitializeRequest,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    ResumeSessionRequest,
)
from accord.store import MemorySessionStore
from accord.testing import Say, Stream, UseTool, WaitFor, WaitForCancel
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio


async def _connect(
    stack: AsyncExitStack, runtime: AgentRuntime, client: RecordingClient
) -> ClientSideConnection:
    """``client`` connected to ``runtime`` for the whole test, initialized."""
    agent_end, client_end = memory_transport_pair()
    await stack.enter_async_context(AgentSideConnection(runtime, agent_end))
    conn = await stack.enter_async_context(ClientSideConnection(client, client_end))
    with anyio.fail_after(TIMEOUT):
        await conn.initialize(InitializeRequest(protocol_version=1))
    return conn


async def _attached(
    stack: AsyncExitStack, runtime: AgentRuntime
) -> tuple[RecordingClient, ClientSideConnection]:
    """A fresh recording client connected to ``runtime`` for the whole test."""
    client = RecordingClient()
    return client, await _connect(stack, runtime, client)


@asynccontextmanager
async def _served(
    runtime: AgentRuntime, tg: anyio.abc.TaskGroup, client: RecordingClient
) -> AsyncGenerator[ClientSideConnection]:
    """A client served by ``runtime.serve`` (as a network connection is); leaving the block
    drops its connection."""
    agent_end, client_end = memory_transport_pair()
    tg.start_soon(runtime.serve, agent_end)
    async with ClientSideConnection(client, client_end) as conn:
        with anyio.fail_after(TIMEOUT):
            await conn.initialize(InitializeRequest(protocol_version=1))
        yield conn


async def _new(conn: Any) -> str:
    with anyio.fail_after(TIMEOUT):
        return (await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))).session_id


async def _resume(conn: Any, session_id: str, cursor: str | None = None) -> None:
    meta = None if cursor is None else {CURSOR_META_KEY: cursor}
    with anyio.fail_after(TIMEOUT):
        await conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD, meta=meta))


async def _prompt(conn: Any, session_id: str, words: str = "go") -> str:
    with anyio.fail_after(TIMEOUT):
        response = await conn.prompt(PromptRequest(session_id=session_id, prompt=text(words)))
    return response.stop_reason


async def _until(predicate: Any) -> None:
    """Poll (bounded) a condition of the runtime's own state, which sends no message."""
    with anyio.fail_after(TIMEOUT):
        while not predicate():  # noqa: ASYNC110 - the runtime's state signals nothing
            await anyio.sleep(0.01)


# ---------------------------------------------------------------------- who may cancel


async def test_a_client_that_never_attached_cannot_cancel_another_s_turn() -> None:
    release = anyio.Event()
    runtime = AgentRuntime(
        scripted([WaitFor(release), Say("finished")]), store=MemorySessionStore()
    )
    async with anyio.create_task_group() as tg, AsyncExitStack() as stack:
        owner, owner_conn = await _attached(stack, runtime)
        _, stranger = await _attached(stack, runtime)
        session_id = await _new(owner_conn)
        stops: list[str] = []

        async def run() -> None:
            stops.append(await _prompt(owner_conn, session_id))

        tg.start_soon(run)
        await _until(lambda: runtime._sessions.live[session_id].turn is not None)
        # Same runtime, same (absent) token, but not attached: the notification is ignored.
        await stranger.cancel(CancelNotification(session_id=session_id))
        await stranger.cancel(CancelNotification(session_id="no-such-session"))
        release.set()
        await _until(lambda: stops)
        assert stops == ["end_turn"]
        assert "finished" in str(owner.updates(session_id))


async def test_an_attached_observer_cancels_the_turn_and_every_client_sees_it_end() -> None:
    runtime = AgentRuntime(scripted([WaitForCancel()]), store=MemorySessionStore())
    async with anyio.create_task_group() as tg, AsyncExitStack() as stack:
        _, owner_conn = await _attached(stack, runtime)
        observer, observer_conn = await _attached(stack, runtime)
        session_id = await _new(owner_conn)
        await _resume(observer_conn, session_id)
        stops: list[str] = []

        async def run() -> None:
            stops.append(await _prompt(owner_conn, session_id))

        tg.start_soon(run)
        await observer.wait_until(lambda: "user_message_chunk" in observer.kinds(session_id))
        await observer_conn.cancel(CancelNotification(session_id=session_id))
        await _until(lambda: stops)
        assert stops == ["cancelled"]
        stored = [e.kind for e in await runtime.store.read_events(session_id)]
        assert stored.count("turn_completed") == 1


# ---------------------------------------------------------------------- leaving a question


async def test_an_observer_dropping_with_a_question_open_is_not_waited_for() -> None:
    """Both are asked; the observer holds its question and its connection drops: the prompter's
    answer decides, once, and the turn ends."""
    engine = scripted([UseTool(title="Deploy", kind="execute", ask=True), Say("done")])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=60)
    prompter = RecordingClient(answers=["hold"])
    holder = RecordingClient(answers=["hold"])
    async with anyio.create_task_group() as tg, AsyncExitStack() as stack:
        conn = await _connect(stack, runtime, prompter)
        session_id = await _new(conn)
        stops: list[str] = []
        done = anyio.Event()

        async def run() -> None:
            stops.append(await _prompt(conn, session_id))
            done.set()

        async with _served(runtime, tg, holder) as holder_conn:
            await _resume(holder_conn, session_id)
            tg.start_soon(run)
            await holder.wait_until(lambda: holder.held == 1)
            await prompter.wait_until(lambda: prompter.held == 1)
        # The holder's connection is gone: its question is no longer counted on.
        live = runtime._sessions.live[session_id]
        await _until(lambda: len(live.links) == 1)
        assert not done.is_set() and engine.decisions == []
        # The prompter's question is still open; withdrawing it (cancel) ends the turn cleanly.
        await conn.cancel(CancelNotification(session_id=session_id))
        with anyio.fail_after(TIMEOUT):
            await done.wait()
        tg.cancel_scope.cancel()  # the holder's serve() would wait out the grace period
        assert stops == ["cancelled"]
    assert [d.outcome for d in engine.decisions] == ["cancelled"]
    assert engine.tool_runs == []
    assert prompter.released == 1


# ---------------------------------------------------------------------- the grace period


async def test_the_grace_period_ending_under_a_running_turn_waits_for_it() -> None:
    """The last client drops mid-turn; the grace period (50 ms) passes while the turn still
    runs: the session stays live until the turn has ended and been stored, then closes."""
    release = anyio.Event()
    engine = scripted([Stream(count=5, prefix="a"), WaitFor(release), Say("after grace")])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=0.05)
    client = RecordingClient()
    session_id = ""
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:

            async def prompt_and_drop(conn: Any, session_id: str) -> None:
                with pytest.raises(ConnectionClosed):
                    await _prompt(conn, session_id)

            async with anyio.create_task_group() as inner, _served(runtime, tg, client) as conn:
                session_id = await _new(conn)
                inner.start_soon(prompt_and_drop, conn, session_id)
                await client.wait_until(
                    lambda: client.kinds(session_id).count("agent_message_chunk") == 5
                )
            live = runtime._sessions.live[session_id]
            await _until(lambda: not live.links)
            await anyio.sleep(0.3)  # six grace periods: the expiry has run and waits
            assert runtime._sessions.live.get(session_id) is live
            assert live.turn is not None
            release.set()
        # serve() returned once the session, its turn over, was closed.
    assert runtime.statistics().live_sessions == 0
    assert engine.session(session_id).cancelled_turns == 0
    stored = await runtime.store.read_events(session_id)
    assert [e.kind for e in stored].count("turn_completed") == 1
    assert "after grace" in str([e.payload for e in stored])


async def test_the_grace_period_ending_under_an_unanswerable_question_cancels_the_turn() -> None:
    """The only client drops while it is being asked: once the grace period is over nobody
    can answer, so the turn is cancelled (the tool never runs) and the session closed."""
    engine = scripted([UseTool(title="Deploy", kind="execute", ask=True), Say("never")])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=0.05)
    client = RecordingClient(answers=["hold"])
    session_id = ""
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:

            async def prompt_and_drop(conn: Any, session_id: str) -> None:
                with pytest.raises(ConnectionClosed):
                    await _prompt(conn, session_id)

            async with anyio.create_task_group() as inner, _served(runtime, tg, client) as conn:
                session_id = await _new(conn)
                inner.start_soon(prompt_and_drop, conn, session_id)
                await client.wait_until(lambda: client.held == 1)
    assert runtime.statistics().live_sessions == 0
    assert engine.tool_runs == []
    assert [d.outcome for d in engine.decisions] == ["cancelled"]
    stored = [e.kind for e in await runtime.store.read_events(session_id)]
    assert stored.count("turn_completed") == 1


# ---------------------------------------------------------------------- forged cursors


async def test_forged_cursors_are_refused_with_their_reason() -> None:
    """Huge, negative, padded and old-epoch cursors: -32602 with ``data.reason``; nothing is
    attached by a refused one, and the session's own cursor still works after them."""
    runtime = AgentRuntime(scripted([Say("one")], [Say("two")]), store=MemorySessionStore())
    async with AsyncExitStack() as stack:
        owner, owner_conn = await _attached(stack, runtime)
        _, forger = await _attached(stack, runtime)
        session_id = await _new(owner_conn)
        await _prompt(owner_conn, session_id)
        # A reload starts a new epoch; the second turn's events are stamped with it.
        with anyio.fail_after(TIMEOUT):
            await owner_conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
        await _prompt(owner_conn, session_id)
        cursors: list[str] = [
            cursor
            for n in owner.notifications
            if n.session_id == session_id
            and isinstance(cursor := (n.meta or {}).get(CURSOR_META_KEY), str)
        ]
        _version, tag, epoch, seq = cursors[-1].split(".")
        assert int(epoch) >= 1
        cases = {
            "cursor_malformed": [
                f"1.{tag}.{epoch}.{'9' * 19}",  # more digits than a seq has
                f"1.{tag}.{epoch}.{'9' * 5000}",  # beyond Python's int() digit limit
                f"1.{tag}.-1.{seq}",
                f"1.{tag}.{epoch}.-{seq}",
                f"1.{tag}.0{epoch}.{seq}",  # a padded number is not one this agent made
                f"1.{tag}.{epoch}.{seq} ",
                # (a tag of digits only has no other case: 2% of tags)
                *([f"1.{tag.upper()}.{epoch}.{seq}"] if tag.upper() != tag else []),
                f"2.{tag}.{epoch}.{seq}",
                f"1.{tag}.{epoch}.{seq}\x00",
                "1.\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668.0.0",  # non-ASCII digits
            ],
            "cursor_foreign": [f"1.{'0' * 8 if tag != '0' * 8 else '1' * 8}.{epoch}.{seq}"],
            "cursor_unknown": [f"1.{tag}.{epoch}.{'9' * 18}"],
            "cursor_epoch": [
                f"1.{tag}.{'9' * 18}.{seq}",  # ahead of the session
                f"1.{tag}.{int(epoch) - 1}.{seq}",  # an older epoch than the event's
            ],
        }
        for reason, forged in cases.items():
            for cursor in forged:
                with pytest.raises(InvalidParams) as refused:
                    await _resume(forger, session_id, cursor)
                assert is_cursor_rejection(refused.value), cursor
                assert refused.value.data["reason"] == reason, cursor
                assert refused.value.code == -32602
        live = runtime._sessions.live[session_id]
        assert len(live.links) == 1  # no refused cursor attached the forger
        await _resume(forger, session_id, cursors[-1])
        assert len(live.links) == 2

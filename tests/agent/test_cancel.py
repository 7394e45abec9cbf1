"""Cancellation: ``session/cancel`` and disconnects stop turns promptly, nothing is lost."""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import pytest
from _agent_support import Harness, RecordingClient, message_texts, scripted, serve, text
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.engines import ToolCallEnded, ToolCallStarted, TurnCompleted
from accord.errors import ConnectionClosed
from accord.events import event_from_json
from accord.jsonrpc import CANCEL_REQUEST_METHOD, set_wire_observer
from accord.roles import AgentSideConnection, ClientSideConnection
from accord.schema import (
    CancelNotification,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
)
from accord.store import MemorySessionStore, SessionStore
from accord.testing import (
    Emit,
    Say,
    ScriptedEngine,
    Stream,
    UseTool,
    WaitForCancel,
)
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio


async def _prompt_then_cancel(h: Harness, session_id: str, ready: Callable[[], bool]) -> str:
    """Send a prompt, wait until ``ready()`` holds, cancel, return the stop reason."""
    result: list[str] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            result.append((await h.prompt(session_id, "go")).stop_reason)

        tg.start_soon(run)
        await h.client.wait_until(ready)
        await h.conn.cancel(CancelNotification(session_id=session_id))
    return result[0]


async def _stored_kinds(store: MemorySessionStore, session_id: str) -> list[str]:
    return [e.kind for e in await store.read_events(session_id)]


async def test_a_cooperative_engine_stops_on_cancel_and_the_partial_output_is_stored() -> None:
    store = MemorySessionStore()
    engine = scripted([Say("partial"), WaitForCancel(), Say("never")])
    async with serve(engine, store=store, cancel_grace=TIMEOUT) as h:
        session_id = await h.new_session()
        seen = lambda: "agent_message_chunk" in h.client.kinds(session_id)  # noqa: E731
        assert await _prompt_then_cancel(h, session_id, seen) == "cancelled"
        assert message_texts(h.client.updates(session_id)) == [("agent_message_chunk", "partial")]
        stored = await store.read_events(session_id)
        assert [e.kind for e in stored].count("text_chunk") == 1
        last = event_from_json(stored[-1].payload)
        assert last == TurnCompleted(stop_reason="cancelled")
        # the cooperative engine finished cleanly: it saved its state
        assert "state_snapshot" in [e.kind for e in stored]
        assert h.engine.session(session_id).cancelled_turns == 1


async def test_an_engine_that_ignores_cancel_is_stopped_after_the_grace_period() -> None:
    store = MemorySessionStore()
    engine = scripted([Say("partial"), WaitForCancel(cooperative=False)])
    async with serve(engine, store=store, cancel_grace=0) as h:
        session_id = await h.new_session()
        seen = lambda: "agent_message_chunk" in h.client.kinds(session_id)  # noqa: E731
        assert await _prompt_then_cancel(h, session_id, seen) == "cancelled"
        kinds = await _stored_kinds(store, session_id)
        assert kinds.count("text_chunk") == 1
        assert kinds[-1] == "turn_completed"
        assert "state_snapshot" not in kinds  # its step was cancelled, not finished


async def test_cancel_cancels_a_pending_permission_request_and_the_tool_never_runs() -> None:
    tapped: list[tuple[str, dict[str, object]]] = []

    def tap(direction: str, message: dict[str, object]) -> None:
        tapped.append((direction, message))
        if previous is not None:
            previous(direction, message)  # type: ignore[arg-type]

    previous = set_wire_observer(tap)
    try:
        client = RecordingClient(answers=["hold"])
        engine = scripted(
            [UseTool(title="rm -rf build", kind="delete", ask=True, tool_call_id="t1")]
        )
        async with serve(engine, client=client, cancel_grace=TIMEOUT) as h:
            session_id = await h.new_session()
            stop = await _prompt_then_cancel(h, session_id, lambda: client.held == 1)
            await client.wait_until(lambda: client.released == 1)
    finally:
        set_wire_observer(previous)
    assert stop == "cancelled"
    assert engine.tool_runs == []
    assert [d.outcome for d in engine.decisions] == ["cancelled"]
    cancels = [m for d, m in tapped if d == "sent" and m.get("method") == CANCEL_REQUEST_METHOD]
    assert cancels, "the runtime sends $/cancel_request for its permission request"
    tool = [u for u in client.updates(session_id) if u["sessionUpdate"].startswith("tool")]
    assert tool[0]["status"] == "pending" and tool[-1]["status"] == "failed"


async def test_unfinished_tool_calls_are_ended_as_failed() -> None:
    store = MemorySessionStore()
    engine = scripted(
        [
            UseTool(title="Build", kind="execute", tool_call_id="t1", start_running=True, work=0),
            UseTool(title="Long", kind="execute", tool_call_id="t2", start_running=True, work=60),
        ]
    )
    # t2 "works" cooperatively but the engine never gets to end it: grace 0 cancels the step
    async with serve(engine, store=store, cancel_grace=0) as h:
        session_id = await h.new_session()

        def running() -> bool:
            return any(u.get("toolCallId") == "t2" for u in h.client.updates(session_id))

        assert await _prompt_then_cancel(h, session_id, running) == "cancelled"
        t2 = [u for u in h.client.updates(session_id) if u.get("toolCallId") == "t2"]
        assert [u.get("status") for u in t2] == ["in_progress", "failed"]
        t1 = [u for u in h.client.updates(session_id) if u.get("toolCallId") == "t1"]
        assert t1[-1]["status"] == "completed"


async def test_cancel_when_idle_or_unknown_changes_nothing() -> None:
    async with serve(scripted([Say("a")], [Say("b")])) as h:
        session_id = await h.new_session()
        await h.conn.cancel(CancelNotification(session_id=session_id))
        await h.conn.cancel(CancelNotification(session_id="unknown"))
        assert (await h.prompt(session_id)).stop_reason == "end_turn"
        assert (await h.prompt(session_id)).stop_reason == "end_turn"


async def test_a_session_prompts_normally_after_a_cancelled_turn() -> None:
    engine = scripted([Say("working"), WaitForCancel()], [Say("again")])
    async with serve(engine) as h:
        session_id = await h.new_session()
        seen = lambda: "agent_message_chunk" in h.client.kinds(session_id)  # noqa: E731
        assert await _prompt_then_cancel(h, session_id, seen) == "cancelled"
        assert (await h.prompt(session_id)).stop_reason == "end_turn"
        assert message_texts(h.client.updates(session_id))[-1] == ("agent_message_chunk", "again")


async def test_a_client_that_disconnects_mid_turn_cancels_its_turn() -> None:
    store = MemorySessionStore()
    engine = ScriptedEngine([[Stream(count=3), WaitForCancel()]])
    runtime = AgentRuntime(engine, store=store)
    client = RecordingClient()
    agent_end, client_end = memory_transport_pair()
    session_id = ""
    with anyio.fail_after(TIMEOUT):
        async with AgentSideConnection(runtime, agent_end) as agent_conn:
            async with (
                anyio.create_task_group() as tg,
                ClientSideConnection(client, client_end) as conn,
            ):
                await conn.initialize()
                session_id = (
                    await conn.new_session(NewSessionRequest(cwd="/tmp", mcp_servers=[]))
                ).session_id

                async def prompt() -> None:
                    with pytest.raises(ConnectionClosed):
                        await conn.prompt(PromptRequest(session_id=session_id, prompt=text("x")))

                tg.start_soon(prompt)
                # All three chunks first: closing while a notification is still in flight
                # trips a teardown race in the client's Connection (BrokenResourceError).
                await client.wait_until(lambda: client.kinds().count("agent_message_chunk") == 3)
            # The client is gone; the agent's prompt handler must end by itself.
            await agent_conn.wait_closed()
    stored = [e.kind for e in await store.read_events(session_id)]
    assert stored.count("text_chunk") == 3
    assert stored[-1] == "turn_completed"
    assert engine.session(session_id).cancelled_turns == 1


async def test_cancel_request_on_a_running_prompt_cancels_the_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``$/cancel_request`` naming a running ``session/prompt`` cancels the turn as
    ``session/cancel`` does: the prompt answers ``cancelled``, the open tool call is ended and
    nothing is logged as an error (issue 26)."""
    prompt_ids: list[object] = []

    def tap(direction: str, message: dict[str, object]) -> None:
        if direction == "sent" and message.get("method") == "session/prompt":
            prompt_ids.append(message["id"])
        if previous is not None:
            previous(direction, message)  # type: ignore[arg-type]

    started = ToolCallStarted(tool_call_id="t1", title="Long", status="in_progress")
    engine = scripted([Emit(started), WaitForCancel()], [Say("again")])
    previous = set_wire_observer(tap)
    try:
        async with serve(engine, cancel_grace=TIMEOUT) as h:
            session_id = await h.new_session()
            result: list[str] = []
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    result.append((await h.prompt(session_id, "go")).stop_reason)

                tg.start_soon(run)
                await h.client.wait_until(lambda: "tool_call" in h.client.kinds(session_id))
                notice = {"requestId": prompt_ids[-1]}
                await h.conn.connection.notify(CANCEL_REQUEST_METHOD, notice)
            t1 = [u for u in h.client.updates(session_id) if u.get("toolCallId") == "t1"]
            assert (await h.prompt(session_id)).stop_reason == "end_turn"
    finally:
        set_wire_observer(previous)
    assert result == ["cancelled"]
    assert t1[-1]["status"] == "failed"
    assert t1[-1]["_meta"] == {"accord": {"status": "cancelled"}}
    assert h.engine.session(session_id).cancelled_turns == 1
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


# ------------------------------------------------------------ over every store (PostgreSQL too)


def _gap_free(seqs: list[int]) -> bool:
    return seqs == list(range(1, len(seqs) + 1))


async def test_cancel_request_on_a_prompt_over_every_store_ends_the_turn_and_its_tool_call(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    """``$/cancel_request`` on a running ``session/prompt`` over each store (memory, SQLite,
    PostgreSQL): the prompt answers ``cancelled``, the open tool call is stored ended
    (cancelled) before the completed turn, the stored chain has no gap, the next prompt runs,
    and nothing is logged as an error."""
    prompt_ids: list[object] = []

    def tap(direction: str, message: dict[str, object]) -> None:
        if direction == "sent" and message.get("method") == "session/prompt":
            prompt_ids.append(message["id"])
        if previous is not None:
            previous(direction, message)  # type: ignore[arg-type]

    started = ToolCallStarted(tool_call_id="t1", title="Long", status="in_progress")
    engine = scripted([Emit(started), WaitForCancel()], [Say("again")])
    previous = set_wire_observer(tap)
    try:
        async with serve(engine, store=store, cancel_grace=TIMEOUT) as h:
            session_id = await h.new_session()
            result: list[str] = []
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    result.append((await h.prompt(session_id, "go")).stop_reason)

                tg.start_soon(run)
                await h.client.wait_until(lambda: "tool_call" in h.client.kinds(session_id))
                await h.conn.connection.notify(CANCEL_REQUEST_METHOD, {"requestId": prompt_ids[-1]})
            assert (await h.prompt(session_id)).stop_reason == "end_turn"
    finally:
        set_wire_observer(previous)
    assert result == ["cancelled"]
    stored = await store.read_events(session_id)
    assert _gap_free([e.seq for e in stored])
    kinds = [e.kind for e in stored]
    first_turn = kinds[: kinds.index("turn_completed") + 1]
    assert first_turn[-2:] == ["tool_call_ended", "turn_completed"]
    assert event_from_json(stored[len(first_turn) - 1].payload) == TurnCompleted(
        stop_reason="cancelled"
    )
    assert kinds.count("turn_completed") == 2
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_client_dying_during_a_permission_question_over_every_store(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The only client's connection drops while its permission question is open (each store,
    PostgreSQL included): the question is withdrawn, the engine gets ``cancelled`` and the
    tool never runs, the turn is stored ended (tool call ended, turn completed) with no gap,
    nothing is logged as an error, and a new client loads the session and prompts."""
    engine = scripted(
        [UseTool(title="Deploy", kind="execute", ask=True, tool_call_id="t1"), Say("never")],
        [Say("back")],
    )
    runtime = AgentRuntime(engine, store=store, cancel_grace=TIMEOUT)
    client = RecordingClient(answers=["hold"])
    agent_end, client_end = memory_transport_pair()
    session_id = ""
    with anyio.fail_after(TIMEOUT):
        async with AgentSideConnection(runtime, agent_end) as agent_conn:
            async with (
                anyio.create_task_group() as tg,
                ClientSideConnection(client, client_end) as conn,
            ):
                await conn.initialize()
                session_id = (
                    await conn.new_session(NewSessionRequest(cwd="/tmp", mcp_servers=[]))
                ).session_id

                async def prompt() -> None:
                    with pytest.raises(ConnectionClosed):
                        await conn.prompt(PromptRequest(session_id=session_id, prompt=text("x")))

                tg.start_soon(prompt)
                await client.wait_until(lambda: client.held == 1)
            # The client died with its question open; the agent's handler ends by itself.
            await agent_conn.wait_closed()
    assert engine.tool_runs == []
    assert [d.outcome for d in engine.decisions] == ["cancelled"]
    stored = await store.read_events(session_id)
    assert _gap_free([e.seq for e in stored])
    kinds = [e.kind for e in stored]
    assert kinds.count("tool_call_started") == kinds.count("tool_call_ended") == 1
    assert kinds[-1] == "turn_completed"
    assert event_from_json(stored[-1].payload) == TurnCompleted(stop_reason="cancelled")
    assert "text_chunk" not in kinds
    async with serve(runtime=runtime) as back:
        await back.conn.load_session(
            LoadSessionRequest(session_id=session_id, cwd="/tmp", mcp_servers=[])
        )
        assert (await back.prompt(session_id)).stop_reason == "end_turn"
    assert message_texts(back.client.updates(session_id))[-1] == ("agent_message_chunk", "back")
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_turn_torn_down_with_its_connection_is_stored_closed_and_nothing_is_logged(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The agent's side of the connection is closed under a running turn (as a server drops
    a connection whose client went away), with a tool call open and an engine that ignores
    cancel: the handler is cancelled, the turn's writer with it. The end of the turn is still
    stored (the tool call ended as cancelled, the turn completed ``cancelled``), the chain
    has no gap, nothing is logged as a warning or an error (before: ERROR "handler for
    'session/prompt' failed" with WriterClosed), and the session loads and prompts again."""
    started = ToolCallStarted(tool_call_id="t1", title="Long", status="in_progress")
    engine = ScriptedEngine(
        [[Emit(started), Stream(count=3), WaitForCancel(cooperative=False)], [Say("back")]]
    )
    runtime = AgentRuntime(engine, store=store, cancel_grace=TIMEOUT)
    client = RecordingClient()
    agent_end, client_end = memory_transport_pair()
    session_id = ""
    with anyio.fail_after(TIMEOUT):
        async with (
            AgentSideConnection(runtime, agent_end),
            anyio.create_task_group() as tg,
            ClientSideConnection(client, client_end) as conn,
        ):
            await conn.initialize()
            session_id = (
                await conn.new_session(NewSessionRequest(cwd="/tmp", mcp_servers=[]))
            ).session_id

            async def prompt() -> None:
                with pytest.raises(ConnectionClosed):
                    await conn.prompt(PromptRequest(session_id=session_id, prompt=text("x")))

            tg.start_soon(prompt)
            await client.wait_until(lambda: client.kinds().count("agent_message_chunk") == 3)
        # Both sides closed; the agent's did not wait for its running prompt handler.
    stored = await store.read_events(session_id)
    assert _gap_free([e.seq for e in stored])
    kinds = [e.kind for e in stored]
    assert kinds[-2:] == ["tool_call_ended", "turn_completed"]
    assert event_from_json(stored[-2].payload) == ToolCallEnded(
        tool_call_id="t1", status="cancelled"
    )
    assert event_from_json(stored[-1].payload) == TurnCompleted(stop_reason="cancelled")
    assert kinds.count("text_chunk") == 3
    async with serve(runtime=runtime) as back:
        await back.conn.load_session(
            LoadSessionRequest(session_id=session_id, cwd="/tmp", mcp_servers=[])
        )
        assert (await back.prompt(session_id)).stop_reason == "end_turn"
    again = await store.read_events(session_id)
    assert _gap_free([e.seq for e in again])
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []

"""Prompt turns: stream contents and order, results, updates outside turns, load replay,
cancellation, errors, busy and closed sessions."""

from __future__ import annotations

import gc
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from _client_agents import (
    FullAgent,
    ModesAgent,
    ScriptedAgent,
    WireAgent,
    agent_text,
    chunk,
    text_content,
    text_of,
    thought,
    tool_call,
    tool_update,
    user_chunk,
)
from helpers.timeouts import TIMEOUT

from accord.client import (
    AllowAll,
    AskCallback,
    Cancel,
    CommandsUpdated,
    ConfigUpdated,
    ModeUpdated,
    PermissionContext,
    PermissionDecision,
    PermissionRequested,
    PermissionResolved,
    PlanUpdated,
    Select,
    TextDelta,
    ThoughtDelta,
    TitleUpdated,
    ToolCallAdded,
    ToolCallUpdated,
    TurnEvent,
    TurnFinished,
    UsageUpdated,
    connect,
)
from accord.errors import InvalidParams, LocalProtocolError, ResourceNotFound, SessionBusy
from accord.schema import (
    AvailableCommand,
    AvailableCommandsUpdateSessionUpdate,
    ConfigOptionUpdateSessionUpdate,
    CurrentModeUpdateSessionUpdate,
    ImageContentBlock,
    PlanEntry,
    PlanSessionUpdate,
    PromptRequest,
    SessionInfoUpdateSessionUpdate,
    StopReason,
    TextContentBlock,
    Usage,
    UsageUpdateSessionUpdate,
)

pytestmark = pytest.mark.anyio


async def collect(stream: Any) -> list[TurnEvent]:
    events: list[TurnEvent] = []
    with anyio.fail_after(TIMEOUT):
        async for event in stream:
            events.append(event)
    return events


async def busy_turn(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
    sid = request.session_id
    await agent.send(sid, thought("Let me look."), chunk("Reading ", "m1"), chunk("it.", "m1"))
    await agent.send(sid, tool_call("t1", "Read a.py", kind="read"))
    answer = await agent.ask(sid, "t1")
    assert answer.outcome.outcome == "selected"
    await agent.send(
        sid,
        tool_update("t1", status="completed", content=[text_content("print(1)")]),
        PlanSessionUpdate(entries=[PlanEntry(content="read", priority="high", status="completed")]),
        UsageUpdateSessionUpdate(used=120, size=1000),
        CurrentModeUpdateSessionUpdate(current_mode_id="code"),
        ConfigOptionUpdateSessionUpdate(config_options=[]),
        AvailableCommandsUpdateSessionUpdate(
            available_commands=[AvailableCommand(name="test", description="Run tests")]
        ),
        SessionInfoUpdateSessionUpdate(title="Reading a.py"),
        chunk("Done.", "m2"),
    )
    return "end_turn"


async def test_the_stream_yields_every_update_in_order_then_the_stop_reason() -> None:
    agent = ScriptedAgent(busy_turn)
    async with connect(agent, permission_policy=AllowAll()) as conn:
        session = await conn.new_session()
        stream = session.stream("read a.py")
        events = await collect(stream)
        result = await stream.wait_finished()
    kinds = [type(e) for e in events]
    assert kinds == [
        ThoughtDelta,
        TextDelta,
        TextDelta,
        ToolCallAdded,
        PermissionRequested,
        PermissionResolved,
        ToolCallUpdated,
        PlanUpdated,
        UsageUpdated,
        ModeUpdated,
        ConfigUpdated,
        CommandsUpdated,
        TitleUpdated,
        TextDelta,
        TurnFinished,
    ]
    requested, resolved = events[4], events[5]
    assert isinstance(requested, PermissionRequested) and isinstance(resolved, PermissionResolved)
    assert requested.tool_call.title == "Read a.py"  # known from the earlier tool_call
    assert resolved.request_id == requested.request_id
    assert resolved.decision == Select("yes-1")
    assert resolved.option is not None and resolved.option.kind == "allow_once"
    assert events[-1] == TurnFinished(stop_reason="end_turn")
    assert result.stop_reason == "end_turn"
    assert result.text == "Reading it.Done."
    assert [t.status for t in result.tool_calls] == ["completed"]
    assert stream.result == result
    view = session.view
    assert [m.role for m in view.messages] == ["user", "thought", "agent", "agent"]
    assert view.messages[0].text == "read a.py"
    assert view.title == "Reading a.py"
    assert view.current_mode_id == "code"
    assert view.last_stop_reason == "end_turn"


async def test_prompt_returns_the_result_and_folds_into_the_view() -> None:
    agent = ScriptedAgent(busy_turn)
    async with connect(agent, permission_policy=AllowAll()) as conn:
        session = await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            result = await session.prompt([TextContentBlock(text="read "), "a.py"])
        assert session.state == "idle"
    assert result.text == "Reading it.Done."
    assert text_of(agent.prompts[0]) == "read a.py"
    assert session.view.tool_calls["t1"].text == "print(1)"


async def test_turn_usage_is_reported(wire: WireAgent) -> None:
    usage = Usage(total_tokens=30, input_tokens=20, output_tokens=10)

    async def agent_side() -> None:
        await wire.handshake()
        prompt = await wire.expect("session/prompt")
        await wire.reply(prompt, {"stopReason": "max_tokens", "usage": usage.to_wire()})

    async with wire.playing(agent_side), connect(wire.client_end) as conn:
        session = await conn.new_session()
        events = await collect(session.stream("x"))
    assert events == [TurnFinished(stop_reason="max_tokens", usage=usage)]
    assert session.view.last_turn_usage == usage


async def test_updates_before_the_session_is_known_are_not_lost() -> None:
    async def announce(agent: ScriptedAgent, session_id: str) -> None:
        await agent.send(
            session_id,
            AvailableCommandsUpdateSessionUpdate(
                available_commands=[AvailableCommand(name="plan", description="Make a plan")]
            ),
            chunk("welcome"),
        )

    agent = ScriptedAgent(on_new_session=announce)
    async with connect(agent) as conn:
        session = await conn.new_session()
        assert [c.name for c in session.view.available_commands] == ["plan"]
        assert session.view.messages[0].text == "welcome"
        assert conn.statistics().early_updates == 0


async def test_updates_outside_a_turn_fold_into_the_view(wire: WireAgent) -> None:
    """Before the first prompt, right after a prompt's answer, and between turns."""

    async def agent_side() -> None:
        await wire.handshake("s1")
        await wire.update("s1", agent_text("idle chatter"))
        await wire.reply(await wire.expect("_ping"), {})
        prompt = await wire.expect("session/prompt")
        await wire.update("s1", agent_text("answer", "m1"))
        await wire.reply(prompt, {"stopReason": "end_turn"})
        await wire.update("s1", agent_text("straggler", "m1"))
        ping = await wire.expect("_ping")
        await wire.reply(ping, {})

    async with wire.playing(agent_side), connect(wire.client_end) as conn:
        session = await conn.new_session()
        await conn.ext_request("_ping")  # the chatter has been handled by now
        assert session.view.messages[0].text == "idle chatter"
        stream = session.stream("question")
        events = await collect(stream)
        # a round trip: the update sent before the answer has been handled by now
        await conn.ext_request("_ping")
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts[0] == "answer"  # the update from before the prompt is not part of the turn
    assert isinstance(events[-1], TurnFinished)
    view = session.view
    assert [m.text for m in view.messages] == ["idle chatter", "question", "answerstraggler"]
    assert (await stream.wait_finished()).text == "answer"


async def test_load_replays_history_into_the_view_and_prompting_continues() -> None:
    history = [
        user_chunk("fix the bug", "u1"),
        thought("thinking", "th1"),
        chunk("I will read ", "a1"),
        chunk("the file.", "a1"),
        tool_call("t1", "Read bug.py", status="completed"),
        PlanSessionUpdate(entries=[PlanEntry(content="fix", priority="high", status="pending")]),
        chunk("Fixed.", "a2"),
    ]
    agent = FullAgent(history=history)
    async with connect(agent) as conn:
        assert conn.supports("loadSession")
        session = await conn.load_session("old-session", "/work")
        view = session.view
        assert [(m.role, m.text) for m in view.messages] == [
            ("user", "fix the bug"),
            ("thought", "thinking"),
            ("agent", "I will read the file."),
            ("agent", "Fixed."),
        ]
        assert view.tool_calls["t1"].status == "completed"
        assert [e.content for e in view.plan] == ["fix"]
        result = await session.prompt("thanks")
        assert result.text == "thanks"
        assert [m.text for m in view.messages][-2:] == ["thanks", "thanks"]
        with pytest.raises(LocalProtocolError, match="already open"):
            await conn.load_session("old-session")
    assert agent.loads[0].cwd == "/work"


async def test_a_failed_load_leaves_no_session() -> None:
    class Refusing(FullAgent):
        async def load_session(self, request: Any) -> Any:
            raise ResourceNotFound("no such session")

    async with connect(Refusing()) as conn:
        with pytest.raises(ResourceNotFound):
            await conn.load_session("gone")
        assert conn.sessions == {}


async def test_resume_and_fork() -> None:
    agent = FullAgent()
    async with connect(agent) as conn:
        resumed = await conn.resume_session("old", "/w", additional_directories=["/extra"])
        assert resumed.roots == ("/w", "/extra")
        fork = await conn.fork_session("old")
        assert fork.session_id == "old-fork"
        # sent before the fork's answer named the session: held, then folded in
        assert fork.view.messages[0].text == "early word from the fork"


async def test_modes_from_setup_and_set_mode() -> None:
    agent = ModesAgent()
    async with connect(agent) as conn:
        session = await conn.new_session()
        assert session.view.current_mode_id == "ask"
        assert [m.id for m in session.view.available_modes] == ["ask", "code"]
        await session.set_mode("code")
        assert session.view.current_mode_id == "code"
    assert agent.mode_requests[0].mode_id == "code"


async def test_set_config_option_stores_the_answer(wire: WireAgent) -> None:
    seen: list[dict[str, Any]] = []
    option = {
        "type": "boolean",
        "id": "brave",
        "name": "Brave mode",
        "currentValue": True,
    }

    async def agent_side() -> None:
        await wire.handshake()
        for _ in range(2):
            request = await wire.expect("session/set_config_option")
            seen.append(request["params"])
            await wire.reply(request, {"configOptions": [option]})

    async with wire.playing(agent_side), connect(wire.client_end) as conn:
        session = await conn.new_session()
        options = await session.set_config_option("brave", True)
        await session.set_config_option("model", "fast")
    assert [o.id for o in options] == ["brave"]
    assert session.view.config_options == options
    assert seen[0] == {"sessionId": "s1", "configId": "brave", "type": "boolean", "value": True}
    assert seen[1] == {"sessionId": "s1", "configId": "model", "value": "fast"}


# --- cancellation --------------------------------------------------------------------------


async def wait_for_cancel(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
    sid = request.session_id
    await agent.send(sid, tool_call("t1", "rm -rf build", kind="execute"))
    answer = await agent.ask(sid, "t1")
    assert answer.outcome.outcome == "cancelled"
    await agent.cancelled.wait()
    await agent.say(sid, "stopped")
    return "cancelled"


async def test_cancel_answers_pending_permission_requests_cancelled() -> None:
    asked = anyio.Event()

    async def never_answers(context: PermissionContext) -> PermissionDecision:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError

    agent = ScriptedAgent(wait_for_cancel)
    async with connect(agent, permission_policy=AskCallback(never_answers)) as conn:
        session = await conn.new_session()
        stream = session.stream("clean up")
        events: list[TurnEvent] = []
        with anyio.fail_after(TIMEOUT):
            async for event in stream:
                events.append(event)
                if isinstance(event, PermissionRequested):
                    await asked.wait()
                    assert conn.statistics().pending_permissions == 1
                    await session.cancel()
                    assert session.state == "cancelling"
                    assert session.view.tool_calls["t1"].status == "cancelled"
    resolved = next(e for e in events if isinstance(e, PermissionResolved))
    assert resolved.decision == Cancel()
    assert resolved.option is None
    assert events[-1] == TurnFinished(stop_reason="cancelled")
    assert any(isinstance(e, TextDelta) and e.text == "stopped" for e in events)
    assert agent.cancels == [session.session_id]
    assert session.state == "idle"


async def test_permission_requests_during_cancelling_are_answered_cancelled() -> None:
    started = anyio.Event()

    async def turn(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
        started.set()
        await agent.cancelled.wait()
        answer = await agent.ask(request.session_id, "late")
        assert answer.outcome.outcome == "cancelled"
        return "cancelled"

    agent = ScriptedAgent(turn)
    async with connect(agent, permission_policy=AllowAll()) as conn:
        session = await conn.new_session()
        async with anyio.create_task_group() as tg:

            async def cancel_when_started() -> None:
                await started.wait()
                await session.cancel()

            tg.start_soon(cancel_when_started)
            with anyio.fail_after(TIMEOUT):
                result = await session.prompt("go")
            assert result.stop_reason == "cancelled"


async def test_cancelling_an_idle_session_is_harmless() -> None:
    agent = ScriptedAgent()
    async with connect(agent) as conn:
        session = await conn.new_session()
        await session.cancel()
        assert session.state == "idle"
        assert (await session.prompt("after")).text == "after"
        await conn.ext_notification("_sync")  # the cancel notification went out first
    assert agent.cancels == [session.session_id]


async def test_an_abandoned_prompt_sends_session_cancel() -> None:
    started = anyio.Event()

    async def hang(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError

    agent = ScriptedAgent(hang)
    async with connect(agent) as conn:
        session = await conn.new_session()
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:

                async def cancel_when_started() -> None:
                    await started.wait()
                    scope.cancel()

                tg.start_soon(cancel_when_started)
                await session.prompt("long job")
        assert session.state == "idle"
        with anyio.fail_after(TIMEOUT):
            await agent.cancelled.wait()


# --- streams read partly, errors, busy, closed ------------------------------------------------


async def many_chunks(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
    for index in range(200):
        await agent.say(request.session_id, f"{index} ")
    return "end_turn"


async def test_a_small_buffer_applies_backpressure_without_losing_events() -> None:
    async with connect(ScriptedAgent(many_chunks), event_buffer=2) as conn:
        session = await conn.new_session()
        events = await collect(session.stream("go"))
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == [f"{i} " for i in range(200)]


async def test_leaving_the_stream_early_lets_the_turn_finish() -> None:
    async with connect(ScriptedAgent(many_chunks), event_buffer=4) as conn:
        session = await conn.new_session()
        async with session.stream("go") as stream:
            first = await stream.__anext__()
        assert isinstance(first, TextDelta)
        with anyio.fail_after(TIMEOUT):
            result = await stream.wait_finished()
        assert result.text == "".join(f"{i} " for i in range(200))
        assert [e async for e in stream] == []
        await session.wait_idle()


async def test_a_stream_dropped_unread_does_not_stall_the_agent() -> None:
    async with connect(ScriptedAgent(many_chunks), event_buffer=2) as conn:
        session = await conn.new_session()
        stream = session.stream("go")
        await stream.__anext__()
        del stream
        gc.collect()
        with anyio.fail_after(TIMEOUT):
            await session.wait_idle()
        assert session.view.messages[-1].text.endswith("199 ")


async def test_wait_finished_without_reading() -> None:
    async with connect(ScriptedAgent(many_chunks), event_buffer=1) as conn:
        session = await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            result = await session.stream("go").wait_finished()
        assert result.stop_reason == "end_turn"
        assert session.view.messages[-1].text.startswith("0 1 2")


async def failing_turn(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
    await agent.say(request.session_id, "partial")
    raise InvalidParams("bad prompt")


async def test_a_failed_turn_raises_after_its_events() -> None:
    async with connect(ScriptedAgent(failing_turn)) as conn:
        session = await conn.new_session()
        stream = session.stream("x")
        first = await stream.__anext__()
        assert isinstance(first, TextDelta)
        with pytest.raises(InvalidParams, match="bad prompt"), anyio.fail_after(TIMEOUT):
            await stream.__anext__()
        assert [e async for e in stream] == []
        with pytest.raises(InvalidParams):
            await stream.wait_finished()
        assert stream.result is None
        with pytest.raises(InvalidParams):
            await session.prompt("again")
        assert session.state == "idle"


async def test_one_turn_at_a_time() -> None:
    release = anyio.Event()

    async def slow(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
        await release.wait()
        return "end_turn"

    async with connect(ScriptedAgent(slow)) as conn:
        session = await conn.new_session()
        stream = session.stream("first")
        assert session.state == "running"
        with pytest.raises(SessionBusy):
            session.stream("second")
        with pytest.raises(SessionBusy):
            await session.prompt("second")
        release.set()
        with anyio.fail_after(TIMEOUT):
            await stream.wait_finished()
            await session.wait_idle()
        assert (await session.prompt("third")).stop_reason == "end_turn"


async def test_closed_sessions_refuse_prompts() -> None:
    async with connect(FullAgent()) as conn:
        session = await conn.new_session()
        await session.close()
        await session.close()  # harmless
        with pytest.raises(LocalProtocolError, match="closed"):
            await session.prompt("hello")
        with pytest.raises(LocalProtocolError, match="closed"):
            await session.cancel()


async def test_close_without_the_capability_is_local() -> None:
    agent = ScriptedAgent()
    async with connect(agent) as conn:
        session = await conn.new_session()
        await session.close()
        assert conn.sessions == {}
        # updates for a forgotten session wait in the bounded buffer
        await agent.say(session.session_id, "late")
        await conn.ext_notification("_sync")
        with anyio.fail_after(TIMEOUT):
            while conn.statistics().early_updates != 1:
                await anyio.lowlevel.checkpoint()


async def test_prompt_content_is_checked_against_prompt_capabilities() -> None:
    image = ImageContentBlock(data="aGk=", mime_type="image/png")
    async with connect(ScriptedAgent()) as conn:
        session = await conn.new_session()
        with pytest.raises(LocalProtocolError, match="image"):
            await session.prompt(image)
        assert session.state == "idle"


async def test_the_connection_closing_ends_a_running_stream() -> None:
    async def hang(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
        await agent.say(request.session_id, "working")
        await anyio.sleep_forever()
        raise AssertionError

    async with connect(ScriptedAgent(hang)) as conn:
        session = await conn.new_session()
        stream = session.stream("x")
        first = await stream.__anext__()
    assert isinstance(first, TextDelta)
    assert session.state == "idle"
    from accord.errors import ConnectionClosed

    with pytest.raises(ConnectionClosed), anyio.fail_after(TIMEOUT):
        await stream.wait_finished()

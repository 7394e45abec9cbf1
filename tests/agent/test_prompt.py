"""Prompt turns: what the engine yields reaches the client, in order, and is stored."""

from __future__ import annotations

import anyio
import pytest
from _agent_support import CWD, message_texts, scripted, serve, text
from helpers.fold import fold
from helpers.timeouts import TIMEOUT

from accord.engines import (
    EngineCapabilities,
    StateSnapshot,
    SubAgentEvent,
    SubAgentStarted,
    TextChunk,
    ToolCallEnded,
    UserMessageChunk,
    new_id,
)
from accord.errors import USER_MESSAGE_ID_META_KEY, AuthRequired, RequestError
from accord.events import event_from_json
from accord.schema import (
    Cost,
    PlanEntry,
    PromptRequest,
    ResourceLinkContentBlock,
    TextContentBlock,
)
from accord.store import MemorySessionStore
from accord.testing import (
    Emit,
    Fail,
    ReportUsage,
    Say,
    ScriptedEngine,
    SetPlan,
    Stop,
    Stream,
    Think,
    UseTool,
    WaitFor,
)

pytestmark = pytest.mark.anyio


async def test_a_turn_streams_the_engine_output_and_answers_end_turn() -> None:
    engine = scripted([Think("hmm"), Say(pieces=("Hel", "lo"))])
    async with serve(engine) as h:
        session_id = await h.new_session()
        response = await h.prompt(session_id, "hi there")
        assert response.stop_reason == "end_turn"
        updates = h.client.updates(session_id)
        # the prompting client is not sent its own prompt back
        assert message_texts(updates) == [
            ("agent_thought_chunk", "hmm"),
            ("agent_message_chunk", "Hello"),
        ]
        assert h.engine.session(session_id).context.cwd == CWD


async def test_the_prompt_is_recorded_as_one_user_message() -> None:
    store = MemorySessionStore()
    async with serve(scripted([Say("ok")]), store=store) as h:
        session_id = await h.new_session()
        link = ResourceLinkContentBlock(uri="file:///work/project/a.py", name="a.py")
        response = await h.prompt(session_id, [TextContentBlock(text="look at"), link])
        kinds = h.client.kinds(session_id)
        assert "user_message_chunk" not in kinds  # not echoed to the client that sent it
        stored = await store.read_events(session_id)
        chunks = [event_from_json(e.payload) for e in stored if e.kind == "user_message_chunk"]
        users = [c for c in chunks if isinstance(c, UserMessageChunk)]
        assert [c.content for c in users] == [TextContentBlock(text="look at"), link]
        # one message, and the prompter is told its id in the response
        assert {c.message_id for c in users} == {response.meta[USER_MESSAGE_ID_META_KEY]}


async def test_chunks_of_one_message_share_an_id_and_messages_differ() -> None:
    engine = scripted([Say(pieces=("a", "b", "c")), Say(pieces=("d", "e"))])
    async with serve(engine) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        agent = [
            u for u in h.client.updates(session_id) if u["sessionUpdate"] == "agent_message_chunk"
        ]
        ids = [u["messageId"] for u in agent]
        assert ids[0] == ids[1] == ids[2] != ids[3] == ids[4]


async def test_tool_calls_go_pending_in_progress_completed() -> None:
    engine = scripted([UseTool(title="Read a.py", kind="read", tool_call_id="t1", result="42")])
    async with serve(engine) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        tools = [u for u in h.client.updates(session_id) if u["sessionUpdate"].startswith("tool")]
        assert [(u["sessionUpdate"], u.get("status")) for u in tools] == [
            ("tool_call", "pending"),
            ("tool_call_update", "in_progress"),
            ("tool_call_update", "completed"),
        ]
        assert tools[0]["kind"] == "read"
        assert tools[-1]["rawOutput"] == {"result": "42"}


async def test_an_illegal_tool_transition_fails_the_turn_and_keeps_what_came_before() -> None:
    store = MemorySessionStore()
    engine = scripted(
        [Say("before"), Emit(ToolCallEnded(tool_call_id="never-started", status="completed"))],
        [Say("next turn works")],
    )
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        with pytest.raises(RequestError) as caught:
            await h.prompt(session_id)
        assert caught.value.code == -32603
        assert "illegal tool-call transition" in caught.value.message
        assert ("agent_message_chunk", "before") in message_texts(h.client.updates(session_id))
        kinds = [e.kind for e in await store.read_events(session_id)]
        assert "text_chunk" in kinds and "turn_error" in kinds
        assert (await h.prompt(session_id)).stop_reason == "end_turn"


@pytest.mark.parametrize(
    "output",
    [
        UserMessageChunk(message_id="u", content=TextContentBlock(text="fake user")),
        TextChunk(message_id="", content=TextContentBlock(text="no id")),
    ],
    ids=["runtime-only-kind", "empty-message-id"],
)
async def test_events_that_break_the_engine_rules_fail_the_turn(output: object) -> None:
    engine = scripted([Emit(output)])  # pyright: ignore[reportArgumentType]
    async with serve(engine) as h:
        session_id = await h.new_session()
        with pytest.raises(RequestError) as caught:
            await h.prompt(session_id)
        assert caught.value.code == -32603
        assert "rule of the event chain" in caught.value.message


async def test_one_message_id_for_two_kinds_is_refused() -> None:
    engine = scripted([Say("text", message_id="m"), Think("thought", message_id="m")])
    async with serve(engine) as h:
        session_id = await h.new_session()
        with pytest.raises(RequestError, match="each message needs its own id"):
            await h.prompt(session_id)


async def test_plans_are_sent_as_the_complete_list() -> None:
    first = (PlanEntry(content="read", priority="high", status="in_progress"),)
    second = (
        PlanEntry(content="read", priority="high", status="completed"),
        PlanEntry(content="write", priority="medium", status="pending"),
    )
    async with serve(scripted([SetPlan(first), SetPlan(second)])) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        plans = [u for u in h.client.updates(session_id) if u["sessionUpdate"] == "plan"]
        assert [len(p["entries"]) for p in plans] == [1, 2]
        assert plans[1]["entries"] == [e.to_wire() for e in second]


async def test_usage_is_sent_only_when_reported_and_cost_only_when_known() -> None:
    engine = scripted(
        [Say("no usage here")],
        [ReportUsage(used=100, size=1000)],
        [ReportUsage(used=200, size=1000, cost=Cost(amount=0.5, currency="USD"))],
    )
    async with serve(engine) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        assert "usage_update" not in h.client.kinds(session_id)
        await h.prompt(session_id)
        await h.prompt(session_id)
        usage = [u for u in h.client.updates(session_id) if u["sessionUpdate"] == "usage_update"]
        assert usage == [
            {"sessionUpdate": "usage_update", "used": 100, "size": 1000},
            {
                "sessionUpdate": "usage_update",
                "used": 200,
                "size": 1000,
                "cost": {"amount": 0.5, "currency": "USD"},
            },
        ]


async def test_the_engine_chooses_the_stop_reason() -> None:
    async with serve(scripted([Say("partial"), Stop("max_tokens"), Say("never")])) as h:
        session_id = await h.new_session()
        assert (await h.prompt(session_id)).stop_reason == "max_tokens"
        assert ("agent_message_chunk", "never") not in message_texts(h.client.updates(session_id))


async def test_an_engine_exception_answers_an_internal_error_and_is_recorded() -> None:
    store = MemorySessionStore()
    async with serve(scripted([Say("a"), Fail("model exploded")]), store=store) as h:
        session_id = await h.new_session()
        with pytest.raises(RequestError) as caught:
            await h.prompt(session_id)
        assert caught.value.code == -32603
        assert caught.value.data == {"error": "RuntimeError", "message": "model exploded"}
        errors = [e for e in await store.read_events(session_id) if e.kind == "turn_error"]
        assert len(errors) == 1 and errors[0].layer == "observe"


async def test_a_request_error_from_the_engine_keeps_its_code() -> None:
    async with serve(scripted([Fail(error=AuthRequired("log in first"))])) as h:
        session_id = await h.new_session()
        with pytest.raises(AuthRequired, match="log in first"):
            await h.prompt(session_id)


async def test_a_second_concurrent_prompt_is_refused_and_nothing_is_lost() -> None:
    store = MemorySessionStore()
    gate = anyio.Event()
    engine = scripted([Say("first"), WaitFor(gate), Stream(count=20)])
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        answers: list[str] = []
        async with anyio.create_task_group() as tg:

            async def first() -> None:
                answers.append((await h.prompt(session_id, "one")).stop_reason)

            tg.start_soon(first)
            await h.client.wait_until(lambda: "agent_message_chunk" in h.client.kinds(session_id))
            with pytest.raises(RequestError) as caught:
                await h.prompt(session_id, "two")
            assert caught.value.code == -32602
            assert caught.value.data["reason"] == "busy"
            gate.set()
        assert answers == ["end_turn"]
        texts = message_texts(h.client.updates(session_id))
        assert texts == [
            ("agent_message_chunk", "first"),
            ("agent_message_chunk", "".join(f"{i} " for i in range(20))),
        ]
        stored = [event_from_json(e.payload) for e in await store.read_events(session_id)]
        users = [e for e in stored if isinstance(e, UserMessageChunk)]
        assert len(users) == 1  # "two" was never recorded
        assert sum(isinstance(e, TextChunk) for e in stored) == 21


async def test_many_sessions_run_concurrently() -> None:
    engine = ScriptedEngine(respond=lambda prompt: [Stream(count=30, prefix=prompt)])
    async with serve(engine) as h:
        ids = [await h.new_session() for _ in range(12)]
        async with anyio.create_task_group() as tg:
            for index, session_id in enumerate(ids):
                tg.start_soon(h.prompt, session_id, f"s{index}-")
        for index, session_id in enumerate(ids):
            expected = "".join(f"s{index}-{i} " for i in range(30))
            assert message_texts(h.client.updates(session_id))[-1] == (
                "agent_message_chunk",
                expected,
            )


async def test_a_prompt_for_an_unknown_session_answers_resource_not_found() -> None:
    async with serve() as h:
        with pytest.raises(RequestError) as caught:
            await h.prompt("no-such-session")
        assert caught.value.code == -32002


async def test_events_are_stamped_with_session_seq_epoch_turn_and_agent() -> None:
    store = MemorySessionStore()
    engine = scripted([Say("a"), Say("b")], [Say("c")])
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        await h.prompt(session_id)
        stored = await store.read_events(session_id)
        assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
        assert {e.session_id for e in stored} == {session_id}
        assert {e.agent_id for e in stored} == {"root"}
        assert len({e.epoch for e in stored}) == 1
        turns = [e.turn_id for e in stored]
        assert None not in turns and len(set(turns)) == 2
        assert stored[-1].kind == "turn_completed"


async def test_sub_agent_events_are_stored_but_not_shown_to_standard_clients() -> None:
    store = MemorySessionStore()
    sub = SubAgentEvent(
        agent_id="helper", event=TextChunk(message_id=new_id(), content=TextContentBlock(text="x"))
    )
    engine = scripted(
        [Emit(SubAgentStarted(sub_agent_id="helper", name="Helper")), Emit(sub), Say("main")]
    )
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        assert message_texts(h.client.updates(session_id)) == [("agent_message_chunk", "main")]
        stored = await store.read_events(session_id)
        assert [e.agent_id for e in stored if e.kind == "text_chunk"] == ["helper", "root"]


async def test_engine_state_is_stored_not_sent() -> None:
    store = MemorySessionStore()
    async with serve(scripted([Say("a")]), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id, "remember me")
        snapshots = [e for e in await store.read_events(session_id) if e.kind == "state_snapshot"]
        assert len(snapshots) == 1
        snapshot = event_from_json(snapshots[0].payload)
        assert isinstance(snapshot, StateSnapshot)
        assert snapshot.state == {"turns": 1, "prompts": ["remember me"]}
        record = await store.get_session(session_id)
        # The record names the stored snapshot (its size does not grow with the history).
        assert record is not None and "engine" not in record.state
        assert record.state["engineSeq"] == snapshots[0].seq
        assert all(u["sessionUpdate"] != "state_snapshot" for u in h.client.updates())


async def test_the_response_comes_after_every_update_of_the_turn() -> None:
    async with serve(scripted([Stream(count=200)])) as h:
        session_id = await h.new_session()
        with anyio.fail_after(TIMEOUT):
            await h.conn.prompt(PromptRequest(session_id=session_id, prompt=text("go")))
        folded = fold(h.client.updates(session_id))
        assert folded["messages"][-1]["blocks"][0]["text"].endswith("199 ")


async def test_text_only_engines_advertise_no_prompt_capabilities() -> None:
    async with serve(ScriptedEngine(capabilities=EngineCapabilities())) as h:
        response = h.conn.initialize_response
        assert response is not None
        assert (
            response.agent_capabilities.prompt_capabilities.to_wire()
            == {
                "image": False,
                "audio": False,
                "embeddedContext": False,
            }
            or "promptCapabilities" not in response.agent_capabilities.to_wire()
        )

"""Cancellation: the model stream stops promptly, and the partial history is kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from _engines_support import (
    ModelCounter,
    Turn,
    check_rules,
    collect,
    of_type,
    opened,
    wait_for_requests,
)
from helpers.timeouts import TIMEOUT
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolReturnPart

from accord.engines import (
    ModelCallEnded,
    ModelCallStarted,
    StateSnapshot,
    TextChunk,
    ToolCallEnded,
    TurnCompleted,
    TurnOutput,
)
from accord.engines.pydantic_ai import PydanticAIEngine, PydanticAISession, history_from_json
from accord.schema import TextContentBlock
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = pytest.mark.anyio


async def run_and_cancel(
    session: PydanticAISession, turn: Turn, when: Callable[[list[TurnOutput]], bool]
) -> list[TurnOutput]:
    """Run a turn, cancel it as soon as ``when(events so far)`` holds; return all its events."""
    events: list[TurnOutput] = []
    reached = anyio.Event()

    async def consume() -> None:
        async for event in session.run_turn([TextContentBlock(text="go")], turn.context):
            events.append(event)
            if when(events):
                reached.set()

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await reached.wait()
            turn.cancel()
    check_rules(events)
    return events


def chunks(count: int) -> Callable[[list[TurnOutput]], bool]:
    return lambda events: len(of_type(events, TextChunk)) >= count


async def test_cancel_while_the_model_is_silent_stops_at_once() -> None:
    reply = ScriptedReply(text=["Hel", "lo", " never"], hang_after=2)
    with FakeOpenAIServer([reply]) as server:
        engine = PydanticAIEngine(Agent(), models=[ModelCounter().choice(server, "m")])
        async with opened(engine) as session:
            events = await run_and_cancel(session, Turn(), chunks(2))  # then the server hangs
            [request] = await wait_for_requests(server, 1, outcome="disconnected")

    # The HTTP stream was closed by the cancel, not dropped by the server when its hang ran out.
    assert request.outcome == "disconnected"
    [ended] = of_type(events, ModelCallEnded)
    assert ended.outcome == "cancelled"
    assert not of_type(events, TurnCompleted)  # the runtime answers "cancelled"
    snapshot = events[-1]
    assert isinstance(snapshot, StateSnapshot)
    history = history_from_json(snapshot.state)
    response = history[-1]
    assert isinstance(response, ModelResponse)
    assert [p.content for p in response.parts if isinstance(p, TextPart)] == ["Hello"]


async def test_cancel_before_the_first_token() -> None:
    with FakeOpenAIServer([ScriptedReply(text=["x"], hang_after=0)]) as server:
        engine = PydanticAIEngine(Agent(), models=[ModelCounter().choice(server, "m")])
        async with opened(engine) as session:
            events = await run_and_cancel(
                session, Turn(), lambda events: isinstance(events[-1], ModelCallStarted)
            )
    assert isinstance(events[-1], StateSnapshot)
    assert not of_type(events, TextChunk)
    assert history_from_json(events[-1].state)[0].kind == "request"  # the prompt is kept


async def test_cancel_during_a_tool_keeps_finished_results() -> None:
    ran = anyio.Event()

    agent: Agent[None, str] = Agent()

    @agent.tool_plain
    def quick() -> str:
        return "quick result"

    @agent.tool_plain(sequential=True)
    async def slow() -> str:
        ran.set()
        await anyio.sleep_forever()
        return "never"

    calls = [ScriptedToolCall(name="quick"), ScriptedToolCall(name="slow")]
    with FakeOpenAIServer([ScriptedReply(tool_calls=calls)]) as server:
        engine = PydanticAIEngine(agent, models=[ModelCounter().choice(server, "m")])
        async with opened(engine) as session:
            turn = Turn()
            events: list[Any] = []
            with anyio.fail_after(TIMEOUT):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(collect, session, turn, events)
                    await ran.wait()
                    turn.cancel()
    check_rules(events)
    ended = {e.status for e in of_type(events, ToolCallEnded)}
    assert ended == {"completed", "cancelled"}  # quick finished; slow was cut short
    returns: list[object] = [
        part.content
        for message in history_from_json(events[-1].state)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    assert "quick result" in returns


async def test_next_turn_continues_after_a_cancelled_one() -> None:
    script = [ScriptedReply(text=["par", "tial"], hang_after=1), ScriptedReply(text=["again"])]
    with FakeOpenAIServer(script) as server:
        engine = PydanticAIEngine(Agent(), models=[ModelCounter().choice(server, "m")])
        async with opened(engine) as session:
            await run_and_cancel(session, Turn(), chunks(1))
            more: list[Any] = []
            await collect(session, Turn(), more, "continue")
            second = server.requests[1]
    assert [c.content.text for c in of_type(more, TextChunk)] == ["again"]
    contents = [m.get("content") for m in second.messages]
    assert "par" in contents  # the model sees the partial reply
    assert contents[-1] == "continue"


async def test_turn_cancelled_from_outside_keeps_history_in_the_session() -> None:
    with FakeOpenAIServer([ScriptedReply(text=["a", "b"], hang_after=1)]) as server:
        engine = PydanticAIEngine(Agent(), models=[ModelCounter().choice(server, "m")])
        async with opened(engine) as session:
            events: list[Any] = []
            with anyio.move_on_after(TIMEOUT) as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(collect, session, Turn(), events)
                    await wait_for_requests(server, 1)
                    tg.cancel_scope.cancel()  # the runtime gave up waiting: a hard cancel
            assert not scope.cancelled_caught
    assert not of_type(events, StateSnapshot)  # nothing can be yielded any more...
    last = session.history[-1]  # ...but the session still knows what happened
    assert isinstance(last, ModelResponse)

"""The message history: saved at the end of each turn, restored into a new session object."""

from __future__ import annotations

import json

import pytest
from _engines_support import ModelCounter, context, of_type, opened, run_turn
from helpers.snapshots import fold_snapshots
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest

from accord.engines import StateSnapshot
from accord.engines.pydantic_ai import (
    HISTORY_FORMAT,
    HISTORY_VERSION,
    HistoryError,
    PydanticAIEngine,
    history_from_json,
    history_to_json,
)
from accord.errors import InternalError
from accord.events import apply_appended
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = pytest.mark.anyio


def agent_with_tool() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(instructions="You are terse.")

    @agent.tool_plain
    def lookup(key: str) -> str:
        return f"value of {key}"

    return agent


async def test_restored_history_is_sent_to_the_model_after_a_restart() -> None:
    first = [
        ScriptedReply(
            text=["Hello Ada"], tool_calls=[ScriptedToolCall(name="lookup", arguments={"key": "k"})]
        ),
        ScriptedReply(text=["The value is v."]),
    ]
    with FakeOpenAIServer(first) as server:
        engine = PydanticAIEngine(agent_with_tool(), models=[ModelCounter().choice(server, "m")])
        async with opened(engine) as session:
            events = await run_turn(session, "My name is Ada")
    snapshot = of_type(events, StateSnapshot)[-1].state
    stored = json.loads(json.dumps(snapshot))  # what a store keeps: plain JSON
    assert stored["format"] == HISTORY_FORMAT

    # A new process: a new server, engine and session object, the history from the store.
    with FakeOpenAIServer([ScriptedReply(text=["Your name is Ada."])]) as server:
        engine = PydanticAIEngine(agent_with_tool(), models=[ModelCounter().choice(server, "m")])
        async with opened(engine, history=stored) as session:
            await run_turn(session, "What is my name?")
        [request] = server.requests

    roles = [(m["role"], m.get("content")) for m in request.messages]
    assert roles[0] == ("system", "You are terse.")
    assert ("user", "My name is Ada") in roles
    assert ("assistant", "Hello Ada") in roles
    assert ("tool", "value of k") in roles
    assert ("assistant", "The value is v.") in roles
    assert roles[-1] == ("user", "What is my name?")


async def test_every_turn_saves_the_history_first_whole_then_its_new_messages() -> None:
    with FakeOpenAIServer([ScriptedReply(text=["1"]), ScriptedReply(text=["2"])]) as server:
        engine = PydanticAIEngine(Agent(), models=[ModelCounter().choice(server, "m")])
        async with opened(engine) as session:
            [first] = of_type(await run_turn(session, "a"), StateSnapshot)
            events = await run_turn(session, "b")
    assert first.items is None
    assert len(history_from_json(first.state)) == 2
    # The second turn yields only the two messages it added, after the two stored before.
    [snapshot] = of_type(events, StateSnapshot)
    assert (snapshot.base, snapshot.path) == (2, ("messages",))
    assert snapshot.items is not None
    whole = apply_appended(
        first.state, {"path": ["messages"], "base": 2, "items": list(snapshot.items)}
    )
    assert whole == history_to_json(session.history)
    assert len(history_from_json(whole)) == 4


async def test_the_history_kept_between_turns_reads_back_whole() -> None:
    # Between turns a session keeps its history packed (compressed JSON, issue 12); each
    # turn runs on it read back: the model gets every earlier exchange in order, the saved
    # history is exactly the session's, and the instructions every request carries are one
    # string again, not one per request.
    replies = [ScriptedReply(text=[word]) for word in ("one", "two", "three")]
    with FakeOpenAIServer(replies) as server:
        engine = PydanticAIEngine(agent_with_tool(), models=[ModelCounter().choice(server, "m")])
        async with opened(engine) as session:
            events = await run_turn(session, "first")
            events += await run_turn(session, "second")
            events += await run_turn(session, "third")
            history = session.history
        third = server.requests[2]
    said = [m.get("content") for m in third.messages if m["role"] in ("user", "assistant")]
    assert said == ["first", "one", "second", "two", "third"]
    assert history_to_json(history) == fold_snapshots(of_type(events, StateSnapshot))
    requests = [m for m in history if isinstance(m, ModelRequest)]
    assert len(requests) == 3 and requests[0].instructions == "You are terse."
    assert all(r.instructions is requests[0].instructions for r in requests)


def test_history_json_round_trip_is_stable() -> None:
    assert history_from_json(None) == []
    state = history_to_json([])
    assert state == {"format": HISTORY_FORMAT, "version": HISTORY_VERSION, "messages": []}


@pytest.mark.parametrize(
    "state",
    [
        [],
        {"format": "other", "version": 1, "messages": []},
        {"format": HISTORY_FORMAT, "version": 99, "messages": []},
        {"format": HISTORY_FORMAT, "version": HISTORY_VERSION, "messages": [{"kind": "bogus"}]},
    ],
)
def test_unreadable_history_is_refused(state: object) -> None:
    with pytest.raises(HistoryError):
        history_from_json(state)  # type: ignore[arg-type]


async def test_a_session_with_unreadable_history_does_not_open() -> None:
    engine = PydanticAIEngine(Agent())
    with pytest.raises(InternalError, match="cannot be restored"):
        await engine.open_session(context(history={"format": "other"}))

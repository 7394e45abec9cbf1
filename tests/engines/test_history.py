"""The message history: saved at the end of each turn, restored into a new session object."""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import anyio
import orjson
import pytest
from _engines_support import ModelCounter, context, of_type, opened, run_turn
from helpers.snapshots import fold_snapshots
from helpers.timeouts import TIMEOUT
from pydantic_ai import Agent, ModelMessagesTypeAdapter
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from accord.engines import StateSnapshot
from accord.engines.pydantic_ai import (
    HISTORY_FORMAT,
    HISTORY_VERSION,
    HistoryError,
    PydanticAIEngine,
    history_from_json,
    history_to_json,
)
from accord.engines.pydantic_ai import _history as history_module
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


class _CountingAdapter:
    """Stands for pydantic-ai's message adapter in the history module: counts the bytes of
    messages encoded and decoded (what a turn's history work costs)."""

    def __init__(self) -> None:
        self.encoded = 0
        self.decoded = 0

    def dump_json(self, messages: list[ModelMessage]) -> bytes:
        data = ModelMessagesTypeAdapter.dump_json(messages)
        self.encoded += len(data)
        return data

    def dump_python(self, messages: list[ModelMessage], **kwargs: Any) -> Any:
        data = ModelMessagesTypeAdapter.dump_python(messages, **kwargs)
        self.encoded += len(json.dumps(data))
        return data

    def validate_json(self, data: bytes) -> list[ModelMessage]:
        self.decoded += len(data)
        return ModelMessagesTypeAdapter.validate_json(data)

    def validate_python(self, data: Any) -> list[ModelMessage]:
        self.decoded += len(json.dumps(data))
        return ModelMessagesTypeAdapter.validate_python(data)


def _echo_agent() -> Agent[None, str]:
    async def reply(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        yield "the same reply every time"

    return Agent(FunctionModel(stream_function=reply), instructions="You are terse.")


async def test_a_turn_encodes_and_decodes_the_same_bytes_at_turn_60_as_at_turn_5(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each turn encodes only the messages it added (for its snapshot and the packed history)
    # and decodes none: the earlier messages are kept in their encoded form and, for the
    # session that ran last, as objects too.
    counting = _CountingAdapter()
    monkeypatch.setattr(history_module, "ModelMessagesTypeAdapter", counting)
    engine = PydanticAIEngine(_echo_agent())
    costs: list[int] = []
    async with opened(engine) as session:
        events: list[Any] = []
        for turn in range(60):
            before = counting.encoded + counting.decoded
            events += await run_turn(session, f"prompt {turn:02d}")
            costs.append(counting.encoded + counting.decoded - before)
        history = session.history
    assert len(history) == 120
    assert costs[59] <= costs[5] * 1.1
    # What was kept is the whole conversation, in order, as the snapshots say.
    assert history_to_json(history) == fold_snapshots(of_type(events, StateSnapshot))


async def test_histories_that_went_cold_read_back_whole() -> None:
    # Only the last HOT_HISTORIES sessions keep their messages as objects; the others are
    # read back from their packed pieces, whole and in order.
    engine = PydanticAIEngine(_echo_agent())
    count = history_module.HOT_HISTORIES + 3
    async with AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(opened(engine)) for _ in range(count)]
        for turn in range(3):
            for index, session in enumerate(sessions):
                await run_turn(session, f"session {index} turn {turn}")
        for index, session in enumerate(sessions):
            prompts = [
                part.content
                for message in session.history
                if isinstance(message, ModelRequest)
                for part in message.parts
                if isinstance(part, UserPromptPart)
            ]
            assert prompts == [f"session {index} turn {turn}" for turn in range(3)]


async def test_turns_starting_elsewhere_do_not_push_out_the_history_of_one_that_just_ran(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A running turn holds its history (PackedHistory.hold): only ended turns make a history
    # hot, so HOT_HISTORIES + 1 other sessions starting their turns (their models waiting)
    # leave the session that just ran hot, and its next turn decodes nothing.
    counting = _CountingAdapter()
    monkeypatch.setattr(history_module, "ModelMessagesTypeAdapter", counting)
    gate, waiting = anyio.Event(), [0]
    everyone_waits = anyio.Event()
    count = history_module.HOT_HISTORIES + 1

    async def reply(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        last = messages[-1].parts[-1]
        if isinstance(last, UserPromptPart) and str(last.content).startswith("wait"):
            waiting[0] += 1
            if waiting[0] == count:
                everyone_waits.set()
            await gate.wait()
        yield "a reply"

    engine = PydanticAIEngine(Agent(FunctionModel(stream_function=reply)))
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(opened(engine))
        others = [await stack.enter_async_context(opened(engine)) for _ in range(count)]
        for session in [first, *others]:
            await run_turn(session, "one")
        await run_turn(first, "two")
        async with anyio.create_task_group() as group:
            for session in others:
                group.start_soon(run_turn, session, "wait for the gate")
            with anyio.fail_after(TIMEOUT):
                await everyone_waits.wait()
            before = counting.decoded
            await run_turn(first, "three")
            assert counting.decoded == before  # its history was still hot
            gate.set()
    assert [len(session.history) for session in others] == [4] * count
    assert len(first.history) == 6


#: Instructions of a few hundred words that do not compress much on their own.
_INSTRUCTIONS = " ".join(f"rule{index * 7919 % 10007}" for index in range(300))


def _exchange(turn: int) -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart(f"prompt {turn}")], instructions=_INSTRUCTIONS),
        ModelResponse(parts=[TextPart(f"reply {turn}")], model_name="fake-model"),
    ]


def test_a_packed_turn_costs_what_is_new_in_it_and_reads_back_whole() -> None:
    # Each piece is compressed against the end of the one before: a turn that repeats the
    # last one's instructions and keys costs a fraction of what it costs compressed alone.
    # Gone cold, the history reads back whole and in order, also once merged into one piece.
    messages = _exchange(0)
    packed = history_module.PackedHistory(messages)
    costs: list[int] = []
    alone: list[int] = []
    for turn in range(1, history_module.MERGED_PIECES + 5):
        added = _exchange(turn)
        messages = [*messages, *added]
        before = packed.packed_bytes
        packed.extend(messages, history_module.history_items(added))
        costs.append(packed.packed_bytes - before)
        alone.append(len(zlib.compress(orjson.dumps(history_module.history_items(added)), 1)))
    assert max(costs[1:]) * 3 < min(alone)

    others = [
        history_module.PackedHistory(_exchange(0)) for _ in range(history_module.HOT_HISTORIES)
    ]

    def cold_read() -> list[ModelMessage]:
        for other in others:
            other.unpack()  # the hot histories are the last ones unpacked, process-wide
        return packed.unpack()

    expected = history_to_json(messages)
    assert history_to_json(cold_read()) == expected
    assert packed.pieces == 1  # more than MERGED_PIECES: packed again as one
    added = _exchange(99)
    messages = [*messages, *added]
    packed.extend(messages, history_module.history_items(added))
    assert history_to_json(cold_read()) == history_to_json(messages)

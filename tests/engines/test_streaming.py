"""Text, thinking, model calls and usage: a pydantic-ai run streamed as accord events."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from decimal import Decimal
from typing import Any

import anyio
import pytest
from _engines_support import ModelCounter, Turn, of_type, opened, run_turn, texts, wait_for_requests
from helpers.timeouts import TIMEOUT
from pydantic_ai import Agent
from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta

from accord.engines import (
    Event,
    ModelCallEnded,
    ModelCallStarted,
    StateSnapshot,
    TextChunk,
    ThinkingChunk,
    TurnCompleted,
    TurnOutput,
    UsageReported,
)
from accord.engines.pydantic_ai import EventTranslator, PydanticAIEngine
from accord.engines.pydantic_ai._pipe import MAX_BUFFERED_EVENTS, Pipe
from accord.schema import TextContentBlock
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedUsage

pytestmark = pytest.mark.anyio


async def test_text_chunks_in_order_with_one_message_id() -> None:
    pieces = [f"w{i} " for i in range(50)]
    with FakeOpenAIServer([ScriptedReply(text=pieces)]) as server:
        engine = PydanticAIEngine(
            Agent(), models=[ModelCounter().choice(server, "fake-model")], chunk_interval=None
        )
        async with opened(engine) as session:
            events = await run_turn(session)

    chunks: list[TextChunk] = of_type(events, TextChunk)
    assert texts(events) == "".join(pieces)
    assert [getattr(c.content, "text", None) for c in chunks] == pieces
    assert len({c.message_id for c in chunks}) == 1
    assert isinstance(events[-1], StateSnapshot)
    assert not of_type(events, TurnCompleted)  # end_turn: the runtime's default


async def test_thinking_then_text_are_two_messages() -> None:
    reply = ScriptedReply(reasoning=["Let me ", "think."], text=["Answer", "."])
    with FakeOpenAIServer([reply]) as server:
        engine = PydanticAIEngine(Agent(), models=[ModelCounter().choice(server, "fake-model")])
        async with opened(engine) as session:
            events = await run_turn(session)

    assert texts(events, ThinkingChunk) == "Let me think."
    assert texts(events) == "Answer."
    thinking_ids = {c.message_id for c in of_type(events, ThinkingChunk)}
    text_ids = {c.message_id for c in of_type(events, TextChunk)}
    assert len(thinking_ids) == len(text_ids) == 1
    assert thinking_ids != text_ids
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextChunk))
    assert all(not isinstance(e, ThinkingChunk) for e in events[first_text:])


async def test_each_model_response_gets_new_message_ids() -> None:
    script = [ScriptedReply(text=["one"]), ScriptedReply(text=["two"])]
    with FakeOpenAIServer(script) as server:
        engine = PydanticAIEngine(Agent(), models=[ModelCounter().choice(server, "fake-model")])
        async with opened(engine) as session:
            first = await run_turn(session)
            second = await run_turn(session)
    [a] = of_type(first, TextChunk)
    [b] = of_type(second, TextChunk)
    assert a.message_id != b.message_id


async def test_model_calls_are_framed_with_token_counts() -> None:
    reply = ScriptedReply(text=["hi"], usage=ScriptedUsage(prompt_tokens=12, completion_tokens=3))
    with FakeOpenAIServer([reply]) as server:
        engine = PydanticAIEngine(Agent(), models=[ModelCounter().choice(server, "fake-model")])
        async with opened(engine) as session:
            events = await run_turn(session)
    [started] = of_type(events, ModelCallStarted)
    [ended] = of_type(events, ModelCallEnded)
    assert started.model == "fake-model"
    assert ended.call_id == started.call_id
    assert (ended.outcome, ended.input_tokens, ended.output_tokens) == ("ok", 12, 3)
    assert events.index(started) < events.index(of_type(events, TextChunk)[0]) < events.index(ended)


async def test_usage_with_known_window_and_no_invented_cost() -> None:
    reply = ScriptedReply(text=["hi"], usage=ScriptedUsage(prompt_tokens=100, completion_tokens=7))
    with FakeOpenAIServer([reply]) as server:
        choice = ModelCounter().choice(server, "fake-model", context_window=8000)
        async with opened(PydanticAIEngine(Agent(), models=[choice])) as session:
            events = await run_turn(session)
    [usage] = of_type(events, UsageReported)
    assert (usage.used, usage.size) == (107, 8000)
    assert usage.cost is None  # fake-model has no price: no cost rather than a made-up one


async def test_no_usage_update_when_the_window_is_unknown() -> None:
    with FakeOpenAIServer([ScriptedReply(text=["hi"])]) as server:
        choice = ModelCounter().choice(server, "fake-model")  # unknown to genai-prices
        async with opened(PydanticAIEngine(Agent(), models=[choice])) as session:
            events = await run_turn(session)
    assert not of_type(events, UsageReported)
    [ended] = of_type(events, ModelCallEnded)
    assert ended.input_tokens is not None  # observers still get the counts


async def test_usage_of_a_known_model_has_window_and_cumulative_cost() -> None:
    usage = ScriptedUsage(prompt_tokens=1000, completion_tokens=10)
    script = [ScriptedReply(text=["a"], usage=usage), ScriptedReply(text=["b"], usage=usage)]
    with FakeOpenAIServer(script) as server:
        choice = ModelCounter().choice(server, "gpt-4o")  # window and price from genai-prices
        async with opened(PydanticAIEngine(Agent(), models=[choice])) as session:
            [first] = of_type(await run_turn(session), UsageReported)
            [second] = of_type(await run_turn(session), UsageReported)
    assert first.size == second.size == 128_000
    assert first.used == second.used == 1010
    assert first.cost is not None and second.cost is not None
    assert first.cost.currency == "USD"
    assert Decimal(str(second.cost.amount)) == 2 * Decimal(str(first.cost.amount)) > 0


async def test_output_length_limit_ends_with_max_tokens() -> None:
    reply = ScriptedReply(text=["cut o"], finish_reason="length")
    with FakeOpenAIServer([reply]) as server:
        choice = ModelCounter().choice(server, "fake-model")
        async with opened(PydanticAIEngine(Agent(), models=[choice])) as session:
            events = await run_turn(session)
    assert events[-1] == TurnCompleted(stop_reason="max_tokens")
    assert isinstance(events[-2], StateSnapshot)


async def test_deltas_within_the_interval_are_merged_first_one_at_once() -> None:
    pieces = [f"w{i} " for i in range(2000)]
    with FakeOpenAIServer([ScriptedReply(text=pieces)]) as server:
        engine = PydanticAIEngine(
            Agent(), models=[ModelCounter().choice(server, "fake-model")], chunk_interval=0.05
        )
        async with opened(engine) as session:
            events = await run_turn(session)
    chunks: list[TextChunk] = of_type(events, TextChunk)
    assert texts(events) == "".join(pieces)
    assert getattr(chunks[0].content, "text", None) == pieces[0]  # the first is not held back
    assert 1 < len(chunks) < len(pieces) / 10
    assert len({c.message_id for c in chunks}) == 1


async def test_queued_deltas_merge_even_without_an_interval() -> None:
    pieces = [f"w{i} " for i in range(100)]
    with FakeOpenAIServer([ScriptedReply(text=pieces)]) as server:
        engine = PydanticAIEngine(
            Agent(), models=[ModelCounter().choice(server, "fake-model")], chunk_interval=0
        )
        async with opened(engine) as session:
            turn = Turn()
            stream = session.run_turn([], turn.context)
            events: list[TurnOutput] = [await anext(stream)]  # ModelCallStarted
            await wait_for_requests(server, 1, outcome="completed")
            await anyio.wait_all_tasks_blocked()  # the producer has queued everything it read
            events.extend([event async for event in stream])
    assert texts(events) == "".join(pieces)
    assert len(of_type(events, TextChunk)) < len(pieces)


async def test_only_plain_chunks_of_one_message_merge() -> None:
    def chunk(text: str, message: str = "m", **fields: Any) -> TextChunk:
        return TextChunk(message_id=message, content=TextContentBlock(text=text, **fields))

    thought = ThinkingChunk(message_id="t", content=TextContentBlock(text="x"))
    started = ModelCallStarted(call_id="c", model="m")
    queued: list[TurnOutput] = [
        chunk("a"),
        chunk("b"),
        chunk("c"),
        thought,
        thought,
        chunk("d", "other"),
        chunk("e", meta={"k": 1}),
        chunk("f", "other"),
        started,
        chunk("g", "other"),
    ]
    pipe = Pipe(coalesce=True)
    for event in queued:
        await pipe.put(event)
    pipe.close()
    taken: list[tuple[TurnOutput, int]] = []
    while (item := await pipe.next()) is not None:
        taken.append(item)
    assert taken == [
        (chunk("abc"), 3),
        (ThinkingChunk(message_id="t", content=TextContentBlock(text="xx")), 2),
        (chunk("d", "other"), 1),
        (chunk("e", meta={"k": 1}), 1),  # a block with _meta is never merged
        (chunk("f", "other"), 1),
        (started, 1),
        (chunk("g", "other"), 1),
    ]


async def test_a_full_queue_holds_the_producer_but_text_still_merges() -> None:
    def chunk(text: str) -> TextChunk:
        return TextChunk(message_id="m", content=TextContentBlock(text=text))

    pipe = Pipe(coalesce=True)
    started = [ModelCallStarted(call_id=str(i), model="m") for i in range(MAX_BUFFERED_EVENTS)]
    for event in started:
        assert pipe.put_nowait(event)
    assert not pipe.put_nowait(chunk("a"))  # full: nothing queued, the producer must wait
    put = anyio.Event()

    async def produce() -> None:
        await pipe.put(chunk("a"))
        put.set()

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as producers:
            producers.start_soon(produce)
            await anyio.wait_all_tasks_blocked()
            assert not put.is_set()  # a slow consumer slows the producer down
            assert await pipe.next() == (started[0], 1)
            await put.wait()
        assert pipe.put_nowait(chunk("b"))  # full again, but more text of a queued chunk fits
        pipe.close()
        taken = [item for _ in range(MAX_BUFFERED_EVENTS) if (item := await pipe.next())]
        assert await pipe.next() is None
    assert taken == [*((event, 1) for event in started[1:]), (chunk("ab"), 2)]
    assert (pipe.sent, pipe.handled) == (MAX_BUFFERED_EVENTS + 2, 0)


async def test_text_deltas_append_to_the_queued_chunk_without_one_built_each() -> None:
    translator = EventTranslator(cwd="/")
    pipe = Pipe(coalesce=True)
    (start,) = translator.translate(PartStartEvent(index=0, part=TextPart(content="a")))
    assert isinstance(start, TextChunk)

    def delta(text: str, index: int = 0) -> PartDeltaEvent:
        return PartDeltaEvent(index=index, delta=TextPartDelta(content_delta=text))

    assert translator.plain_text_delta(delta("b", index=1)) is None  # no such part
    assert translator.plain_text_delta(delta("")) is None
    assert translator.plain_text_delta(delta("b")) == (start.message_id, "b")
    assert not pipe.append_text(start.message_id, "b")  # nothing queued to append to
    assert pipe.put_nowait(start)
    assert not pipe.append_text("another message", "b")
    for text in "bcd":
        found = translator.plain_text_delta(delta(text))
        assert found is not None and pipe.append_text(*found)
    started = ModelCallStarted(call_id="c", model="m")
    assert pipe.put_nowait(started)
    assert not pipe.append_text(start.message_id, "e")  # the chunk is no longer the last entry
    pipe.close()
    taken = [item async for item in _drain(pipe)]
    merged = TextChunk(message_id=start.message_id, content=TextContentBlock(text="abcd"))
    assert taken == [(merged, 4), (started, 1)]
    assert pipe.sent == 5


async def _drain(pipe: Pipe) -> AsyncGenerator[tuple[TurnOutput, int]]:
    while (item := await pipe.next()) is not None:
        yield item


class _CountingDeltas(EventTranslator):
    """Counts the text deltas it maps (an override the engine's fast path must respect)."""

    deltas = 0

    def on_text_delta(self, index: int, delta: TextPartDelta) -> Sequence[Event]:
        _CountingDeltas.deltas += 1
        return super().on_text_delta(index, delta)


async def test_a_translator_overriding_text_deltas_maps_every_delta() -> None:
    pieces = [f"w{i} " for i in range(300)]
    _CountingDeltas.deltas = 0
    assert (
        EventTranslator(cwd="/").plain_text_delta(
            PartDeltaEvent(index=0, delta=TextPartDelta(content_delta="x"))
        )
        is None
    )  # no part started: never the fast path
    with FakeOpenAIServer([ScriptedReply(text=pieces)]) as server:
        engine = PydanticAIEngine(
            Agent(),
            models=[ModelCounter().choice(server, "fake-model")],
            translator=_CountingDeltas,
        )
        async with opened(engine) as session:
            events = await run_turn(session)
    assert texts(events) == "".join(pieces)
    assert _CountingDeltas.deltas >= len(pieces) - 1  # every delta after the part's start

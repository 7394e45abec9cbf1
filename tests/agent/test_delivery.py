"""Delivery: stored durably first, in batches; then sent, to standard and extended clients."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from _agent_support import message_texts, scripted, serve

from accord.agent._delivery import MAX_HELD_OBSERVE, DurableSink
from accord.events import (
    Envelope,
    EventBus,
    ModelCallEnded,
    ModelCallStarted,
    SubAgentEvent,
    TextChunk,
    ThinkingChunk,
    UserMessageChunk,
    new_id,
    to_session_update,
)
from accord.schema import ImageContentBlock, TextContentBlock
from accord.store import MemorySessionStore, SessionStore, SqliteSessionStore, StoredEvent
from accord.testing._scripted_engine import Emit, Say, Stream

pytestmark = pytest.mark.anyio


class GatedStore:
    """A store whose appends wait for ``gate`` and are counted (everything else delegated)."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.gate: anyio.Event | None = None
        self.append_calls = 0
        self.appended = 0

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        if self.gate is not None:
            await self.gate.wait()
        await self.inner.append_events(events)
        self.append_calls += 1
        self.appended += len(events)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_a_client_sees_an_event_only_after_it_is_committed() -> None:
    store = GatedStore(MemorySessionStore())
    async with serve(scripted([Say("hello")]), store=store) as h:  # type: ignore[arg-type]
        session_id = await h.new_session()
        h.client.clear()
        store.gate = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(h.prompt, session_id)
            await anyio.wait_all_tasks_blocked()
            assert h.client.notifications == []  # nothing committed, nothing shown
            assert store.appended == 0
            store.gate.set()
        assert message_texts(h.client.updates(session_id)) == [
            ("user_message_chunk", "hello"),
            ("agent_message_chunk", "hello"),
        ]
        assert store.appended == len(await store.inner.read_events(session_id))


async def test_a_streaming_turn_commits_in_batches() -> None:
    store = GatedStore(MemorySessionStore())
    async with serve(scripted([Stream(count=2000)]), store=store) as h:  # type: ignore[arg-type]
        session_id = await h.new_session()
        calls_before = store.append_calls
        store.gate = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(h.prompt, session_id)
            # The first commit waits; meanwhile the turn appends everything else.
            await anyio.wait_all_tasks_blocked()
            store.gate.set()
        stored = await store.inner.read_events(session_id, limit=5000)
        assert [e.kind for e in stored].count("text_chunk") == 2000
        assert store.appended == len(stored)
        # the first event alone, then (nearly) all the rest in one transaction
        assert store.append_calls - calls_before <= 3


async def test_sqlite_appends_are_batched_while_a_turn_streams(tmp_path: Path) -> None:
    async with SqliteSessionStore(tmp_path / "s.sqlite3") as sqlite:
        store = GatedStore(sqlite)
        async with serve(scripted([Stream(count=1000)]), store=store) as h:  # type: ignore[arg-type]
            session_id = await h.new_session()
            await h.prompt(session_id)
        stored = await sqlite.read_events(session_id, limit=5000)
        assert store.appended == len(stored) > 1000
        assert store.append_calls < len(stored)


async def test_extended_clients_get_every_envelope_in_order() -> None:
    sub = SubAgentEvent(
        agent_id="helper",
        event=TextChunk(message_id=new_id(), content=TextContentBlock(text="from helper")),
    )
    engine = scripted(
        [
            Emit(ModelCallStarted(call_id="c1", model="m")),
            Say("hi"),
            Emit(ModelCallEnded(call_id="c1", input_tokens=3, output_tokens=1)),
            Emit(sub),
        ]
    )
    store = MemorySessionStore()
    async with serve(engine, store=store, extended=True) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        headers = h.client.ext_events()
        stored = await store.read_events(session_id)
        assert [p["seq"] for p in headers] == [e.seq for e in stored]
        assert [p["kind"] for p in headers] == [e.kind for e in stored]
        assert {p["epoch"] for p in headers} == {0}
        assert [p["layer"] for p in headers if p["kind"].startswith("model_call")] == [
            "observe",
            "observe",
        ]
        nested = [p for p in headers if p["agentId"] == "helper"]
        assert nested[0]["update"]["content"]["text"] == "from helper"
        # standard updates still arrive, and the helper's text is not among them
        assert [t for _, t in message_texts(h.client.updates(session_id))] == ["hello", "hi"]


async def test_standard_clients_get_no_extension_notifications() -> None:
    async with serve(scripted([Emit(ModelCallStarted(call_id="c", model="m")), Say("x")])) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        assert h.client.ext == []
        assert h.runtime.extended_events is False


async def test_observe_events_are_stored_in_seq_order() -> None:
    store = MemorySessionStore()
    engine = scripted(
        [Emit(ModelCallStarted(call_id="c", model="m")), Emit(ModelCallEnded(call_id="c"))]
    )
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        stored = await store.read_events(session_id)
        kinds = [e.kind for e in stored]
        assert kinds.index("model_call_started") < kinds.index("model_call_ended")
        assert [e.seq for e in stored] == sorted(e.seq for e in stored)


@pytest.mark.parametrize(
    "event",
    [
        UserMessageChunk(message_id="m1", content=TextContentBlock(text="user")),
        TextChunk(message_id="m2", content=TextContentBlock(text="agent")),
        ThinkingChunk(message_id="m3", content=TextContentBlock(text="thought")),
        TextChunk(
            message_id="m4",
            content=ImageContentBlock(data="AAEC", mime_type="image/png"),
        ),
    ],
    ids=["user", "agent", "thought", "image"],
)
async def test_the_chunk_fast_path_sends_exactly_what_the_mapper_builds(event: Any) -> None:
    """Chunks skip building models on their way out; the wire must not tell."""
    async with serve() as h:
        session_id = await h.new_session()
        h.client.clear()
        envelope = Envelope(
            session_id=session_id,
            session_seq=1,
            session_epoch=0,
            turn_id="t",
            agent_id="root",
            event=event,
        )
        channel = h.runtime._client_channel()
        await channel.deliver(envelope)
        await h.client.wait_until(lambda: len(h.client.notifications) == 1)
        expected = to_session_update(event)
        assert expected is not None
        assert h.client.notifications[0].to_wire() == {
            "sessionId": session_id,
            "update": expected.to_wire(),
        }


async def test_observe_events_never_wait_for_the_store() -> None:
    """An observe event is queued at once even while every commit is blocked; beyond the
    bound it is dropped and counted, never waited for."""
    store = GatedStore(MemorySessionStore())
    store.gate = anyio.Event()
    forwarded: list[Envelope] = []

    async def forward(envelope: Envelope) -> None:
        forwarded.append(envelope)

    sink = DurableSink(store, forward)  # type: ignore[arg-type]
    bus = EventBus("s")
    bus.attach(sink)
    with anyio.fail_after(1):
        for index in range(MAX_HELD_OBSERVE + 5):
            await bus.publish(ModelCallStarted(call_id=str(index), model="m"), epoch=0, turn_id="t")
    assert sink.dropped == 5
    assert forwarded == [] and store.appended == 0

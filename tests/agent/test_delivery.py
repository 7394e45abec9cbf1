"""Delivery: stored durably first, in batches; then fanned out to every attachment."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from _agent_support import message_texts, scripted, serve
from helpers.timeouts import TIMEOUT

from accord.agent import MAX_HELD_OBSERVE, Attachment, DeliveryPipeline
from accord.engines import (
    ModelCallEnded,
    ModelCallStarted,
    SubAgentEvent,
    TextChunk,
    ThinkingChunk,
    UserMessageChunk,
    new_id,
)
from accord.events import (
    Envelope,
    SessionUpdateMapper,
    envelope_from_stored,
    stamp,
    to_session_update,
)
from accord.schema import ImageContentBlock, TextContentBlock
from accord.store import (
    MemorySessionStore,
    SessionRecord,
    SessionStore,
    SqliteSessionStore,
    StoredEvent,
)
from accord.testing import Emit, Say, Stream

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
        assert message_texts(h.client.updates(session_id)) == [("agent_message_chunk", "hello")]
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
async def test_a_chunk_is_sent_exactly_as_the_mapper_builds_it(event: Any) -> None:
    """Chunks go out without models (their content reused from the stored payload); the wire
    must not tell, live or replayed from the store."""
    async with serve() as h:
        session_id = await h.new_session()
        live = stamp(event, session_id=session_id, seq=1, epoch=0, turn_id="t", agent_id="root")
        plain = StoredEvent(
            session_id=live.session_id,
            seq=live.seq,
            epoch=live.epoch,
            turn_id=live.turn_id,
            agent_id=live.agent_id,
            kind=live.kind,
            layer=live.layer,
            payload=live.payload,
            created_at=live.created_at,
        )
        expected = to_session_update(event)
        assert expected is not None
        mapper = SessionUpdateMapper()
        assert mapper.update_wire(live) == expected.to_wire()
        assert mapper.update_wire(envelope_from_stored(plain)) == expected.to_wire()


class Collector:
    """A recipient that records what it is sent; ``gate`` (when set) holds every send."""

    def __init__(self, *, extended: bool = False) -> None:
        self.extended = extended
        self.gone = False
        self.gate: anyio.Event | None = None
        self.seqs: list[int] = []

    def wants(self, envelope: Envelope) -> bool:
        return self.extended or envelope.layer != "observe"

    async def deliver(self, envelope: Envelope) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.seqs.append(envelope.seq)


async def _pipeline(store: SessionStore) -> DeliveryPipeline:
    now = datetime.now(UTC)
    await store.create_session(
        SessionRecord(session_id="s", cwd="/", created_at=now, updated_at=now)
    )
    return DeliveryPipeline("s", store, epoch=0, next_seq=1)


async def test_a_slow_attachment_falls_behind_and_catches_up_from_the_store() -> None:
    """N attachments, each with its own queue and cursor: a stuck client holds neither the
    turn nor the other clients back, and once it moves it gets everything, in order."""
    store = MemorySessionStore()
    pipeline = await _pipeline(store)
    fast, slow = Collector(), Collector(extended=True)
    slow.gate = anyio.Event()
    fast_attachment = Attachment(pipeline, fast, cursor=0)
    slow_attachment = Attachment(pipeline, slow, cursor=0, max_queue=10)
    pipeline.attach(fast_attachment)
    pipeline.attach(slow_attachment)
    async with anyio.create_task_group() as tg:
        tg.start_soon(fast_attachment.run)
        tg.start_soon(slow_attachment.run)
        with anyio.fail_after(TIMEOUT):
            for index in range(100):
                if index % 10 == 0:
                    await pipeline.publish(
                        ModelCallStarted(call_id=str(index), model="m"), epoch=0, turn_id="t"
                    )
                await pipeline.publish(
                    TextChunk(message_id="m", content=TextContentBlock(text=str(index))),
                    epoch=0,
                    turn_id="t",
                )
            await fast_attachment.wait_sent(pipeline.committed_seq)
        stored = await store.read_events("s", limit=1000)
        render = [e.seq for e in stored if e.layer != "observe"]
        assert fast.seqs == render
        assert slow.seqs == [] and slow_attachment.behind
        slow.gate.set()
        with anyio.fail_after(TIMEOUT):
            await slow_attachment.wait_sent(pipeline.committed_seq)
        assert slow.seqs == [e.seq for e in stored]  # observe too: it is extended
        stats = slow_attachment.statistics()
        assert stats.fell_behind == 1 and stats.caught_up > 0
        assert not slow_attachment.behind
        # back on the live queue: the next event arrives without a store read
        await pipeline.publish(
            TextChunk(message_id="m", content=TextContentBlock(text="x")), epoch=0, turn_id="t"
        )
        with anyio.fail_after(TIMEOUT):
            await slow_attachment.wait_sent(pipeline.committed_seq)
        assert slow.seqs[-1] == pipeline.committed_seq
        assert slow_attachment.statistics().caught_up == stats.caught_up
        tg.cancel_scope.cancel()


async def test_an_event_of_an_older_epoch_is_dropped() -> None:
    pipeline = await _pipeline(MemorySessionStore())
    pipeline.new_epoch()
    chunk = TextChunk(message_id="m", content=TextContentBlock(text="late"))
    assert await pipeline.publish(chunk, epoch=0, turn_id="t") is None
    assert (await pipeline.publish(chunk, epoch=1, turn_id="t")) is not None
    stats = pipeline.statistics()
    assert (stats.stale_dropped, stats.committed_seq, stats.epoch) == (1, 1, 1)


async def test_a_gone_client_stops_its_attachment_and_releases_waiters() -> None:
    pipeline = await _pipeline(MemorySessionStore())
    client = Collector()
    attachment = Attachment(pipeline, client, cursor=0)
    pipeline.attach(attachment)
    client.gone = True
    async with anyio.create_task_group() as tg:
        tg.start_soon(attachment.run)
        await pipeline.publish(
            TextChunk(message_id="m", content=TextContentBlock(text="x")), epoch=0, turn_id="t"
        )
        with anyio.fail_after(TIMEOUT):
            await attachment.wait_sent(pipeline.committed_seq)
    assert attachment.closed and client.seqs == []


async def test_observe_events_never_wait_for_the_store() -> None:
    """An observe event is held at once even while every commit is blocked; beyond the
    bound it is dropped and counted, never waited for."""
    store = GatedStore(MemorySessionStore())
    store.gate = anyio.Event()
    pipeline = await _pipeline(store)  # type: ignore[arg-type]
    client = Collector(extended=True)
    pipeline.attach(Attachment(pipeline, client, cursor=0))
    with anyio.fail_after(TIMEOUT):  # every commit is blocked: a wait would hang
        for index in range(MAX_HELD_OBSERVE + 5):
            await pipeline.publish(
                ModelCallStarted(call_id=str(index), model="m"), epoch=0, turn_id="t"
            )
    assert pipeline.statistics().observe_dropped == 5
    assert client.seqs == [] and store.appended == 0


async def test_continuing_after_another_process_s_events_sends_them_and_numbers_after() -> None:
    """Another process appended to the session (its turn ran there): the pipeline numbers its
    next event after the stored chain, an attached client that was not relayed those events
    gets them from the store, in order, once; an observe event held here under a seq the
    other process took is dropped, never stored over it."""
    store = MemorySessionStore()
    pipeline = await _pipeline(store)
    client = Collector()
    attachment = Attachment(pipeline, client, cursor=0)
    pipeline.attach(attachment)
    async with anyio.create_task_group() as tg:
        tg.start_soon(attachment.run)
        await pipeline.publish(
            TextChunk(message_id="m", content=TextContentBlock(text="here")), epoch=0, turn_id=None
        )
        await pipeline.publish(ModelCallStarted(call_id="c", model="m"), epoch=0, turn_id="t")
        elsewhere = [
            stamp(
                TextChunk(message_id="n", content=TextContentBlock(text=f"there {seq}")),
                session_id="s",
                seq=seq,
                epoch=0,
                turn_id="other",
                agent_id="root",
            )
            for seq in range(2, 6)
        ]
        await store.append_events(elsewhere)
        pipeline.continue_after(5)
        await pipeline.publish(
            TextChunk(message_id="m", content=TextContentBlock(text="again")), epoch=0, turn_id=None
        )
        with anyio.fail_after(TIMEOUT):
            await attachment.wait_sent(6)
        tg.cancel_scope.cancel()
    assert client.seqs == [1, 2, 3, 4, 5, 6]
    assert [e.seq for e in await store.read_events("s")] == [1, 2, 3, 4, 5, 6]
    assert pipeline.statistics().observe_dropped == 1


async def test_the_event_extension_is_advertised_in_agent_capabilities_meta() -> None:
    async with serve() as h:
        response = h.conn.initialize_response
        assert response is not None
        wire = response.to_wire()["agentCapabilities"]
        assert wire["_meta"]["accord"]["events"] == {
            "method": "_accord/event",
            "layers": ["render", "state", "observe"],
        }
        assert wire["loadSession"] is True  # the derived capabilities are all still there


async def test_observe_events_reach_an_opted_in_client_on_the_wire_after_commit() -> None:
    engine = scripted(
        [
            Emit(ModelCallStarted(call_id="c1", model="m")),
            Emit(ModelCallEnded(call_id="c1", input_tokens=3, output_tokens=1)),
        ]
    )
    store = MemorySessionStore()
    async with serve(engine, store=store, extended=True) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        observed = [p for p in h.client.ext_events() if p["layer"] == "observe"]
        stored = [e for e in await store.read_events(session_id) if e.layer == "observe"]
        assert [p["kind"] for p in observed] == ["model_call_started", "model_call_ended"]
        assert [p["seq"] for p in observed] == [e.seq for e in stored]

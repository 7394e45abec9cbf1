"""An attachment's three modes (live after a seq, from the store after a cursor, replaying up
to a seq) and its phases (``ATTACHMENT_TRANSITIONS``), on a real pipeline and store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import ATTACHMENT_TRANSITIONS, Attachment, DeliveryPipeline
from accord.agent._restore import Replay, RestoredState
from accord.engines import EngineCapabilities, TextChunk, ToolCallTracker
from accord.events import Envelope
from accord.schema import TextContentBlock
from accord.store import MemorySessionStore, SessionRecord, StoreError

pytestmark = pytest.mark.anyio

_NOW = datetime.now(UTC)


class Recorder:
    """A recipient that records each envelope's seq and the cursor it was sent with; while
    ``gate`` is set, every send waits for it."""

    def __init__(self) -> None:
        self.extended = False
        self.gone = False
        self.gate: anyio.Event | None = None
        self.sent: list[tuple[int, int]] = []  # (envelope seq, cursor seq)
        self.texts: list[str] = []

    def wants(self, envelope: Envelope) -> bool:
        return envelope.layer != "observe"

    async def deliver(self, envelope: Envelope, cursor: tuple[int, int] | None = None) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.sent.append((envelope.seq, envelope.seq if cursor is None else cursor[1]))
        event = envelope.event
        if isinstance(event, TextChunk) and isinstance(event.content, TextContentBlock):
            self.texts.append(event.content.text)


async def _pipeline(store: MemorySessionStore) -> DeliveryPipeline:
    await store.create_session(
        SessionRecord(session_id="s", cwd="/", created_at=_NOW, updated_at=_NOW)
    )
    return DeliveryPipeline("s", store, epoch=0, next_seq=1)


async def _say(pipeline: DeliveryPipeline, *texts: str, message_id: str = "m") -> None:
    for text in texts:
        chunk = TextChunk(message_id=message_id, content=TextContentBlock(text=text))
        await pipeline.publish(chunk, epoch=0, turn_id="t")


def _replay(store: MemorySessionStore, until: int) -> Replay:
    record = SessionRecord(session_id="s", cwd="/", created_at=_NOW, updated_at=_NOW)
    return Replay(
        store,
        "s",
        restored=RestoredState(record, EngineCapabilities()),
        tracker=ToolCallTracker(),
        until_seq=until,
    )


def test_every_phase_is_reached_from_a_mode_and_closed_is_final() -> None:
    table = ATTACHMENT_TRANSITIONS
    starts = {table.step(None, t) for t in ("attach_live", "attach_from_store", "attach_replaying")}
    assert starts == {"live", "catching_up", "replaying"}
    reached = set(starts)
    while True:
        more = {table[pair] for pair in table if pair[0] in reached} - reached
        if not more:
            break
        reached |= more
    assert reached == {"replaying", "catching_up", "live", "behind", "closed"}
    assert table.final == {"closed"}
    assert table.triggers("closed") == {"close", "resync"}
    assert all(table.step("closed", t) == "closed" for t in table.triggers("closed"))
    # A live attachment never replays; a replaying one never overflows (it queues nothing).
    assert table.step("live", "replayed") is None
    assert table.step("replaying", "overflow") is None
    assert table.diagram().startswith("stateDiagram-v2")


async def test_bad_arguments_are_refused() -> None:
    pipeline = await _pipeline(MemorySessionStore())
    with pytest.raises(ValueError, match="max_queue"):
        Attachment.live(pipeline, Recorder(), after=0, max_queue=0)
    with pytest.raises(ValueError, match="cursor"):
        Attachment.from_store(pipeline, Recorder(), after=-1)


async def test_live_after_a_seq_sends_only_what_commits_later() -> None:
    pipeline = await _pipeline(MemorySessionStore())
    await _say(pipeline, "a", "b", "c")
    client = Recorder()
    attachment = Attachment.live(pipeline, client, after=pipeline.committed_seq)
    assert attachment.phase == "live"
    pipeline.attach(attachment)
    async with anyio.create_task_group() as tg:
        tg.start_soon(attachment.run)
        await _say(pipeline, "d", "e")
        with anyio.fail_after(TIMEOUT):
            await attachment.wait_sent(pipeline.committed_seq)
        tg.cancel_scope.cancel()
    assert client.sent == [(4, 4), (5, 5)]
    assert attachment.statistics().caught_up == 0


async def test_from_the_store_after_a_cursor_then_live() -> None:
    store = MemorySessionStore()
    pipeline = await _pipeline(store)
    await _say(pipeline, "a", "b", "c", "d", "e")
    client = Recorder()
    attachment = Attachment.from_store(pipeline, client, after=2)
    assert attachment.phase == "catching_up" and attachment.behind
    pipeline.attach(attachment)
    await _say(pipeline, "f")  # committed while catching up: read from the store, not queued
    assert attachment.statistics().queued == 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(attachment.run)
        with anyio.fail_after(TIMEOUT):
            await attachment.wait_sent(pipeline.committed_seq)
        assert attachment.phase == "live"
        await _say(pipeline, "g")
        with anyio.fail_after(TIMEOUT):
            await attachment.wait_sent(pipeline.committed_seq)
        tg.cancel_scope.cancel()
    assert [seq for seq, _ in client.sent] == [3, 4, 5, 6, 7]
    stats = attachment.statistics()
    assert (stats.caught_up, stats.sent, stats.fell_behind) == (4, 5, 0)


async def test_replaying_up_to_a_seq_then_what_committed_meanwhile_then_live() -> None:
    """The replay is compacted (one message's chunks merged, with the cursor of the last one it
    stands for); what commits during the replay comes after it from the store, once, in order;
    then the attachment is live."""
    store = MemorySessionStore()
    pipeline = await _pipeline(store)
    await _say(pipeline, "he", "llo")
    await _say(pipeline, "bye", message_id="n")
    until = pipeline.committed_seq
    client = Recorder()
    client.gate = anyio.Event()
    attachment = Attachment.replaying(
        pipeline, client, history=_replay(store, until), until=until, max_queue=1
    )
    assert attachment.phase == "replaying"
    pipeline.attach(attachment)
    phases: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(attachment.run)  # waits while the replay is sent

        async def replay() -> None:
            await attachment.replay()
            phases.append(attachment.phase)

        tg.start_soon(replay)
        await anyio.wait_all_tasks_blocked()
        # Three commits while the replay waits on the client: more than the queue holds,
        # and not queued anyway (the store has them).
        await _say(pipeline, "x", "y", "z")
        assert attachment.phase == "replaying" and attachment.statistics().queued == 0
        client.gate.set()
        with anyio.fail_after(TIMEOUT):
            await attachment.wait_sent(pipeline.committed_seq)
        assert attachment.phase == "live"
        await _say(pipeline, "w")
        with anyio.fail_after(TIMEOUT):
            await attachment.wait_sent(pipeline.committed_seq)
        tg.cancel_scope.cancel()
    assert phases == ["catching_up"]  # 3 commits after `until`: read from the store next
    assert client.sent == [(1, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7)]
    assert client.texts == ["hello", "bye", "x", "y", "z", "w"]
    stats = attachment.statistics()
    assert (stats.replayed, stats.caught_up, stats.fell_behind) == (2, 3, 0)


async def test_a_replay_of_everything_committed_goes_live_at_once() -> None:
    store = MemorySessionStore()
    pipeline = await _pipeline(store)
    await _say(pipeline, "a", "b")
    client = Recorder()
    until = pipeline.committed_seq
    attachment = Attachment.replaying(pipeline, client, history=_replay(store, until), until=until)
    pipeline.attach(attachment)
    with anyio.fail_after(TIMEOUT):
        await attachment.replay()
    assert attachment.phase == "live" and attachment.cursor == until
    assert client.sent == [(1, 2)]


async def test_a_failed_replay_fails_the_attaching_request() -> None:
    pipeline = await _pipeline(MemorySessionStore())
    await _say(pipeline, "a")

    async def broken() -> AsyncIterator[tuple[Envelope, tuple[int, int]]]:
        raise StoreError("the store went away")
        yield  # pragma: no cover

    attachment = Attachment.replaying(pipeline, Recorder(), history=broken(), until=1)
    pipeline.attach(attachment)
    with pytest.raises(StoreError):
        await attachment.replay()
    assert attachment.phase == "replaying"
    pipeline.detach(attachment)
    assert attachment.closed
    with anyio.fail_after(TIMEOUT):
        await attachment.wait_sent(1)  # a closed attachment keeps nobody waiting
        await attachment.run()  # returns at once

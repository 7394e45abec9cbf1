"""``GroupCommitWriter``: ordering, batching, flush, backpressure, and failures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import anyio.abc
import pytest
from _store_support import events, record
from helpers.timeouts import TIMEOUT

from accord.store import (
    EventOrderError,
    GroupCommitWriter,
    MemorySessionStore,
    SqliteSessionStore,
    StoredEvent,
    StoreError,
    UnknownSession,
    WriterClosed,
    WriterStatistics,
)

pytestmark = pytest.mark.anyio


class GatedStore(MemorySessionStore):
    """A memory store whose commits wait for ``release()`` while the gate is closed."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[int]] = []
        self.committing = anyio.Event()
        self._gate: anyio.Event | None = anyio.Event()

    def release(self) -> None:
        assert self._gate is not None
        self._gate.set()
        self._gate = None

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        self.batches.append([event.seq for event in events])
        self.committing.set()
        if self._gate is not None:
            await self._gate.wait()
        await super().append_events(events)


class FailingStore(MemorySessionStore):
    """A memory store whose commits fail."""

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        raise StoreError("disk on fire")


class Recorder:
    """An ``on_committed`` that records what it was given."""

    def __init__(self) -> None:
        self.batches: list[list[tuple[str, int]]] = []

    @property
    def delivered(self) -> list[tuple[str, int]]:
        return [item for batch in self.batches for item in batch]

    async def __call__(self, batch: Sequence[StoredEvent]) -> None:
        self.batches.append([(event.session_id, event.seq) for event in batch])


async def _store_with(*session_ids: str) -> MemorySessionStore:
    store = MemorySessionStore()
    for session_id in session_ids:
        await store.create_session(record(session_id))
    return store


async def test_commits_and_delivers_in_append_order() -> None:
    store = await _store_with("a", "b")
    recorder = Recorder()
    order = [e for pair in zip(events("a", 1, 50), events("b", 1, 50), strict=True) for e in pair]

    with anyio.fail_after(TIMEOUT):
        async with GroupCommitWriter(store, recorder) as writer:
            for event in order:
                await writer.append(event)
            await writer.flush()
            assert recorder.delivered == [(e.session_id, e.seq) for e in order]

    assert await store.read_events("a") == events("a", 1, 50)
    assert await store.read_events("b") == events("b", 1, 50)


async def test_batches_what_accumulates_during_a_commit() -> None:
    store = GatedStore()
    await store.create_session(record("s"))
    recorder = Recorder()

    with anyio.fail_after(TIMEOUT):
        async with GroupCommitWriter(store, recorder) as writer:
            first, *rest = events("s", 1, 41)
            await writer.append(first)
            await store.committing.wait()  # seq 1 is committing, alone, behind the gate
            for event in rest:
                await writer.append(event)
            assert writer.statistics() == WriterStatistics(
                pending=41, max_pending=4096, committed_events=0, committed_batches=0
            )
            store.release()
            await writer.flush()
            assert writer.statistics() == WriterStatistics(
                pending=0, max_pending=4096, committed_events=41, committed_batches=2
            )

    assert store.batches == [[1], list(range(2, 42))]
    assert [len(batch) for batch in recorder.batches] == [1, 40]


async def test_flush_waits_for_delivery() -> None:
    store = await _store_with("s")
    delivering = anyio.Event()
    may_finish = anyio.Event()
    flushed = False

    async def slow_delivery(batch: Sequence[StoredEvent]) -> None:
        delivering.set()
        await may_finish.wait()

    async def flusher(writer: GroupCommitWriter) -> None:
        nonlocal flushed
        await writer.flush()
        flushed = True

    with anyio.fail_after(TIMEOUT):
        async with (
            GroupCommitWriter(store, slow_delivery) as writer,
            anyio.create_task_group() as tg,
        ):
            await writer.append(events("s", 1, 1)[0])
            tg.start_soon(flusher, writer)
            await delivering.wait()
            await anyio.wait_all_tasks_blocked()
            assert not flushed
            # Committed already: durable before delivery.
            assert len(await store.read_events("s")) == 1
            may_finish.set()
    assert flushed


async def test_flush_with_nothing_appended_returns() -> None:
    store = await _store_with()
    with anyio.fail_after(TIMEOUT):
        async with GroupCommitWriter(store) as writer:
            await writer.flush()


async def test_append_waits_when_max_pending_is_reached() -> None:
    store = GatedStore()
    await store.create_session(record("s"))
    appended: list[int] = []

    async def producer(writer: GroupCommitWriter) -> None:
        for event in events("s", 1, 7):
            await writer.append(event)
            appended.append(event.seq)

    with anyio.fail_after(TIMEOUT):
        async with GroupCommitWriter(store, max_pending=4) as writer:
            async with anyio.create_task_group() as tg:
                tg.start_soon(producer, writer)
                await store.committing.wait()
                await anyio.wait_all_tasks_blocked()
                # The store is stuck: four events are buffered or committing, the fifth waits.
                assert appended == [1, 2, 3, 4]
                assert writer.statistics().pending == 4
                store.release()
            await writer.flush()

    assert appended == list(range(1, 8))
    assert [e.seq for e in await store.read_events("s")] == list(range(1, 8))
    assert all(len(batch) <= 4 for batch in store.batches)


async def test_leaving_the_block_commits_everything() -> None:
    store = await _store_with("s")
    recorder = Recorder()
    with anyio.fail_after(TIMEOUT):
        async with GroupCommitWriter(store, recorder) as writer:
            for event in events("s", 1, 20):
                await writer.append(event)
    assert len(recorder.delivered) == 20
    assert len(await store.read_events("s")) == 20


async def test_commit_error_is_raised_from_the_block_and_cancels_it() -> None:
    store = FailingStore()
    await store.create_session(record("s"))

    async def run() -> None:
        async with GroupCommitWriter(store) as writer:
            await writer.append(events("s", 1, 1)[0])
            await anyio.sleep_forever()  # the failure cancels the body

    with anyio.fail_after(TIMEOUT), pytest.raises(StoreError, match="disk on fire"):
        await run()


async def test_commit_error_reaches_a_waiting_appender() -> None:
    store = FailingStore()
    await store.create_session(record("s"))

    async def run() -> None:
        async with GroupCommitWriter(store, max_pending=1) as writer:
            await writer.append(events("s", 1, 1)[0])
            await writer.append(events("s", 2, 1)[0])  # waits for space, then fails
            pytest.fail("unreachable")

    with anyio.fail_after(TIMEOUT), pytest.raises(StoreError, match="disk on fire"):
        await run()


async def test_commit_error_in_another_task_raises_writer_closed() -> None:
    store = FailingStore()
    await store.create_session(record("s"))
    writer = GroupCommitWriter(store, max_pending=1)
    outside: list[BaseException] = []

    async def appender_outside_the_writer() -> None:
        try:
            await writer.append(events("s", 1, 1)[0])
            await writer.append(events("s", 2, 1)[0])
        except WriterClosed as exc:
            outside.append(exc)

    async def run(tg: anyio.abc.TaskGroup) -> None:
        async with writer:
            tg.start_soon(appender_outside_the_writer)
            await anyio.sleep_forever()

    raised: list[BaseException] = []
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            with pytest.raises(StoreError, match="disk on fire") as caught:
                await run(tg)
            raised.append(caught.value)

    assert len(outside) == 1
    assert outside[0].__cause__ is raised[0]
    with pytest.raises(WriterClosed):
        await writer.append(events("s", 3, 1)[0])
    with pytest.raises(WriterClosed):
        await writer.flush()


async def test_flush_raises_when_the_commit_fails() -> None:
    store = FailingStore()
    await store.create_session(record("s"))

    async def run() -> None:
        async with GroupCommitWriter(store) as writer:
            await writer.append(events("s", 1, 1)[0])
            await writer.flush()

    with anyio.fail_after(TIMEOUT), pytest.raises(StoreError, match="disk on fire") as caught:
        await run()
    assert not isinstance(caught.value, WriterClosed)


async def test_delivery_error_is_raised_from_the_block() -> None:
    store = await _store_with("s")

    async def broken_delivery(batch: Sequence[StoredEvent]) -> None:
        raise ConnectionError("client went away")

    async def run() -> None:
        async with GroupCommitWriter(store, broken_delivery) as writer:
            await writer.append(events("s", 1, 1)[0])
            await writer.flush()

    with anyio.fail_after(TIMEOUT), pytest.raises(ConnectionError, match="client went away"):
        await run()
    assert len(await store.read_events("s")) == 1


async def test_store_rules_apply_through_the_writer() -> None:
    store = await _store_with("s")

    async def run(batch: list[StoredEvent]) -> None:
        async with GroupCommitWriter(store) as writer:
            for event in batch:
                await writer.append(event)

    with anyio.fail_after(TIMEOUT):
        with pytest.raises(EventOrderError):
            await run([*events("s", 2, 1), *events("s", 1, 1)])
        with pytest.raises(UnknownSession):
            await run(events("ghost", 1, 1))


async def test_body_error_propagates_unwrapped() -> None:
    store = await _store_with("s")

    async def run() -> None:
        async with GroupCommitWriter(store) as writer:
            await writer.append(events("s", 1, 1)[0])
            raise KeyError("from the body")

    with anyio.fail_after(TIMEOUT), pytest.raises(KeyError, match="from the body"):
        await run()


async def test_body_and_commit_errors_together_raise_a_group() -> None:
    store = FailingStore()
    await store.create_session(record("s"))

    async def run() -> None:
        async with GroupCommitWriter(store) as writer:
            await writer.append(events("s", 1, 1)[0])
            with anyio.CancelScope(shield=True):
                await anyio.wait_all_tasks_blocked()  # the commit fails meanwhile
            raise KeyError("from the body")

    with anyio.fail_after(TIMEOUT), pytest.raises(ExceptionGroup) as caught:
        await run()
    kinds = sorted(type(exc).__name__ for exc in caught.value.exceptions)
    assert kinds == ["KeyError", "StoreError"]


async def test_cancelled_block_is_not_an_error() -> None:
    store = await _store_with("s")
    writer = GroupCommitWriter(store)
    with anyio.fail_after(TIMEOUT):
        with anyio.CancelScope() as scope:
            async with writer:
                await writer.append(events("s", 1, 1)[0])
                scope.cancel()
                await anyio.sleep_forever()
    assert scope.cancelled_caught
    with pytest.raises(WriterClosed):
        await writer.append(events("s", 2, 1)[0])


async def test_append_outside_the_running_writer_raises() -> None:
    store = await _store_with("s")
    writer = GroupCommitWriter(store)
    with pytest.raises(WriterClosed, match="new"):
        await writer.append(events("s", 1, 1)[0])
    async with writer:
        pass
    with pytest.raises(WriterClosed, match="closed"):
        await writer.append(events("s", 1, 1)[0])
    await writer.flush()  # nothing was appended: nothing to wait for
    with pytest.raises(RuntimeError, match="only once"):
        async with writer:
            pass


def test_max_pending_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_pending"):
        GroupCommitWriter(MemorySessionStore(), max_pending=0)


async def test_writer_on_sqlite_end_to_end(tmp_path: Path) -> None:
    recorder = Recorder()
    async with SqliteSessionStore(tmp_path / "w.sqlite3") as store:
        await store.create_session(record("s"))
        with anyio.fail_after(TIMEOUT):
            async with GroupCommitWriter(store, recorder, max_pending=256) as writer:
                for event in events("s", 1, 3000):
                    await writer.append(event)
        assert [seq for _, seq in recorder.delivered] == list(range(1, 3001))
        assert await store.read_events("s", limit=5000) == events("s", 1, 3000)
        got = await store.get_session("s")
        assert got is not None and got.last_seq == 3000


@pytest.mark.anyio
async def test_commit_window_gathers_events_into_fewer_transactions() -> None:
    committed: list[int] = []

    async def on_committed(batch: Sequence[StoredEvent]) -> None:
        committed.append(len(batch))

    async with MemorySessionStore() as store:
        await store.create_session(record("w1"))
        async with GroupCommitWriter(store, on_committed, commit_window=0.05) as writer:
            for seq, event in enumerate(events("w1", 1, 40), 1):
                await writer.append(event)
                if seq % 10 == 0:
                    await anyio.lowlevel.checkpoint()  # the commit task runs, and waits
            await writer.flush()  # ends the window at once
    assert sum(committed) == 40
    assert len(committed) <= 2, committed


def test_commit_window_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="commit_window"):
        GroupCommitWriter(MemorySessionStore(), commit_window=-1)

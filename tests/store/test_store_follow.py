"""``follow_events``, part of the shared contract: a session's committed events, live, from
any store object sharing the database (memory, SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from _store_support import events, record
from helpers.timeouts import TIMEOUT

from accord.store import READ_BATCH_SIZE, SessionStore, StoreClosed, StoredEvent

pytestmark = pytest.mark.anyio


async def _take(batches: AsyncIterator[list[StoredEvent]], last_seq: int) -> list[int]:
    """Seqs yielded until ``last_seq`` (failing if anything past it comes in the same batch)."""
    seen: list[int] = []
    with anyio.fail_after(TIMEOUT):
        async for batch in batches:
            seen.extend(event.seq for event in batch)
            if seen[-1] >= last_seq:
                return seen
    raise AssertionError("the follower ended by itself")


async def test_follow_yields_the_stored_history_then_appends_from_another_store(
    store_pair: tuple[SessionStore, SessionStore],
) -> None:
    follower, writer = store_pair
    await writer.create_session(record("s"))
    await writer.append_events(events("s", 1, 3))
    async with follower.follow_events("s") as batches:
        assert await _take(batches, 3) == [1, 2, 3]
        await writer.append_events(events("s", 4, 2))
        assert await _take(batches, 5) == [4, 5]
        await writer.append_events(events("s", 6, 1))
        await writer.append_events(events("s", 7, 3))
        assert await _take(batches, 9) == [6, 7, 8, 9]


async def test_follow_yields_the_events_verbatim(
    store_pair: tuple[SessionStore, SessionStore],
) -> None:
    follower, writer = store_pair
    await writer.create_session(record("s"))
    async with follower.follow_events("s") as batches:
        sent = events("s", 1, 4, turn_id="turn-9")
        await writer.append_events(sent)
        received: list[StoredEvent] = []
        with anyio.fail_after(TIMEOUT):
            async for batch in batches:
                received.extend(batch)
                if received[-1].seq == 4:
                    break
    assert received == await writer.read_events("s")
    assert [e.payload for e in received] == [e.payload for e in sent]
    assert {e.turn_id for e in received} == {"turn-9"}


async def test_follow_starts_after_the_cursor(store: SessionStore) -> None:
    await store.create_session(record("s"))
    await store.append_events(events("s", 1, 10))
    async with store.follow_events("s", after_seq=7) as batches:
        assert await _take(batches, 10) == [8, 9, 10]
        await store.append_events(events("s", 11, 1))
        assert await _take(batches, 11) == [11]


async def test_many_small_appends_arrive_once_each_and_in_order(
    store_pair: tuple[SessionStore, SessionStore],
) -> None:
    """Wake-ups coalesce (many appends, one read) or race the reads: nothing is lost or
    repeated, and a slow consumer gets the backlog in batches."""
    follower, writer = store_pair
    await writer.create_session(record("s"))
    total = 300
    seen: list[int] = []
    async with follower.follow_events("s") as batches, anyio.create_task_group() as tg:

        async def write() -> None:
            for seq in range(1, total + 1):
                await writer.append_events(events("s", seq, 1))

        tg.start_soon(write)
        with anyio.fail_after(TIMEOUT):
            async for batch in batches:
                seen.extend(event.seq for event in batch)
                await anyio.sleep(0.001)  # a consumer slower than the writer
                if seen[-1] == total:
                    break
    assert seen == list(range(1, total + 1))


async def test_a_backlog_longer_than_a_batch_is_read_page_by_page(store: SessionStore) -> None:
    await store.create_session(record("s"))
    count = READ_BATCH_SIZE * 2 + 37
    await store.append_events(events("s", 1, count))
    sizes: list[int] = []
    seqs: list[int] = []
    async with store.follow_events("s") as batches:
        with anyio.fail_after(TIMEOUT):
            async for batch in batches:
                sizes.append(len(batch))
                seqs.extend(e.seq for e in batch)
                if seqs[-1] == count:
                    break
    assert sizes == [READ_BATCH_SIZE, READ_BATCH_SIZE, 37]
    assert seqs == list(range(1, count + 1))


async def test_followers_see_only_their_session(
    store_pair: tuple[SessionStore, SessionStore],
) -> None:
    follower, writer = store_pair
    await writer.create_session(record("a"))
    await writer.create_session(record("b"))
    async with (
        follower.follow_events("a") as a_batches,
        follower.follow_events("a") as a_again,
        follower.follow_events("b") as b_batches,
    ):
        await writer.append_events([*events("a", 1, 2), *events("b", 1, 5)])
        await writer.append_events(events("a", 3, 1))
        assert await _take(a_batches, 3) == [1, 2, 3]
        assert await _take(a_again, 3) == [1, 2, 3]
        assert await _take(b_batches, 5) == [1, 2, 3, 4, 5]
        b_events = [e for batch in [await writer.read_events("b")] for e in batch]
        assert {e.session_id for e in b_events} == {"b"}


async def test_a_session_created_after_following_began_is_followed(
    store_pair: tuple[SessionStore, SessionStore],
) -> None:
    follower, writer = store_pair
    async with follower.follow_events("later") as batches:
        await writer.create_session(record("later"))
        await writer.append_events(events("later", 1, 2))
        assert await _take(batches, 2) == [1, 2]


@pytest.mark.parametrize("cursor", [-1, True, 1.5, "3", None])
async def test_a_malformed_cursor_is_refused(store: SessionStore, cursor: Any) -> None:
    with pytest.raises(ValueError, match="after_seq must be a non-negative integer"):
        async with store.follow_events("s", after_seq=cursor):
            pytest.fail("a malformed cursor was accepted")


async def test_following_a_closed_store_is_refused(store: SessionStore) -> None:
    await store.aclose()
    with pytest.raises(StoreClosed):
        async with store.follow_events("s"):
            pytest.fail("a closed store was followed")


async def test_closing_the_store_ends_a_waiting_follower_with_store_closed(
    store: SessionStore,
) -> None:
    await store.create_session(record("s"))
    await store.append_events(events("s", 1, 1))
    outcome: list[BaseException] = []
    with anyio.fail_after(TIMEOUT):
        async with store.follow_events("s") as batches:
            assert await _take(batches, 1) == [1]
            waiting = anyio.Event()

            async def wait_for_more() -> None:
                waiting.set()
                try:
                    async for _batch in batches:
                        pytest.fail("a closed store yielded events")
                except StoreClosed as error:
                    outcome.append(error)

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_for_more)
                await waiting.wait()
                await store.aclose()
    assert len(outcome) == 1


async def test_leaving_early_and_following_again_resumes_from_the_cursor(
    store_pair: tuple[SessionStore, SessionStore],
) -> None:
    follower, writer = store_pair
    await writer.create_session(record("s"))
    await writer.append_events(events("s", 1, 4))
    async with follower.follow_events("s") as batches:
        cursor = (await _take(batches, 4))[-1]
    await writer.append_events(events("s", 5, 3))
    async with follower.follow_events("s", after_seq=cursor) as batches:
        assert await _take(batches, 7) == [5, 6, 7]

"""The shared suite: every ``SessionStore`` must pass it (memory, SQLite and PostgreSQL)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import anyio
import pytest
from _store_support import T0, at, events, record
from helpers.timeouts import TIMEOUT

from accord.errors import InvalidParams, SessionError, SessionNotFound
from accord.store import (
    MAX_PAGE_SIZE,
    EventOrderError,
    InvalidCursor,
    SessionExists,
    SessionRecord,
    SessionStore,
    StoreClosed,
    StoredEvent,
    UnknownSession,
    iter_events,
)

pytestmark = pytest.mark.anyio


# --- create / get -----------------------------------------------------------------------------


async def test_create_then_get_returns_every_field(store: SessionStore) -> None:
    plus_two = timezone(timedelta(hours=2))
    original = SessionRecord(
        session_id="s1",
        cwd="/work/a",
        additional_directories=("/work/lib", "/work/docs"),
        mcp_servers=({"name": "fs", "command": "mcp-fs", "args": [], "env": []},),
        title="Fix the parser",
        created_at=T0.astimezone(plus_two),
        updated_at=at(5).astimezone(plus_two),
        epoch=3,
        last_seq=0,
        state={"mode": "code", "config": {"model": "m1"}, "allowed": ["read"], "n": 1.5},
    )
    await store.create_session(original)

    got = await store.get_session("s1")

    assert got == original
    assert got is not None
    assert got.created_at.utcoffset() == timedelta(0)
    assert got.updated_at.utcoffset() == timedelta(0)


async def test_get_unknown_session_is_none(store: SessionStore) -> None:
    assert await store.get_session("nope") is None


async def test_create_duplicate_id_raises_session_exists(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    with pytest.raises(SessionExists) as caught:
        await store.create_session(record("s1", cwd="/elsewhere"))
    assert isinstance(caught.value, SessionError)
    got = await store.get_session("s1")
    assert got is not None and got.cwd == "/work/project"


async def test_state_must_be_json(store: SessionStore) -> None:
    with pytest.raises(TypeError):
        await store.create_session(replace(record("s1"), state={"x": object()}))
    assert await store.get_session("s1") is None


async def test_returned_state_is_a_copy(store: SessionStore) -> None:
    state = {"history": [{"role": "user", "text": "hi"}]}
    await store.create_session(replace(record("s1"), state=state))
    state["history"].append({"role": "assistant", "text": "changed after create"})

    got = await store.get_session("s1")
    assert got is not None
    assert got.state == {"history": [{"role": "user", "text": "hi"}]}
    got.state["history"].clear()

    again = await store.get_session("s1")
    assert again is not None and again.state == {"history": [{"role": "user", "text": "hi"}]}


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        SessionRecord(session_id="s", cwd="/", created_at=datetime(2026, 1, 1), updated_at=T0)
    with pytest.raises(ValueError, match="timezone-aware"):
        replace(events("s", 1, 1)[0], created_at=datetime(2026, 1, 1))


# --- update -----------------------------------------------------------------------------------


async def test_update_changes_only_the_given_fields(store: SessionStore) -> None:
    await store.create_session(replace(record("s1", title="Old"), state={"mode": "ask"}))

    updated = await store.update_session("s1", state={"mode": "code"})

    expected = replace(record("s1", title="Old"), state={"mode": "code"})
    assert updated == expected
    assert await store.get_session("s1") == expected


async def test_update_title_none_clears_it(store: SessionStore) -> None:
    await store.create_session(record("s1", title="Old"))
    updated = await store.update_session("s1", title=None)
    assert updated.title is None
    got = await store.get_session("s1")
    assert got is not None and got.title is None


async def test_update_every_field(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    updated = await store.update_session(
        "s1",
        cwd="/new",
        additional_directories=["/extra"],
        mcp_servers=[{"name": "x", "type": "http", "url": "http://127.0.0.1"}],
        title="T",
        state={"a": 1},
        epoch=2,
        updated_at=at(60),
    )
    assert updated == SessionRecord(
        session_id="s1",
        cwd="/new",
        additional_directories=("/extra",),
        mcp_servers=({"name": "x", "type": "http", "url": "http://127.0.0.1"},),
        title="T",
        created_at=T0,
        updated_at=at(60),
        epoch=2,
        state={"a": 1},
    )
    assert await store.get_session("s1") == updated


async def test_update_with_nothing_returns_the_record(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    assert await store.update_session("s1") == record("s1")


async def test_update_unknown_session_raises(store: SessionStore) -> None:
    with pytest.raises(UnknownSession) as caught:
        await store.update_session("nope", title="x")
    assert isinstance(caught.value, SessionNotFound)
    with pytest.raises(UnknownSession):
        await store.update_session("nope")


async def test_update_state_must_be_json(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    with pytest.raises(TypeError):
        await store.update_session("s1", state={"x": {1, 2}}, title="ignored")
    assert await store.get_session("s1") == record("s1")


# --- append / read ----------------------------------------------------------------------------


async def test_append_then_read_returns_events_verbatim(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    batch = [*events("s1", 1, 3), *events("s1", 4, 2, turn_id=None, when=2)]
    batch[1] = replace(batch[1], payload=b'{"text":"\\u00e9\xc3\xa9 \\n"}', kind="k", layer="x")

    await store.append_events(batch)

    assert await store.read_events("s1") == batch


async def test_envelope_strings_round_trip_across_batches(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.create_session(record("s2"))
    first = [
        replace(e, agent_id="root", kind="turn_started", layer="control")
        for e in events("s1", 1, 2, turn_id="turn-a")
    ]
    second = [
        *events("s1", 3, 2, turn_id="turn-b"),
        replace(events("s1", 5, 1, turn_id=None)[0], agent_id="sub-1", kind="é ü ✓", layer=""),
        *events("s1", 6, 1, turn_id="turn-a"),
    ]
    other = [replace(e, agent_id="sub-1") for e in events("s2", 1, 2, turn_id="turn-b")]
    await store.append_events(first)
    await store.append_events([*second, *other])

    assert await store.read_events("s1") == [*first, *second]
    assert await store.read_events("s2") == other
    assert await store.read_events("s1", after_seq=4) == second[2:]


async def test_many_distinct_strings_in_one_batch(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    batch = [
        replace(e, turn_id=f"turn-{e.seq}", agent_id=f"agent-{e.seq % 700}")
        for e in events("s1", 1, 1500)
    ]
    await store.append_events(batch)
    assert await store.read_events("s1", limit=2000) == batch


async def test_append_advances_last_seq_and_updated_at(store: SessionStore) -> None:
    await store.create_session(record("s1", updated=0))
    await store.append_events(events("s1", 1, 5, when=30))
    got = await store.get_session("s1")
    assert got is not None
    assert (got.last_seq, got.updated_at) == (5, at(30))

    # An event stamped earlier than the session's updated_at never moves it back.
    await store.update_session("s1", updated_at=at(100))
    await store.append_events(events("s1", 6, 1, when=50))
    got = await store.get_session("s1")
    assert got is not None
    assert (got.last_seq, got.updated_at) == (6, at(100))


async def test_append_allows_gaps_in_seq(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.append_events([*events("s1", 2, 1), *events("s1", 10, 1)])
    assert [e.seq for e in await store.read_events("s1")] == [2, 10]


async def test_append_empty_batch_does_nothing(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.append_events([])
    assert await store.get_session("s1") == record("s1")


async def test_append_batch_spanning_sessions(store: SessionStore) -> None:
    await store.create_session(record("a"))
    await store.create_session(record("b"))
    a1, a2 = events("a", 1, 2, when=7)
    (b1,) = events("b", 1, 1, when=9)
    await store.append_events([a1, b1, a2])

    assert await store.read_events("a") == [a1, a2]
    assert await store.read_events("b") == [b1]
    a, b = await store.get_session("a"), await store.get_session("b")
    assert a is not None and b is not None
    assert (a.last_seq, a.updated_at, b.last_seq, b.updated_at) == (2, at(7), 1, at(9))


async def test_append_to_unknown_session_stores_nothing(store: SessionStore) -> None:
    await store.create_session(record("a"))
    with pytest.raises(UnknownSession):
        await store.append_events([*events("a", 1, 2), *events("ghost", 1, 1)])
    assert await store.read_events("a") == []
    got = await store.get_session("a")
    assert got is not None and got.last_seq == 0


@pytest.mark.parametrize(
    "seqs",
    [pytest.param([1, 1], id="repeated"), pytest.param([2, 1], id="decreasing")],
)
async def test_append_refuses_seqs_that_do_not_increase(
    store: SessionStore, seqs: list[int]
) -> None:
    await store.create_session(record("s1"))
    batch = [replace(events("s1", 1, 1)[0], seq=seq) for seq in seqs]
    with pytest.raises(EventOrderError):
        await store.append_events(batch)
    assert await store.read_events("s1") == []


async def test_append_refuses_seq_at_or_below_last_seq(store: SessionStore) -> None:
    await store.create_session(record("a"))
    await store.create_session(record("b"))
    await store.append_events(events("a", 1, 3))
    with pytest.raises(EventOrderError):
        await store.append_events([*events("b", 1, 1), *events("a", 3, 1)])
    with pytest.raises(EventOrderError):
        await store.append_events(events("a", 0, 1))
    assert [e.seq for e in await store.read_events("a")] == [1, 2, 3]
    assert await store.read_events("b") == []


async def test_new_session_refuses_seq_zero(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    with pytest.raises(EventOrderError):
        await store.append_events(events("s1", 0, 1))


async def test_read_after_seq_and_limit(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    stored = events("s1", 1, 10)
    await store.append_events(stored)

    assert await store.read_events("s1", after_seq=7) == stored[7:]
    assert await store.read_events("s1", after_seq=2, limit=3) == stored[2:5]
    assert await store.read_events("s1", after_seq=10) == []
    assert await store.read_events("s1", after_seq=-5, limit=1) == stored[:1]


async def test_read_limit_must_be_positive(store: SessionStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        await store.read_events("s1", limit=0)


async def test_read_unknown_session_is_empty(store: SessionStore) -> None:
    assert await store.read_events("nope") == []


async def test_iter_events_walks_everything_in_batches(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    stored = events("s1", 1, 25)
    await store.append_events(stored)

    batches = [batch async for batch in iter_events(store, "s1", batch_size=10)]
    assert [len(batch) for batch in batches] == [10, 10, 5]
    assert [e for batch in batches for e in batch] == stored

    exact = [batch async for batch in iter_events(store, "s1", after_seq=5, batch_size=10)]
    assert [len(batch) for batch in exact] == [10, 10]
    assert [batch async for batch in iter_events(store, "nope")] == []


# --- fork -------------------------------------------------------------------------------------


async def test_fork_copies_history_under_the_new_identity(store: SessionStore) -> None:
    source = replace(record("src", title="Source", updated=10), state={"mode": "code"}, epoch=2)
    await store.create_session(source)
    await store.append_events(events("src", 1, 4, when=20))
    new = SessionRecord(
        session_id="fork",
        cwd="/work/other",
        additional_directories=("/x",),
        title="Fork",
        created_at=at(100),
        updated_at=at(100),
        state={"ignored": True},
        epoch=99,
        last_seq=99,
    )

    forked = await store.fork_session("src", new)

    assert forked == replace(new, state={"mode": "code"}, epoch=2, last_seq=4)
    assert await store.get_session("fork") == forked
    assert await store.read_events("fork") == [
        replace(e, session_id="fork") for e in events("src", 1, 4, when=20)
    ]


async def test_fork_leaves_source_unchanged_and_histories_diverge(store: SessionStore) -> None:
    await store.create_session(replace(record("src"), state={"n": 1}))
    await store.append_events(events("src", 1, 3))
    before = await store.get_session("src")

    await store.fork_session("src", record("fork"))
    await store.append_events(events("fork", 4, 2, when=50))
    await store.update_session("fork", state={"n": 2})

    assert await store.get_session("src") == before
    assert [e.seq for e in await store.read_events("src")] == [1, 2, 3]
    await store.append_events(events("src", 4, 1))
    assert [e.seq for e in await store.read_events("fork")] == [1, 2, 3, 4, 5]
    assert [e.session_id for e in await store.read_events("fork")] == ["fork"] * 5

    await store.delete_session("src")
    assert [e.seq for e in await store.read_events("fork")] == [1, 2, 3, 4, 5]


async def test_fork_unknown_source_raises(store: SessionStore) -> None:
    with pytest.raises(UnknownSession):
        await store.fork_session("nope", record("fork"))
    assert await store.get_session("fork") is None


async def test_fork_onto_existing_id_raises(store: SessionStore) -> None:
    await store.create_session(record("src"))
    await store.create_session(record("taken", title="keep me"))
    with pytest.raises(SessionExists):
        await store.fork_session("src", record("taken"))
    with pytest.raises(SessionExists):
        await store.fork_session("src", record("src"))
    got = await store.get_session("taken")
    assert got is not None and got.title == "keep me"


# --- list -------------------------------------------------------------------------------------


async def _all_pages(
    store: SessionStore, *, cwd: str | None = None, limit: int = 3
) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = await store.list_sessions(cwd=cwd, cursor=cursor, limit=limit)
        pages.append([s.session_id for s in page.sessions])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


async def test_list_empty_store(store: SessionStore) -> None:
    page = await store.list_sessions()
    assert page.sessions == ()
    assert page.next_cursor is None


async def test_list_newest_first_with_summary_fields(store: SessionStore) -> None:
    await store.create_session(record("old", updated=1, title="Old"))
    await store.create_session(replace(record("new", updated=2), additional_directories=("/lib",)))
    await store.append_events(events("old", 1, 2, when=3))

    page = await store.list_sessions()

    assert [s.session_id for s in page.sessions] == ["old", "new"]
    first = page.sessions[0]
    assert (first.cwd, first.title, first.created_at, first.updated_at, first.last_seq) == (
        "/work/project",
        "Old",
        T0,
        at(3),
        2,
    )
    assert page.sessions[1].additional_directories == ("/lib",)
    assert page.next_cursor is None


async def test_list_pages_through_equal_timestamps(store: SessionStore) -> None:
    ids = [f"s{n}" for n in range(7)]
    for session_id in ids:
        await store.create_session(record(session_id, updated=5))
    await store.create_session(record("later", updated=6))
    await store.create_session(record("earlier", updated=4))

    pages = await _all_pages(store, limit=3)

    assert pages == [
        ["later", "s6", "s5"],
        ["s4", "s3", "s2"],
        ["s1", "s0", "earlier"],
    ]


async def test_list_exact_page_fill_has_no_next_cursor(store: SessionStore) -> None:
    for n in range(3):
        await store.create_session(record(f"s{n}", updated=n))
    page = await store.list_sessions(limit=3)
    assert len(page.sessions) == 3
    assert page.next_cursor is None


async def test_list_filters_cwd_exactly(store: SessionStore) -> None:
    cwds = ["/a", "/a/", "/ab", "/a/b", "/A", "/a"]
    for n, cwd in enumerate(cwds):
        await store.create_session(record(f"s{n}", cwd=cwd, updated=n))

    assert await _all_pages(store, cwd="/a", limit=1) == [["s5"], ["s0"]]
    assert await _all_pages(store, cwd="/a/") == [["s1"]]
    assert await _all_pages(store, cwd="/nowhere") == [[]]


async def test_list_caps_the_page_size(store: SessionStore) -> None:
    for n in range(MAX_PAGE_SIZE + 5):
        await store.create_session(record(f"s{n:03d}", updated=n))
    page = await store.list_sessions(limit=MAX_PAGE_SIZE * 10)
    assert len(page.sessions) == MAX_PAGE_SIZE
    assert page.next_cursor is not None
    rest = await store.list_sessions(cursor=page.next_cursor, limit=MAX_PAGE_SIZE * 10)
    assert [s.session_id for s in rest.sessions] == [f"s{n:03d}" for n in range(4, -1, -1)]


async def test_list_limit_must_be_positive(store: SessionStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        await store.list_sessions(limit=0)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not base64!",
        "bm90IGpzb24=",  # "not json"
        "WyJzMSIsMSwyXQ==",  # ["s1", 1, 2]
        "WyJzMiIsMSwieCJd",  # ["s2", 1, "x"]: unknown tag
        "WyJzMSIsdHJ1ZSwieCJd",  # ["s1", true, "x"]
        "eyJhIjoxfQ==",  # {"a": 1}
        "WyJzMSIsMSwieCJd\u00e9",
    ],
)
async def test_list_invalid_cursor_raises(store: SessionStore, cursor: str) -> None:
    with pytest.raises(InvalidCursor) as caught:
        await store.list_sessions(cursor=cursor)
    assert isinstance(caught.value, InvalidParams)
    assert caught.value.code == -32602


async def test_cursor_survives_deleting_the_session_it_points_at(store: SessionStore) -> None:
    for n in range(4):
        await store.create_session(record(f"s{n}", updated=n))
    page = await store.list_sessions(limit=2)
    assert [s.session_id for s in page.sessions] == ["s3", "s2"]
    await store.delete_session("s2")
    rest = await store.list_sessions(cursor=page.next_cursor, limit=2)
    assert [s.session_id for s in rest.sessions] == ["s1", "s0"]


# --- delete -----------------------------------------------------------------------------------


async def test_delete_removes_session_and_events(store: SessionStore) -> None:
    await store.create_session(record("gone"))
    await store.create_session(record("kept"))
    await store.append_events([*events("gone", 1, 3), *events("kept", 1, 1)])

    await store.delete_session("gone")

    assert await store.get_session("gone") is None
    assert await store.read_events("gone") == []
    assert [s.session_id for s in (await store.list_sessions()).sessions] == ["kept"]
    assert len(await store.read_events("kept")) == 1
    with pytest.raises(UnknownSession):
        await store.append_events(events("gone", 4, 1))


async def test_delete_unknown_session_is_silent(store: SessionStore) -> None:
    await store.delete_session("never-existed")
    await store.create_session(record("s1"))
    await store.delete_session("s1")
    await store.delete_session("s1")


async def test_recreated_id_starts_empty(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.append_events(events("s1", 1, 3))
    await store.delete_session("s1")
    await store.create_session(record("s1"))
    assert await store.read_events("s1") == []
    await store.append_events(events("s1", 1, 1))
    assert [e.seq for e in await store.read_events("s1")] == [1]


# --- lifecycle --------------------------------------------------------------------------------


async def test_closed_store_refuses_calls(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.aclose()
    await store.aclose()
    with pytest.raises(StoreClosed):
        await store.get_session("s1")
    with pytest.raises(StoreClosed):
        await store.append_events(events("s1", 1, 1))
    with pytest.raises(StoreClosed):
        await store.list_sessions()


async def test_many_tasks_share_one_store(store: SessionStore) -> None:
    async def session_worker(n: int) -> None:
        session_id = f"s{n}"
        await store.create_session(record(session_id))
        for first in range(1, 50, 7):
            await store.append_events(events(session_id, first, 7))

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            for n in range(8):
                tg.start_soon(session_worker, n)

    for n in range(8):
        stored: list[StoredEvent] = await store.read_events(f"s{n}")
        assert [e.seq for e in stored] == list(range(1, 50))


async def test_cancelled_write_stores_nothing_and_store_carries_on(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    with anyio.CancelScope() as scope:
        scope.cancel()
        await store.append_events(events("s1", 1, 3))
    assert scope.cancelled_caught
    assert await store.read_events("s1") == []
    await store.append_events(events("s1", 1, 3))
    assert len(await store.read_events("s1")) == 3


# -- claims: one process at a time runs a session's turns ---------------------------------------


async def test_claim_is_granted_renewed_and_reports_the_head(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.append_events(events("s1", 1, 3))
    first = await store.claim_session("s1", "process-a", lease_seconds=30)
    assert first.held_by("process-a")
    assert first.last_seq == 3
    assert first.expires_at.tzinfo is not None
    renewed = await store.claim_session("s1", "process-a", lease_seconds=60)
    assert renewed.held_by("process-a")
    assert renewed.expires_at > first.expires_at


async def test_a_live_claim_keeps_other_owners_out(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.claim_session("s1", "process-a", lease_seconds=30)
    other = await store.claim_session("s1", "process-b", lease_seconds=30)
    assert not other.held_by("process-b")
    assert other.owner == "process-a"
    await store.release_session("s1", "process-b")  # not the holder: nothing happens
    assert (await store.claim_session("s1", "process-b", lease_seconds=30)).owner == "process-a"
    await store.release_session("s1", "process-a")
    assert (await store.claim_session("s1", "process-b", lease_seconds=30)).held_by("process-b")


async def test_an_expired_claim_can_be_taken_over(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.claim_session("s1", "dead-process", lease_seconds=0.05)
    await anyio.sleep(0.2)
    taken = await store.claim_session("s1", "process-b", lease_seconds=30)
    assert taken.held_by("process-b")


async def test_claims_are_per_session_and_need_a_stored_one(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.create_session(record("s2"))
    await store.claim_session("s1", "process-a", lease_seconds=30)
    assert (await store.claim_session("s2", "process-b", lease_seconds=30)).held_by("process-b")
    with pytest.raises(UnknownSession):
        await store.claim_session("nope", "process-a", lease_seconds=30)
    await store.release_session("nope", "process-a")  # silently nothing
    with pytest.raises(ValueError, match="lease_seconds must be positive"):
        await store.claim_session("s1", "process-a", lease_seconds=0)


async def test_a_claim_can_replace_a_holder_known_to_be_dead(store: SessionStore) -> None:
    await store.create_session(record("s1"))
    await store.claim_session("s1", "dead-process", lease_seconds=30)
    refused = await store.claim_session("s1", "process-b", lease_seconds=30, replacing="other")
    assert refused.owner == "dead-process"
    taken = await store.claim_session("s1", "process-b", lease_seconds=30, replacing="dead-process")
    assert taken.held_by("process-b")

"""What only the SQLite store has: a file that persists, migrates, and is shared."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from _store_support import T0, at, delta_payload, events, record
from helpers.timeouts import TIMEOUT

import accord.store._schema as schema
import accord.store._sqlite as sqlite_store
from accord.store import (
    SchemaVersionError,
    SessionRecord,
    SqliteSessionStore,
    StoredEvent,
    StoreError,
    default_store_path,
)
from accord.store._codec import to_micros

pytestmark = pytest.mark.anyio

# The version-1 schema exactly as it shipped: never edit this copy. It is how a file written by
# the first release looks, and every later release must keep opening it.
_SCHEMA_V1_AS_SHIPPED = """
CREATE TABLE sessions (
    sid INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL UNIQUE,
    cwd TEXT NOT NULL,
    additional_directories BLOB NOT NULL,
    mcp_servers BLOB NOT NULL,
    title TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    state BLOB NOT NULL
);
CREATE INDEX sessions_by_update ON sessions (updated_at DESC, session_id DESC);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, session_id DESC);
CREATE TABLE labels (
    sid INTEGER NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
    label INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (sid, label),
    UNIQUE (sid, text)
) WITHOUT ROWID;
CREATE TABLE events (
    sid INTEGER NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    turn INTEGER,
    agent INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    layer INTEGER NOT NULL,
    payload BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (sid, seq)
) WITHOUT ROWID;
PRAGMA user_version = 1;
"""


def _write_v1_file_by_hand(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA_V1_AS_SHIPPED)
    db.execute(
        "INSERT INTO sessions VALUES (7, 's1', '/w', '[\"/lib\"]', '[]', 'Title', ?, ?, 1, 2,"
        ' \'{"mode":"code"}\')',
        (to_micros(T0), to_micros(at(9))),
    )
    db.executemany(
        "INSERT INTO labels VALUES (7, ?, ?)",
        [(1, "turn-1"), (2, "root"), (3, "text_chunk"), (4, "transcript"), (5, "notice")],
    )
    db.executemany(
        "INSERT INTO events VALUES (7, ?, 1, ?, 2, ?, 4, ?, ?)",
        [(1, 1, 3, delta_payload(1), to_micros(at(1))), (2, None, 5, b"{}", to_micros(at(2)))],
    )
    db.commit()
    db.close()


def _user_version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


async def test_everything_survives_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    source = replace(record("src", title="T"), state={"history": ["a", "b"]}, epoch=4)
    async with SqliteSessionStore(path) as store:
        await store.create_session(source)
        await store.append_events(events("src", 1, 5))
        await store.fork_session("src", record("fork"))
        await store.create_session(record("deleted"))
        await store.delete_session("deleted")

    async with SqliteSessionStore(path) as store:
        assert await store.get_session("src") == replace(source, last_seq=5, updated_at=at(1))
        assert await store.read_events("src") == events("src", 1, 5)
        assert len(await store.read_events("fork")) == 5
        assert await store.get_session("deleted") is None
        listed = await store.list_sessions()
        assert {s.session_id for s in listed.sessions} == {"src", "fork"}


async def test_new_file_is_wal_private_and_current(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    async with SqliteSessionStore(path) as store:
        assert store.path == path
        db = sqlite3.connect(path)
        try:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            db.close()
    assert _user_version(path) == len(schema.MIGRATIONS)
    if sys.platform != "win32":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_nothing_is_opened_before_first_use(tmp_path: Path) -> None:
    path = tmp_path / "lazy.sqlite3"
    store = SqliteSessionStore(path)
    assert not path.exists()
    await store.aclose()
    assert not path.exists()


async def test_first_call_opens_without_async_with(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.sqlite3")
    try:
        await store.create_session(record("s1"))
        assert await store.get_session("s1") == record("s1")
    finally:
        await store.aclose()


def test_default_store_path_is_in_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def user_data_dir(*args: object, **kwargs: object) -> str:
        return str(tmp_path / "data" / "accord")

    monkeypatch.setattr(sqlite_store.platformdirs, "user_data_dir", user_data_dir)
    path = default_store_path()
    assert path == tmp_path / "data" / "accord" / "sessions.sqlite3"
    assert path.parent.is_dir()


async def test_store_without_path_uses_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "default_store_path", lambda: tmp_path / "default.sqlite3")
    store = SqliteSessionStore()
    assert store.path is None
    async with store:
        await store.create_session(record("s1"))
    path = store.path
    assert path == tmp_path / "default.sqlite3"
    assert path is not None and path.exists()


async def test_in_memory_database(tmp_path: Path) -> None:
    async with SqliteSessionStore(":memory:") as store:
        await store.create_session(record("s1"))
        assert await store.get_session("s1") == record("s1")
    assert not (Path.cwd() / ":memory:").exists()


async def test_synchronous_full_works(tmp_path: Path) -> None:
    async with SqliteSessionStore(tmp_path / "s.sqlite3", synchronous="full") as store:
        await store.create_session(record("s1"))
        await store.append_events(events("s1", 1, 3))
        assert len(await store.read_events("s1")) == 3


async def test_opens_a_v1_file_written_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    _write_v1_file_by_hand(path)

    async with SqliteSessionStore(path) as store:
        assert await store.get_session("s1") == SessionRecord(
            session_id="s1",
            cwd="/w",
            additional_directories=("/lib",),
            title="Title",
            created_at=T0,
            updated_at=at(9),
            epoch=1,
            last_seq=2,
            state={"mode": "code"},
        )
        assert await store.read_events("s1") == [
            StoredEvent(
                session_id="s1",
                seq=1,
                epoch=1,
                turn_id="turn-1",
                agent_id="root",
                kind="text_chunk",
                layer="transcript",
                payload=delta_payload(1),
                created_at=at(1),
            ),
            StoredEvent(
                session_id="s1",
                seq=2,
                epoch=1,
                turn_id=None,
                agent_id="root",
                kind="notice",
                layer="transcript",
                payload=b"{}",
                created_at=at(2),
            ),
        ]
        await store.append_events(events("s1", 3, 1))
        await store.delete_session("s1")
        assert await store.read_events("s1") == []
    assert _user_version(path) == len(schema.MIGRATIONS)


def _v2_add_pinned(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")


def _v2_broken(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE sessions ADD COLUMN half_done INTEGER")
    db.execute("this is not SQL")


async def test_older_file_is_migrated_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v1.sqlite3"
    _write_v1_file_by_hand(path)
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, _v2_add_pinned))

    async with SqliteSessionStore(path) as store:
        got = await store.get_session("s1")
        assert got is not None and got.last_seq == 2

    assert _user_version(path) == len(schema.MIGRATIONS)
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT session_id, pinned FROM sessions").fetchall() == [("s1", 0)]
    finally:
        db.close()


async def test_failed_migration_leaves_the_file_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v1.sqlite3"
    _write_v1_file_by_hand(path)
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, _v2_broken))

    with pytest.raises(StoreError, match="syntax error"):
        async with SqliteSessionStore(path):
            pass

    assert _user_version(path) == 1
    db = sqlite3.connect(path)
    try:
        columns = [row[1] for row in db.execute("PRAGMA table_info(sessions)")]
    finally:
        db.close()
    assert "half_done" not in columns


async def test_newer_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create_session(record("s1"))
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()

    store = SqliteSessionStore(path)
    with pytest.raises(SchemaVersionError, match=r"schema version 99.*newer accord"):
        await store.__aenter__()
    # The refusal changed nothing, and a later call fails the same way.
    with pytest.raises(SchemaVersionError):
        await store.get_session("s1")
    await store.aclose()
    assert _user_version(path) == 99


async def test_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite3"
    path.write_bytes(b"this is a text file, not SQLite " * 200)
    with pytest.raises(StoreError, match="cannot open") as caught:
        async with SqliteSessionStore(path):
            pass
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


async def test_unopenable_path(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open"):
        async with SqliteSessionStore(tmp_path / "missing-dir" / "s.sqlite3"):
            pass


async def test_two_stores_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    async with SqliteSessionStore(path) as one, SqliteSessionStore(path) as two:
        await one.create_session(record("s1"))
        await two.append_events(events("s1", 1, 3))
        assert len(await one.read_events("s1")) == 3
        got = await one.get_session("s1")
        assert got is not None and got.last_seq == 3


async def test_database_errors_surface_as_store_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "locked.sqlite3"
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_SECONDS", 0.01)
    async with SqliteSessionStore(path) as store:
        await store.create_session(record("s1"))
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            with pytest.raises(StoreError, match="locked") as caught:
                await store.append_events(events("s1", 1, 1))
            assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
            other.execute("ROLLBACK")
        finally:
            other.close()
        # The failed transaction was rolled back; the store carries on.
        await store.append_events(events("s1", 1, 1))
        assert len(await store.read_events("s1")) == 1


async def test_delete_leaves_no_rows_behind(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create_session(record("s1"))
        await store.append_events(events("s1", 1, 5, turn_id="turn-1"))
        await store.fork_session("s1", record("fork"))
        await store.delete_session("s1")
        await store.delete_session("fork")
    db = sqlite3.connect(path)
    try:
        counts = [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in _TABLES]
    finally:
        db.close()
    assert counts == [0, 0, 0]


async def test_event_rows_hold_numbers_for_repeated_strings(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create_session(record("s1"))
        for first in range(1, 100, 10):
            await store.append_events(events("s1", first, 10, turn_id="turn-1"))
    db = sqlite3.connect(path)
    try:
        labels = db.execute("SELECT label, text FROM labels ORDER BY label").fetchall()
        kinds = db.execute("SELECT DISTINCT typeof(turn), typeof(kind) FROM events").fetchall()
    finally:
        db.close()
    assert labels == [(1, "turn-1"), (2, "root"), (3, "text_chunk"), (4, "transcript")]
    assert kinds == [("integer", "integer")]


_TABLES = ("sessions", "labels", "events")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
async def test_existing_file_keeps_its_permissions(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    path.touch(mode=0o640)
    os.chmod(path, 0o640)
    async with SqliteSessionStore(path) as store:
        await store.create_session(record("s1"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


@contextlib.contextmanager
def write_lock_held(path: Path) -> Iterator[Callable[[], object]]:
    """Hold the file's write lock on a connection of its own, as another process would;
    yields what lets it go (the lock is let go on leaving in any case)."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield lambda: other.execute("COMMIT")
    finally:
        other.close()


async def test_listing_does_not_wait_behind_a_write_that_waits_for_the_lock(
    tmp_path: Path,
) -> None:
    # What made session/list slow under load (issue 12, the soak): every call queued on the
    # one connection, so a listing waited for every write before it. Here the write waits for
    # another process's lock (up to the busy timeout); the listing must not wait for it.
    path = tmp_path / "sessions.sqlite3"
    now = datetime.now(UTC)
    async with SqliteSessionStore(path) as store:
        await store.create_session(
            SessionRecord(session_id="listed", cwd="/w", created_at=now, updated_at=now)
        )
        with write_lock_held(path) as release:
            async with anyio.create_task_group() as tg:
                write_done = anyio.Event()

                async def write() -> None:
                    record = SessionRecord(
                        session_id="late", cwd="/w", created_at=now, updated_at=now
                    )
                    await store.create_session(record)
                    write_done.set()

                tg.start_soon(write)
                await anyio.wait_all_tasks_blocked()  # the write is in its worker thread
                page = await store.list_sessions()
                assert [s.session_id for s in page.sessions] == ["listed"]
                assert not write_done.is_set(), "the listing waited for the write"
                release()  # the lock is free: the write goes through
        assert {s.session_id for s in (await store.list_sessions()).sessions} == {
            "listed",
            "late",
        }


async def test_a_listing_runs_on_the_loop_and_waits_for_a_busy_file_in_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listings run on the event loop's thread with a busy timeout of zero (issue 12, the
    # soak: the worker-thread hop cost four to five turns of a saturated loop). When SQLite
    # answers "busy" there (another connection recovering or resetting the log, which a test
    # cannot bring about on demand: the answer is injected), the listing is not an error: it
    # is read again in a worker thread, which waits for the lock.
    path = tmp_path / "sessions.sqlite3"
    now = datetime.now(UTC)
    threads: list[bool] = []  # per query: on the main (event loop) thread?
    real_list_page = sqlite_store.ops.list_page
    busy = [False]

    def list_page(*args: Any) -> Any:
        on_loop = threading.current_thread() is threading.main_thread()
        threads.append(on_loop)
        if on_loop and busy[0]:
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = sqlite3.SQLITE_BUSY
            raise error
        return real_list_page(*args)

    monkeypatch.setattr(sqlite_store.ops, "list_page", list_page)
    async with SqliteSessionStore(path) as store:
        await store.create_session(
            SessionRecord(session_id="listed", cwd="/w", created_at=now, updated_at=now)
        )
        assert [s.session_id for s in (await store.list_sessions()).sessions] == ["listed"]
        assert threads == [True]
        busy[0] = True
        assert [s.session_id for s in (await store.list_sessions()).sessions] == ["listed"]
        assert threads == [True, True, False]


def _record_append_threads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Patch the store's append so that each call records whether it ran on the loop's thread
    (the main thread here); returns that record."""
    on_loop: list[bool] = []
    real_append = sqlite_store.ops.append

    def append(db: sqlite3.Connection, batch: Any) -> None:
        on_loop.append(threading.current_thread() is threading.main_thread())
        real_append(db, batch)

    monkeypatch.setattr(sqlite_store.ops, "append", append)
    return on_loop


async def test_small_appends_commit_on_the_loop_and_large_ones_in_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 9 (pydantic-ai through accord): the hop to a worker thread per streamed chunk was
    # the whole gap to pydantic-ai alone, so a small append commits on the loop's thread. What
    # could block the loop stays in a worker: large batches, and every so often an append on
    # the connection that runs SQLite's automatic checkpoint.
    on_loop = _record_append_threads(monkeypatch)
    path = tmp_path / "sessions.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create_session(record("s"))
        await store.append_events(events("s", 1, 1))  # opens the loop's connection
        await store.append_events(events("s", 2, 1))
        await store.append_events(events("s", 3, sqlite_store.INLINE_APPEND_MAX_EVENTS))
        seq = 3 + sqlite_store.INLINE_APPEND_MAX_EVENTS
        await store.append_events(events("s", seq, sqlite_store.INLINE_APPEND_MAX_EVENTS + 1))
        seq += sqlite_store.INLINE_APPEND_MAX_EVENTS + 1
        big = replace(
            events("s", seq, 1)[0],
            payload=b'"' + b"x" * sqlite_store.INLINE_APPEND_MAX_BYTES + b'"',
        )
        await store.append_events([big])
        seq += 1
        assert on_loop == [False, True, True, False, False]
        on_loop.clear()
        for _ in range(2 * sqlite_store.INLINE_APPENDS_PER_THREAD_APPEND + 2):
            await store.append_events(events("s", seq, 1))
            seq += 1
        every = sqlite_store.INLINE_APPENDS_PER_THREAD_APPEND
        assert on_loop == ([True] * every + [False]) * 2
        stored = await store.read_events("s", limit=10_000)
        assert [event.seq for event in stored] == list(range(1, seq))
    async with SqliteSessionStore(path) as reopened:  # all of it durable, in order
        assert [event.seq for event in await reopened.read_events("s", limit=10_000)] == list(
            range(1, seq)
        )


@pytest.mark.parametrize("how", ["synchronous full", "in memory"])
async def test_appends_stay_in_a_worker_where_a_commit_could_be_slow_or_private(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With synchronous="full" every commit waits for fsync: never on the loop. An in-memory
    # database is private to its one connection: a second one would be another database.
    on_loop = _record_append_threads(monkeypatch)
    store = (
        SqliteSessionStore(tmp_path / "s.sqlite3", synchronous="full")
        if how == "synchronous full"
        else SqliteSessionStore(":memory:")
    )
    async with store:
        await store.create_session(record("s"))
        for seq in range(1, 6):
            await store.append_events(events("s", seq, 1))
        assert [event.seq for event in await store.read_events("s")] == [1, 2, 3, 4, 5]
    assert on_loop == [False] * 5


async def test_a_small_append_waits_for_a_lock_held_elsewhere_without_blocking_the_loop(
    tmp_path: Path,
) -> None:
    # The loop's connection has a busy timeout of zero: when another process holds the write
    # lock the append is not an error and does not stall the loop; it waits in a worker
    # thread and commits once the lock is free, in order.
    path = tmp_path / "sessions.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create_session(record("s"))
        await store.append_events(events("s", 1, 1))
        await store.append_events(events("s", 2, 1))  # on the loop's connection
        with write_lock_held(path) as release:
            async with anyio.create_task_group() as tg:
                appended = anyio.Event()

                async def append() -> None:
                    await store.append_events(events("s", 3, 2))
                    appended.set()

                started = time.monotonic()
                tg.start_soon(append)
                await anyio.wait_all_tasks_blocked()  # the append waits in its worker thread
                # Had the loop's connection waited for the lock, the loop would have frozen
                # for the whole busy timeout before handing the append to the worker.
                frozen = time.monotonic() - started
                assert frozen < sqlite_store.BUSY_TIMEOUT_SECONDS, f"loop frozen {frozen:.1f} s"
                assert not appended.is_set()
                release()
                with anyio.fail_after(TIMEOUT):
                    await appended.wait()
        assert [event.seq for event in await store.read_events("s")] == [1, 2, 3, 4]


async def test_the_log_stays_short_under_many_small_appends(tmp_path: Path) -> None:
    # The loop's connection never checkpoints (a checkpoint syncs the file: milliseconds);
    # the worker's connection does, every so often. Without that the write-ahead log would
    # grow by a few pages per streamed chunk for as long as the process runs.
    path = tmp_path / "sessions.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create_session(record("s"))
        for seq in range(1, 4001):
            await store.append_events(events("s", seq, 1))
        wal = (await anyio.Path(f"{path}-wal").stat()).st_size
        # SQLite checkpoints once the log passes 1,000 pages of 4 KiB; 4,000 unchecked commits
        # of a few pages each would make it 40 MB and more.
        assert wal < 8 * 1024 * 1024, f"the write-ahead log grew to {wal:,} bytes"
        assert len(await store.read_events("s", limit=5000)) == 4000

"""What only the PostgreSQL store has: migrations, several processes, a server that goes away.

Everything here runs against the real server ``make test`` starts (``tests/helpers/postgres.py``);
the shared contract (``test_store_contract.py``) runs on it too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import replace

import anyio
import psycopg
import pytest
from _store_support import events, record
from helpers.postgres import (
    fresh_schema,
    postgres_url,
    restart_server,
    server_down,
    with_search_path,
)
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.store import (
    EVENTS_CHANNEL,
    EventOrderError,
    PostgresSessionStore,
    SchemaVersionError,
    StoredEvent,
    StoreError,
    StoreUnavailable,
    iter_events,
)
from accord.store._postgres_listen import LISTEN_APPLICATION_NAME
from accord.store._postgres_schema import MIGRATIONS, SCHEMA_VERSION

pytestmark = pytest.mark.anyio


def _schema_versions(url: str) -> list[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [row[0] for row in conn.execute("SELECT version FROM accord_schema ORDER BY 1")]


async def test_new_database_is_migrated_once_and_reopens() -> None:
    with fresh_schema() as url:
        async with PostgresSessionStore(url) as store:
            await store.create_session(record("s1"))
            await store.append_events(events("s1", 1, 3))
        assert _schema_versions(url) == list(range(1, SCHEMA_VERSION + 1))
        async with PostgresSessionStore(url) as again:
            assert [e.seq for e in await again.read_events("s1")] == [1, 2, 3]
        assert _schema_versions(url) == list(range(1, SCHEMA_VERSION + 1))


async def test_newer_database_is_refused_untouched() -> None:
    with fresh_schema() as url:
        async with PostgresSessionStore(url):
            pass
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO accord_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
        with pytest.raises(SchemaVersionError, match="newer than this accord knows"):
            async with PostgresSessionStore(url):
                pass
        assert _schema_versions(url)[-1] == SCHEMA_VERSION + 1


async def test_a_version_1_database_is_migrated_and_keeps_its_sessions() -> None:
    """A database an accord of schema version 1 wrote (events with a foreign key to their
    session) is brought to the current version on start: its sessions and events are all
    there, the foreign key is gone, and deleting a session still deletes its events."""
    with fresh_schema() as url:
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            conn.execute(
                "CREATE TABLE accord_schema (version integer PRIMARY KEY,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for statement in MIGRATIONS[0]:
                conn.execute(statement.encode())
            conn.execute("INSERT INTO accord_schema (version) VALUES (1)")
            conn.execute(
                "INSERT INTO accord_sessions (session_id, cwd, additional_directories,"
                " mcp_servers, created_at, updated_at, epoch, last_seq, state)"
                " VALUES ('old', '/w', '[]', '[]', 0, 0, 0, 2, '{}')"
            )
            for event in events("old", 1, 2):
                conn.execute(
                    "INSERT INTO accord_events (session_id, seq, epoch, turn_id, agent_id,"
                    " kind, layer, payload, created_at)"
                    " VALUES ('old', %s, 0, NULL, 'root', 'text_chunk', 'transcript', %s, 0)",
                    (event.seq, event.payload),
                )
        async with PostgresSessionStore(url) as store:
            assert [e.seq for e in await store.read_events("old")] == [1, 2]
            await store.append_events(events("old", 3, 1))
            assert [e.seq for e in await store.read_events("old")] == [1, 2, 3]
            await store.delete_session("old")
            assert await store.read_events("old") == []
        assert _schema_versions(url) == list(range(1, SCHEMA_VERSION + 1))
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_constraint"
                " WHERE conrelid = 'accord_events'::regclass AND contype = 'f'"
            ).fetchone()
            left = conn.execute("SELECT count(*) FROM accord_events").fetchone()
        assert row is not None and row[0] == 0
        assert left is not None and left[0] == 0


async def test_many_processes_starting_at_once_migrate_once() -> None:
    with fresh_schema() as url:
        stores = [PostgresSessionStore(url) for _ in range(6)]

        async def open_one(store: PostgresSessionStore) -> None:
            await store.__aenter__()

        async with anyio.create_task_group() as tg:
            for store in stores:
                tg.start_soon(open_one, store)
        for store in stores:
            await store.aclose()
        assert _schema_versions(url) == list(range(1, SCHEMA_VERSION + 1))


async def test_unreachable_server_is_one_clear_error_without_the_password() -> None:
    url = "postgresql://accord:s3cret-pw@127.0.0.1:1/nowhere?connect_timeout=1"
    store = PostgresSessionStore(url)
    with pytest.raises(StoreError) as caught:
        await store.get_session("x")
    message = str(caught.value)
    assert "127.0.0.1:1/nowhere" in message
    assert "s3cret-pw" not in message
    assert "s3cret-pw" not in store.where
    await store.aclose()


async def test_two_stores_see_each_others_sessions() -> None:
    with fresh_schema() as url:
        async with PostgresSessionStore(url) as a, PostgresSessionStore(url) as b:
            await a.create_session(record("from-a", updated=1))
            await b.create_session(record("from-b", updated=2))
            await a.append_events(events("from-a", 1, 5))
            listed = await b.list_sessions()
            assert [s.session_id for s in listed.sessions] == ["from-b", "from-a"]
            assert [e.seq for e in await b.read_events("from-a")] == [1, 2, 3, 4, 5]


async def test_conflicting_appends_from_two_stores_keep_one_history() -> None:
    """Two processes appending the same seqs: one wins, the other is refused, never merged."""
    with fresh_schema() as url:
        async with PostgresSessionStore(url) as a, PostgresSessionStore(url) as b:
            await a.create_session(record("s"))
            ours = events("s", 1, 50)
            theirs = [replace(e, payload=b'{"other":true}') for e in events("s", 1, 50)]
            outcomes: list[str] = []

            async def append(store: PostgresSessionStore, batch: list[object], name: str) -> None:
                try:
                    await store.append_events(batch)  # type: ignore[arg-type]
                    outcomes.append(name)
                except EventOrderError:
                    outcomes.append(f"{name} refused")

            async with anyio.create_task_group() as tg:
                tg.start_soon(append, a, ours, "a")
                tg.start_soon(append, b, theirs, "b")
            assert sorted(outcomes) in (["a", "b refused"], ["a refused", "b"])
            stored = [e async for batch in iter_events(a, "s") for e in batch]
            assert [e.seq for e in stored] == list(range(1, 51))
            winner = ours if "a" in outcomes else theirs
            assert [e.payload for e in stored] == [e.payload for e in winner]


async def test_listen_reports_appends_committed_by_another_store() -> None:
    with fresh_schema() as url:
        async with PostgresSessionStore(url) as writer, PostgresSessionStore(url) as watcher:
            await writer.create_session(record("s"))
            await writer.append_events(events("s", 1, 2))  # before listening: not reported
            seen: list[tuple[str, int]] = []
            with anyio.fail_after(TIMEOUT):
                async with watcher.listen() as notes:
                    await writer.append_events(events("s", 3, 2))
                    await writer.append_events(events("s", 5, 3))
                    async for note in notes:
                        seen.append(note)
                        if note[1] == 7:
                            break
            assert seen == [("s", 4), ("s", 7)]


def _listening_since(url: str, since: object) -> int:
    """Listening connections of accord opened on the server since ``since`` (its clock)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = %s AND backend_start >= %s",
            (LISTEN_APPLICATION_NAME, since),
        ).fetchone()
    assert row is not None
    return int(row[0])


async def test_many_followers_share_one_listening_connection_and_all_wake() -> None:
    """100 followers of 10 sessions in one store: one listening connection between them, and
    another process's appends wake every one (the poll is an hour: only NOTIFY can)."""
    with fresh_schema() as url:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT now()").fetchone()
        assert row is not None
        started = row[0]
        sessions = [f"s{index}" for index in range(10)]
        async with (
            PostgresSessionStore(url, follow_poll_seconds=3600) as here,
            PostgresSessionStore(url) as elsewhere,
        ):
            for session_id in sessions:
                await elsewhere.create_session(record(session_id))
                await elsewhere.append_events(events(session_id, 1, 1))
            received: dict[int, list[int]] = {}
            first_reads = anyio.Semaphore(0)

            async def follower(index: int, session_id: str) -> None:
                seqs = received.setdefault(index, [])
                async with here.follow_events(session_id) as batches:
                    async for batch in batches:
                        seqs.extend(event.seq for event in batch)
                        if seqs == [1]:
                            first_reads.release()
                        if seqs[-1] == 3:
                            return

            with anyio.fail_after(SCENARIO_TIMEOUT):  # 100 followers on a loaded machine
                async with anyio.create_task_group() as tg:
                    for index in range(100):
                        tg.start_soon(follower, index, sessions[index % 10])
                    for _ in range(100):
                        await first_reads.acquire()
                    assert await anyio.to_thread.run_sync(_listening_since, url, started) == 1
                    for session_id in sessions:
                        await elsewhere.append_events(events(session_id, 2, 2))
            assert received == {index: [1, 2, 3] for index in range(100)}
            assert here.listening_connections_opened == 1
            assert elsewhere.listening_connections_opened == 0
        # Closing the store closed it (the server notices a closed connection shortly after).
        with anyio.fail_after(TIMEOUT):
            while await anyio.to_thread.run_sync(_listening_since, url, started):  # noqa: ASYNC110 - nothing to wait on but the server's view
                await anyio.sleep(0.05)


async def test_database_restart_under_a_running_store_loses_nothing_committed() -> None:
    postgres_url()
    with fresh_schema() as url:
        async with PostgresSessionStore(url) as store:
            await store.create_session(record("s"))
            await store.append_events(events("s", 1, 100))
            await anyio.to_thread.run_sync(restart_server, "immediate")
            # The pool's connections died with the server; the store reconnects by itself, or
            # says clearly what happened, and then carries on.
            errors: list[str] = []
            for _attempt in range(20):
                try:
                    await store.append_events(events("s", 101, 10))
                    break
                except StoreError as error:
                    errors.append(str(error))
                    await anyio.sleep(0.5)
            else:
                pytest.fail(f"the store never recovered after the server restarted: {errors}")
            assert all("PostgreSQL at" in error for error in errors)
            stored = [e.seq async for batch in iter_events(store, "s") for e in batch]
            assert stored == list(range(1, 111))


async def test_a_follower_gets_events_whose_notification_never_came() -> None:
    """Rows committed without a NOTIFY (as if it were lost) still reach the follower."""
    with fresh_schema() as url:
        async with PostgresSessionStore(url, follow_poll_seconds=0.1) as store:
            await store.create_session(record("s"))
            async with store.follow_events("s") as batches:
                with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
                    for event in events("s", 1, 3):
                        conn.execute(
                            "INSERT INTO accord_events (session_id, seq, epoch, turn_id,"
                            " agent_id, kind, layer, payload, created_at)"
                            " VALUES (%s, %s, 0, NULL, 'root', 'text_chunk', 'transcript',"
                            " %s, 0)",
                            ("s", event.seq, event.payload),
                        )
                    conn.execute("UPDATE accord_sessions SET last_seq = 3")
                seqs: list[int] = []
                with anyio.fail_after(TIMEOUT):
                    async for batch in batches:
                        seqs.extend(e.seq for e in batch)
                        if seqs[-1] == 3:
                            break
            assert seqs == [1, 2, 3]


async def test_a_follower_across_a_database_restart_resumes_from_its_cursor() -> None:
    """The server restarts under a follower: the iteration goes on or says so clearly, and
    following again from the last seq received loses and repeats nothing."""
    postgres_url()
    with fresh_schema() as url:
        async with (
            PostgresSessionStore(url, follow_poll_seconds=0.1) as follower,
            PostgresSessionStore(url) as writer,
        ):
            await writer.create_session(record("s"))
            await writer.append_events(events("s", 1, 5))
            seqs: list[int] = []
            errors: list[str] = []
            restarted = False
            with anyio.fail_after(SCENARIO_TIMEOUT):  # the server restarts while the follower polls
                while not seqs or seqs[-1] < 10:
                    cursor = seqs[-1] if seqs else 0
                    try:
                        async with follower.follow_events("s", after_seq=cursor) as batches:
                            async for batch in batches:
                                seqs.extend(e.seq for e in batch)
                                if seqs[-1] == 5 and not restarted:
                                    restarted = True
                                    await anyio.to_thread.run_sync(restart_server, "immediate")
                                    await _append_when_back(writer, events("s", 6, 5))
                                if seqs[-1] == 10:
                                    break
                    except StoreError as error:
                        errors.append(str(error))
                        await anyio.sleep(0.2)
            assert seqs == list(range(1, 11))
            assert all("PostgreSQL at" in error for error in errors)
            assert all("postgres@" not in error for error in errors)


async def test_a_follower_whose_database_is_down_says_so_plainly() -> None:
    """The iteration ends with the store's own clear error, not wrapped in a group."""
    with fresh_schema() as url:
        async with PostgresSessionStore(url, follow_poll_seconds=0.1) as store:
            await store.create_session(record("s"))
            await store.append_events(events("s", 1, 2))
            async with store.follow_events("s") as batches:
                first = await anext(aiter(batches))
                assert [e.seq for e in first] == [1, 2]
                with server_down(), pytest.raises(StoreUnavailable) as caught:
                    with anyio.fail_after(TIMEOUT):
                        await anext(aiter(batches))
            assert "PostgreSQL at 127.0.0.1" in str(caught.value)
            assert caught.value.code == -32603
            # Back up: following again from the cursor carries on.
            await _append_when_back(store, events("s", 3, 1))
            async with store.follow_events("s", after_seq=2) as batches:
                assert [e.seq for e in await anext(aiter(batches))] == [3]


async def _append_when_back(store: PostgresSessionStore, batch: list[StoredEvent]) -> None:
    for _attempt in range(60):
        try:
            await store.append_events(batch)
            return
        except StoreError:
            await anyio.sleep(0.5)
    pytest.fail("the database did not come back")


def test_a_killed_process_leaves_only_whole_transactions() -> None:
    """kill -9 of a process in the middle of its appends: every batch is all there or absent."""
    with fresh_schema() as url:
        child = textwrap.dedent(
            f"""
            import anyio, sys
            sys.path.insert(0, {os.path.dirname(__file__)!r})
            from _store_support import events, record
            from accord.store import PostgresSessionStore

            async def main():
                async with PostgresSessionStore({url!r}) as store:
                    await store.create_session(record("s"))
                    seq = 1
                    while True:
                        await store.append_events(events("s", seq, 25))
                        seq += 25
                        if seq == 501:
                            print("ready", flush=True)

            anyio.run(main)
            """
        )
        process = subprocess.Popen(
            [sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, env=os.environ
        )
        try:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        finally:
            process.kill()
            process.wait(timeout=TIMEOUT)
        with psycopg.connect(url, autocommit=True) as conn:
            seqs = [row[0] for row in conn.execute("SELECT seq FROM accord_events ORDER BY seq")]
            (last_seq,) = conn.execute("SELECT last_seq FROM accord_sessions").fetchone() or (0,)
        assert len(seqs) >= 500
        assert len(seqs) % 25 == 0
        assert seqs == list(range(1, len(seqs) + 1))
        assert last_seq == len(seqs)


def test_search_path_url_helper() -> None:
    assert (
        with_search_path("postgresql://h/db", "x") == "postgresql://h/db?options=-csearch_path%3Dx"
    )
    assert with_search_path("postgresql://h/db?a=1", "x").endswith("&options=-csearch_path%3Dx")


def test_events_channel_name_is_stable() -> None:
    assert EVENTS_CHANNEL == "accord_events"

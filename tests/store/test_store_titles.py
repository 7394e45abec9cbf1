"""Who set a session's title (``title_by_client``) in every store: a generated title
(``set_engine_title``) never replaces one a client set, also from another store object on the
same database; and the migrations that add the flag to SQLite files and PostgreSQL databases
written before it existed."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from _store_support import record
from helpers.postgres import fresh_schema

import accord.store._schema as sqlite_schema
from accord.store import PostgresSessionStore, SessionStore, SqliteSessionStore, UnknownSession
from accord.store._postgres_schema import MIGRATIONS as POSTGRES_MIGRATIONS
from accord.store._postgres_schema import SCHEMA_VERSION as POSTGRES_VERSION

pytestmark = pytest.mark.anyio


async def _title(store: SessionStore, session_id: str) -> tuple[str | None, bool]:
    got = await store.get_session(session_id)
    assert got is not None
    return got.title, got.title_by_client


async def test_a_generated_title_is_stored_until_a_client_sets_one(store: SessionStore) -> None:
    await store.create_session(record("s"))
    assert await _title(store, "s") == (None, False)
    assert await store.set_engine_title("s", "Generated") is True
    assert await _title(store, "s") == ("Generated", False)
    updated = await store.update_session("s", title="Mine", title_by_client=True)
    assert (updated.title, updated.title_by_client) == ("Mine", True)
    assert await store.set_engine_title("s", "Generated again") is False
    assert await store.set_engine_title("s", None) is False  # nor cleared
    assert await _title(store, "s") == ("Mine", True)
    # A client's title always wins, and other writes leave the flag alone.
    await store.update_session("s", title="Mine again", title_by_client=True)
    await store.update_session("s", state={"k": 1}, archived=True)
    assert await _title(store, "s") == ("Mine again", True)
    listed = (await store.list_sessions()).sessions
    assert [(s.session_id, s.title) for s in listed] == [("s", "Mine again")]
    with pytest.raises(UnknownSession):
        await store.set_engine_title("missing", "x")


async def test_a_client_title_set_through_another_store_object_holds(
    store_pair: tuple[SessionStore, SessionStore],
) -> None:
    first, second = store_pair
    await first.create_session(record("s", title="Old"))
    await second.update_session("s", title="From elsewhere", title_by_client=True)
    assert await first.set_engine_title("s", "Generated here") is False
    assert await _title(first, "s") == ("From elsewhere", True)


async def test_a_fork_and_a_new_record_take_the_flag_as_given(store: SessionStore) -> None:
    await store.create_session(replace(record("src", title="Mine"), title_by_client=True))
    assert await _title(store, "src") == ("Mine", True)
    fork = await store.fork_session(
        "src", replace(record("fork", title="Mine"), title_by_client=True)
    )
    assert (fork.title, fork.title_by_client) == ("Mine", True)
    plain = await store.fork_session("src", record("plain", title="Mine"))
    assert not plain.title_by_client
    assert await store.set_engine_title("plain", "Generated") is True
    assert await _title(store, "src") == ("Mine", True)


def _write_v3_file(path: Path) -> None:
    """A file as the schema of version 3 left it, with one titled session in it."""
    db = sqlite3.connect(path, isolation_level=None)
    sqlite_schema.migrate(db, sqlite_schema.MIGRATIONS[:3])
    db.execute(
        "INSERT INTO sessions (session_id, cwd, additional_directories, mcp_servers, title,"
        " created_at, updated_at, epoch, last_seq, state, archived)"
        " VALUES ('old', '/w', '[]', '[]', 'Old', 0, 0, 0, 0, '{}', 1)"
    )
    db.close()


async def test_a_version_3_sqlite_file_gets_the_flag_unset(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite3"
    _write_v3_file(path)
    async with SqliteSessionStore(path) as store:
        old = await store.get_session("old")
        assert (
            old is not None
            and old.archived
            and (old.title, old.title_by_client)
            == (
                "Old",
                False,
            )
        )
        assert await store.set_engine_title("old", "Generated") is True
        await store.update_session("old", title="Mine", title_by_client=True)
        assert await store.set_engine_title("old", "Generated") is False
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 4
        assert len(sqlite_schema.MIGRATIONS) == 4
    finally:
        db.close()


async def test_a_version_3_postgres_database_gets_the_flag_unset() -> None:
    with fresh_schema() as url:
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            conn.execute(
                "CREATE TABLE accord_schema (version integer PRIMARY KEY,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for version in (1, 2, 3):
                for statement in POSTGRES_MIGRATIONS[version - 1]:
                    conn.execute(statement.encode())
                conn.execute("INSERT INTO accord_schema (version) VALUES (%s)", (version,))
            conn.execute(
                "INSERT INTO accord_sessions (session_id, cwd, additional_directories,"
                " mcp_servers, title, created_at, updated_at, epoch, last_seq, state, archived)"
                " VALUES ('old', '/w', '[]', '[]', 'Old', 0, 0, 0, 0, '{}', true)"
            )
        async with PostgresSessionStore(url) as store:
            old = await store.get_session("old")
            assert old is not None and old.archived
            assert (old.title, old.title_by_client) == ("Old", False)
            assert await store.set_engine_title("old", "Generated") is True
            await store.update_session("old", title="Mine", title_by_client=True)
            assert await store.set_engine_title("old", "Generated") is False
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT max(version) FROM accord_schema").fetchone()
        assert row is not None and row[0] == POSTGRES_VERSION == 4

"""The archive flag (ACP ``session/archive``) in every store, and the migrations that add it to
SQLite files and PostgreSQL databases written before it existed."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from _store_support import record
from helpers.postgres import fresh_schema

import accord.store._schema as sqlite_schema
from accord.store import ArchiveFilter, PostgresSessionStore, SessionStore, SqliteSessionStore
from accord.store._postgres_schema import MIGRATIONS as POSTGRES_MIGRATIONS
from accord.store._postgres_schema import SCHEMA_VERSION as POSTGRES_VERSION

pytestmark = pytest.mark.anyio


async def _ids(
    store: SessionStore, archived: ArchiveFilter, *, cwd: str | None = None, limit: int = 2
) -> list[str]:
    """Every listed id, page after page (the same filter with each cursor)."""
    found: list[str] = []
    cursor: str | None = None
    while True:
        page = await store.list_sessions(cwd=cwd, cursor=cursor, limit=limit, archived=archived)
        found.extend(s.session_id for s in page.sessions)
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


async def test_the_flag_is_stored_updated_listed_and_filtered_before_paging(
    store: SessionStore,
) -> None:
    for n in range(6):
        await store.create_session(record(f"s{n}", updated=n, cwd="/a" if n % 2 else "/b"))
    await store.create_session(replace(record("born-archived", updated=9), archived=True))
    got = await store.get_session("born-archived")
    assert got is not None and got.archived
    assert not (await store.update_session("s4", title="kept")).archived
    for session_id in ("s1", "s4"):
        updated = await store.update_session(session_id, archived=True)
        assert updated.archived and updated.title == ("kept" if session_id == "s4" else None)

    everything = ["born-archived", "s5", "s4", "s3", "s2", "s1", "s0"]
    assert await _ids(store, "include") == everything
    assert await _ids(store, "exclude") == ["s5", "s3", "s2", "s0"]
    assert await _ids(store, "only") == ["born-archived", "s4", "s1"]
    assert await _ids(store, "exclude", cwd="/a") == ["s5", "s3"]
    assert await _ids(store, "only", cwd="/a") == ["s1"]
    page = await store.list_sessions()  # the default is every session, flag shown
    assert {s.session_id: s.archived for s in page.sessions} == {
        session_id: session_id in ("born-archived", "s4", "s1") for session_id in everything
    }

    unarchived = await store.update_session("s4", archived=False)
    assert not unarchived.archived and unarchived.title == "kept"
    assert await _ids(store, "only") == ["born-archived", "s1"]


async def test_a_fork_takes_its_flag_from_the_new_record(store: SessionStore) -> None:
    await store.create_session(replace(record("src"), archived=True))
    fork = await store.fork_session("src", record("fork"))
    assert not fork.archived
    source = await store.get_session("src")
    assert source is not None and source.archived


def _write_v2_file(path: Path) -> None:
    """A file as the schema of version 2 left it, with one session in it."""
    db = sqlite3.connect(path, isolation_level=None)
    sqlite_schema.migrate(db, sqlite_schema.MIGRATIONS[:2])
    db.execute(
        "INSERT INTO sessions (session_id, cwd, additional_directories, mcp_servers, title,"
        " created_at, updated_at, epoch, last_seq, state)"
        " VALUES ('old', '/w', '[]', '[]', 'Old', 0, 0, 0, 0, '{}')"
    )
    db.close()


async def test_a_version_2_sqlite_file_gets_the_flag_unset(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite3"
    _write_v2_file(path)
    async with SqliteSessionStore(path) as store:
        old = await store.get_session("old")
        assert old is not None and not old.archived and old.title == "Old"
        await store.update_session("old", archived=True)
        assert [s.session_id for s in (await store.list_sessions(archived="only")).sessions] == [
            "old"
        ]
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(sqlite_schema.MIGRATIONS)
    finally:
        db.close()


async def test_a_version_2_postgres_database_gets_the_flag_unset() -> None:
    with fresh_schema() as url:
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            conn.execute(
                "CREATE TABLE accord_schema (version integer PRIMARY KEY,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for version in (1, 2):
                for statement in POSTGRES_MIGRATIONS[version - 1]:
                    conn.execute(statement.encode())
                conn.execute("INSERT INTO accord_schema (version) VALUES (%s)", (version,))
            conn.execute(
                "INSERT INTO accord_sessions (session_id, cwd, additional_directories,"
                " mcp_servers, title, created_at, updated_at, epoch, last_seq, state)"
                " VALUES ('old', '/w', '[]', '[]', 'Old', 0, 0, 0, 0, '{}')"
            )
        async with PostgresSessionStore(url) as store:
            old = await store.get_session("old")
            assert old is not None and not old.archived and old.title == "Old"
            await store.update_session("old", archived=True)
            only = await store.list_sessions(archived="only")
            assert [s.session_id for s in only.sessions] == ["old"]
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT max(version) FROM accord_schema").fetchone()
        assert row is not None and row[0] == POSTGRES_VERSION

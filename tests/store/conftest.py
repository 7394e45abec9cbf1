"""Fixtures for the session-store tests: every store implementation.

PostgreSQL runs on the real server ``make test`` starts (``tests/pg_support.py``), in a fresh
schema per test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pg_support import fresh_schema

from accord.store import MemorySessionStore, PostgresSessionStore, SessionStore, SqliteSessionStore

STORE_KINDS = ("memory", "sqlite", "postgres")


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    """An open, empty store of each kind (SQLite on a real file, PostgreSQL on a real server)."""
    kind: str = request.param
    if kind == "postgres":
        with fresh_schema() as url:
            async with PostgresSessionStore(url) as opened:
                yield opened
        return
    opened: SessionStore
    if kind == "memory":
        opened = MemorySessionStore()
    else:
        opened = SqliteSessionStore(tmp_path / "sessions.sqlite3")
    async with opened:
        yield opened


@pytest.fixture(params=STORE_KINDS)
async def store_pair(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[SessionStore, SessionStore]]:
    """Two open store objects on one database, standing for two processes sharing it (for the
    memory store, which no other process can share, the same object twice)."""
    kind: str = request.param
    if kind == "postgres":
        with fresh_schema() as url:
            async with (
                PostgresSessionStore(url, follow_poll_seconds=0.2) as first,
                PostgresSessionStore(url, follow_poll_seconds=0.2) as second,
            ):
                yield first, second
        return
    if kind == "memory":
        async with MemorySessionStore() as only:
            yield only, only
        return
    path = tmp_path / "sessions.sqlite3"
    async with SqliteSessionStore(path) as first, SqliteSessionStore(path) as second:
        yield first, second

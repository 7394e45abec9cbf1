"""Fixtures for the agent-runtime tests: the session stores.

(Every message on the wire is schema-checked by the suite-wide ``tests/conftest.py``.)
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
from pg_support import fresh_schema

from accord.store import MemorySessionStore, PostgresSessionStore, SessionStore, SqliteSessionStore


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncGenerator[SessionStore]:
    """An open, empty store of each kind (SQLite on a real file, PostgreSQL on a real server)."""
    if request.param == "postgres":
        with fresh_schema() as url:
            async with PostgresSessionStore(url) as postgres:
                yield postgres
        return
    opened: SessionStore = (
        MemorySessionStore()
        if request.param == "memory"
        else SqliteSessionStore(tmp_path / "sessions.sqlite3")
    )
    async with opened:
        yield opened


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def shared_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncGenerator[tuple[SessionStore, SessionStore]]:
    """Two open store objects on one database, for two runtimes standing for two server
    processes (memory, which no other process can share: the same object twice)."""
    if request.param == "postgres":
        with fresh_schema() as url:
            async with (
                PostgresSessionStore(url, follow_poll_seconds=0.2) as first,
                PostgresSessionStore(url, follow_poll_seconds=0.2) as second,
            ):
                yield first, second
        return
    if request.param == "memory":
        async with MemorySessionStore() as only:
            yield only, only
        return
    path = tmp_path / "sessions.sqlite3"
    async with SqliteSessionStore(path) as first, SqliteSessionStore(path) as second:
        yield first, second

"""Every session store kind, opened for a test: memory, SQLite on a real file, PostgreSQL.

PostgreSQL runs on the real server of the run (:mod:`helpers.postgres`), in a fresh schema per
use. The directories that test against every store (``tests/store``, ``tests/agent``) make
their ``store`` fixtures from :func:`open_store` and :func:`open_store_pair`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from accord.store import MemorySessionStore, PostgresSessionStore, SessionStore, SqliteSessionStore
from helpers.postgres import fresh_schema

STORE_KINDS = ("memory", "sqlite", "postgres")
"""The store kinds, as fixture parameters."""

#: How often a PostgreSQL store polls for another process's events while it follows them.
FOLLOW_POLL_SECONDS = 0.2


@asynccontextmanager
async def open_store(kind: str, directory: Path) -> AsyncIterator[SessionStore]:
    """An open, empty store of ``kind`` (SQLite in ``directory``); closed afterwards."""
    if kind == "postgres":
        with fresh_schema() as url:
            async with PostgresSessionStore(url) as opened:
                yield opened
        return
    store: SessionStore = (
        MemorySessionStore()
        if kind == "memory"
        else SqliteSessionStore(directory / "sessions.sqlite3")
    )
    async with store:
        yield store


@asynccontextmanager
async def open_store_pair(
    kind: str, directory: Path
) -> AsyncIterator[tuple[SessionStore, SessionStore]]:
    """Two open store objects on one database, standing for two processes sharing it (for the
    memory store, which no other process can share, the same object twice)."""
    if kind == "postgres":
        with fresh_schema() as url:
            async with (
                PostgresSessionStore(url, follow_poll_seconds=FOLLOW_POLL_SECONDS) as first,
                PostgresSessionStore(url, follow_poll_seconds=FOLLOW_POLL_SECONDS) as second,
            ):
                yield first, second
        return
    if kind == "memory":
        async with MemorySessionStore() as only:
            yield only, only
        return
    path = directory / "sessions.sqlite3"
    async with SqliteSessionStore(path) as first, SqliteSessionStore(path) as second:
        yield first, second

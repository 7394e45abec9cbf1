"""Fixtures for the session-store tests: both anyio backends, and every store implementation.

A new store (PostgreSQL) joins the shared suite by adding itself to ``STORE_KINDS`` and
``store``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from accord.store import MemorySessionStore, SessionStore, SqliteSessionStore

STORE_KINDS = ("memory", "sqlite")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every async test of this package on asyncio and on trio."""
    return request.param


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    """An open, empty store of each kind (SQLite on a real file)."""
    kind: str = request.param
    opened: SessionStore
    if kind == "memory":
        opened = MemorySessionStore()
    else:
        opened = SqliteSessionStore(tmp_path / "sessions.sqlite3")
    async with opened:
        yield opened

"""Fixtures for the agent-runtime tests: both anyio backends.

(Every message on the wire is schema-checked by the suite-wide ``tests/conftest.py``.)
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from accord.store import MemorySessionStore, SessionStore, SqliteSessionStore


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every async test of this package on asyncio and on trio."""
    return request.param


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncGenerator[SessionStore]:
    """An open, empty store of each kind (SQLite on a real file)."""
    opened: SessionStore = (
        MemorySessionStore()
        if request.param == "memory"
        else SqliteSessionStore(tmp_path / "sessions.sqlite3")
    )
    async with opened:
        yield opened

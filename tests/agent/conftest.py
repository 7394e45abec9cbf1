"""Fixtures for the agent-runtime tests: the session stores (``helpers.stores``).

(Every message on the wire is schema-checked by the suite-wide ``tests/conftest.py``.)
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import pytest
from helpers.stores import STORE_KINDS, open_store, open_store_pair

from accord.store import SessionStore


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncGenerator[SessionStore]:
    """An open, empty store of each kind (SQLite on a real file, PostgreSQL on a real server)."""
    async with open_store(request.param, tmp_path) as opened:
        yield opened


@pytest.fixture(params=STORE_KINDS)
async def shared_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncGenerator[tuple[SessionStore, SessionStore]]:
    """Two open store objects on one database, for two runtimes standing for two server
    processes (memory, which no other process can share: the same object twice)."""
    async with open_store_pair(request.param, tmp_path) as pair:
        yield pair

"""Fixtures for the session-store tests: every store implementation (``helpers.stores``).

PostgreSQL runs on the real server ``make test`` starts (``tests/helpers/postgres.py``), in a
fresh schema per test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from helpers.stores import STORE_KINDS, open_store, open_store_pair

from accord.store import SessionStore


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    """An open, empty store of each kind (SQLite on a real file, PostgreSQL on a real server)."""
    async with open_store(request.param, tmp_path) as opened:
        yield opened


@pytest.fixture(params=STORE_KINDS)
async def store_pair(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[SessionStore, SessionStore]]:
    """Two open store objects on one database, standing for two processes sharing it (for the
    memory store, which no other process can share, the same object twice)."""
    async with open_store_pair(request.param, tmp_path) as pair:
        yield pair

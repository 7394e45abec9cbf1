"""Fixtures for the typed-role tests: both anyio backends."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every async test of this package on asyncio and on trio."""
    return request.param

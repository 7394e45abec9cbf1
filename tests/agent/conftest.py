"""Fixtures for the agent-runtime tests: both anyio backends.

(Every message on the wire is schema-checked by the suite-wide ``tests/conftest.py``.)
"""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every async test of this package on asyncio and on trio."""
    return request.param

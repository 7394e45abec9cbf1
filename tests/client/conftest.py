"""Fixtures for the client library tests: a wire-level agent."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from _client_agents import WireAgent

from accord.transports import memory_transport_pair


@pytest.fixture
async def wire() -> AsyncIterator[WireAgent]:
    """A scripted wire-level agent; hand ``wire.client_end`` to ``connect``."""
    client_end, agent_end = memory_transport_pair()
    yield WireAgent(agent_end, client_end)
    await agent_end.aclose()
    await client_end.aclose()

"""Activation announcements: the updates an accord agent says follow an opening response.

``session/new`` (and load, resume, fork) of an accord agent says in
``_meta.accord.announcements`` how many updates follow the response (its command list and
title, each marked ``_meta.accord.announcement``); the client opens the session once they are
in. These tests pin that they are counted however they arrive (before the session is known,
in the early buffer, or after, through the fast path of ``session/update``), so nothing waits
for the bound, and that announcements which never come are reported as a warning.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from _client_agents import WireAgent
from helpers.timeouts import TIMEOUT

import accord.client._session as client_session
from accord.agent import AgentRuntime
from accord.client import ConnectedAgent, connect
from accord.engines import EngineCapabilities
from accord.errors import SessionNotFound
from accord.schema import AvailableCommand
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine

pytestmark = pytest.mark.anyio

_MARK = {"accord": {"announcement": True}}
_MISSING = "did not arrive"


@pytest.fixture
def unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """No bound worth reaching: a session that waits for its announcements hangs the test."""
    monkeypatch.setattr(client_session, "ANNOUNCEMENT_TIMEOUT", 3600.0)


def _commands() -> dict[str, Any]:
    return {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [{"name": "help", "description": "Help"}],
        "_meta": _MARK,
    }


def _title() -> dict[str, Any]:
    return {"sessionUpdate": "session_info_update", "title": "T", "_meta": _MARK}


async def _registered(holder: list[ConnectedAgent], session_id: str) -> None:
    """Wait (yielding, not sleeping) until the client knows ``session_id``."""
    with anyio.fail_after(TIMEOUT):
        while True:
            if holder:
                try:
                    holder[0].session(session_id)
                except SessionNotFound:
                    pass
                else:
                    return
            await anyio.lowlevel.checkpoint()


@pytest.mark.usefixtures("unbounded")
async def test_announcements_after_the_session_is_known_are_counted(
    wire: WireAgent, caplog: pytest.LogCaptureFixture
) -> None:
    holder: list[ConnectedAgent] = []

    async def agent_side() -> None:
        initialize = await wire.expect("initialize")
        await wire.reply(initialize, {"protocolVersion": 1, "agentCapabilities": {}})
        new = await wire.expect("session/new")
        await wire.reply(new, {"sessionId": "s1", "_meta": {"accord": {"announcements": 2}}})
        await _registered(holder, "s1")  # the client routes the rest through its fast path
        await wire.update("s1", _commands())
        await wire.update("s1", _title())

    with caplog.at_level(logging.INFO, logger="accord.client"):
        async with wire.playing(agent_side):
            with anyio.fail_after(TIMEOUT):
                async with connect(wire.client_end) as conn:
                    holder.append(conn)
                    session = await conn.new_session("/")
    assert [c.name for c in session.view.available_commands] == ["help"]
    assert session.view.title == "T"
    assert not [r for r in caplog.records if _MISSING in r.getMessage()]


@pytest.mark.usefixtures("unbounded")
async def test_announcements_sent_with_the_response_are_counted(
    wire: WireAgent, caplog: pytest.LogCaptureFixture
) -> None:
    async def agent_side() -> None:
        initialize = await wire.expect("initialize")
        await wire.reply(initialize, {"protocolVersion": 1, "agentCapabilities": {}})
        new = await wire.expect("session/new")
        await wire.reply(new, {"sessionId": "s1", "_meta": {"accord": {"announcements": 2}}})
        await wire.update("s1", _commands())
        await wire.update("s1", _title())

    with caplog.at_level(logging.INFO, logger="accord.client"):
        async with wire.playing(agent_side):
            with anyio.fail_after(TIMEOUT):
                async with connect(wire.client_end) as conn:
                    session = await conn.new_session("/")
    assert session.view.title == "T"
    assert not [r for r in caplog.records if _MISSING in r.getMessage()]


@pytest.mark.usefixtures("unbounded")
async def test_the_in_process_agent_s_announcements_are_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = ScriptedEngine(
        capabilities=EngineCapabilities(
            commands=(AvailableCommand(name="plan", description="Plan first"),)
        )
    )
    runtime = AgentRuntime(engine, store=MemorySessionStore())
    with caplog.at_level(logging.INFO, logger="accord.client"):
        with anyio.fail_after(TIMEOUT):
            async with connect(runtime) as conn:
                session = await conn.new_session("/")
                forked = await conn.fork_session(session.session_id)
    for opened in (session, forked):
        assert [c.name for c in opened.view.available_commands] == ["plan"]
    assert not [r for r in caplog.records if _MISSING in r.getMessage()]


async def test_announcements_that_never_come_are_a_warning(
    wire: WireAgent, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_session, "ANNOUNCEMENT_TIMEOUT", 0.05)

    async def agent_side() -> None:
        initialize = await wire.expect("initialize")
        await wire.reply(initialize, {"protocolVersion": 1, "agentCapabilities": {}})
        new = await wire.expect("session/new")
        await wire.reply(new, {"sessionId": "s1", "_meta": {"accord": {"announcements": 2}}})
        await wire.update("s1", _commands())  # and never the second

    with caplog.at_level(logging.INFO, logger="accord.client"):
        async with wire.playing(agent_side):
            with anyio.fail_after(TIMEOUT):
                async with connect(wire.client_end) as conn:
                    session = await conn.new_session("/")
    assert [c.name for c in session.view.available_commands] == ["help"]
    (record,) = [r for r in caplog.records if _MISSING in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert "announced 2 updates" in record.getMessage()

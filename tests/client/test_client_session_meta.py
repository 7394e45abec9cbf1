"""``ConnectedAgent``'s calls on a session's standing (unstable ``session/set_title``,
``session/status``) against accord's runtime, and refused before sending to an agent that
did not advertise them."""

from __future__ import annotations

from pathlib import Path

import pytest
from _client_agents import ScriptedAgent

from accord.agent import AgentRuntime
from accord.client import connect
from accord.errors import LocalProtocolError, RequestError
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, SetTitle

pytestmark = pytest.mark.anyio


def _runtime(store: MemorySessionStore) -> AgentRuntime:
    engine = ScriptedEngine([[Say("hi"), SetTitle("From the engine")], [Say("more")]])
    return AgentRuntime(engine, store=store)


async def test_the_view_shows_the_title_set_and_status_tells_open_from_saved(
    tmp_path: Path,
) -> None:
    store = MemorySessionStore()
    async with connect(_runtime(store), cwd=tmp_path) as connection:
        assert connection.supports("sessionCapabilities", "title")
        assert connection.supports("sessionCapabilities", "status")
        session = await connection.new_session(tmp_path)
        await session.prompt("hello")
        assert session.view.title == "From the engine"
        assert await connection.set_session_title(session.session_id, " Mine ") == "Mine"
        assert session.view.title == "Mine"
        assert await connection.session_status(session.session_id) == "open"
        await session.close()
        assert await connection.session_status(session.session_id) == "saved"
        assert await connection.set_session_title(session.session_id, "Closed") == "Closed"
        listed = [info.title async for info in connection.iter_sessions()]
        assert listed == ["Closed"]
        with pytest.raises(RequestError) as bad:
            await connection.set_session_title(session.session_id, "a\x1b[2Jb")
        assert bad.value.code == -32602
        with pytest.raises(RequestError) as unknown:
            await connection.session_status("no-such-session")
        assert unknown.value.code == -32002


async def test_an_agent_without_them_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    async with connect(ScriptedAgent(), cwd=tmp_path) as connection:
        assert not connection.supports("sessionCapabilities", "title")
        session = await connection.new_session(tmp_path)
        before = connection.statistics().connection
        with pytest.raises(LocalProtocolError, match=r"sessionCapabilities\.title"):
            await connection.set_session_title(session.session_id, "Title")
        with pytest.raises(LocalProtocolError, match=r"sessionCapabilities\.status"):
            await connection.session_status(session.session_id)
        assert connection.statistics().connection == before
        # Sent all the same, they are answered -32601.
        for method in ("session/set_title", "session/status"):
            with pytest.raises(RequestError) as raw:
                await connection.calls.connection.request(
                    method, {"sessionId": session.session_id, "title": "x"}
                )
            assert raw.value.code == -32601
            assert method in str(raw.value)


async def test_archiving_drops_the_open_session_and_lists_it_only_when_asked(
    tmp_path: Path,
) -> None:
    store = MemorySessionStore()
    async with connect(_runtime(store), cwd=tmp_path) as connection:
        assert connection.supports("sessionCapabilities", "archive")
        session = await connection.new_session(tmp_path)
        await session.prompt("hello")
        await connection.archive_session(session.session_id)
        assert session.view.archived
        assert session.session_id not in connection.sessions
        assert [info async for info in connection.iter_sessions()] == []
        only = [info async for info in connection.iter_sessions(archived="only")]
        assert [(info.session_id, info.archived) for info in only] == [(session.session_id, True)]
        with pytest.raises(RequestError) as refused:
            await connection.resume_session(session.session_id, cwd=tmp_path)
        assert refused.value.code == -32602
        await connection.unarchive_session(session.session_id)
        listed = [info async for info in connection.iter_sessions()]
        assert [(info.session_id, info.archived) for info in listed] == [
            (session.session_id, False)
        ]
        resumed = await connection.resume_session(session.session_id, cwd=tmp_path)
        assert (await resumed.prompt("again")).stop_reason == "end_turn"


async def test_archive_calls_to_an_agent_without_them_are_refused_locally(
    tmp_path: Path,
) -> None:
    async with connect(ScriptedAgent(), cwd=tmp_path) as connection:
        before = connection.statistics().connection
        with pytest.raises(LocalProtocolError, match=r"sessionCapabilities\.archive"):
            await connection.archive_session("s")
        with pytest.raises(LocalProtocolError, match=r"sessionCapabilities\.archive"):
            await connection.unarchive_session("s")
        with pytest.raises(LocalProtocolError, match=r"sessionCapabilities\.archive"):
            await connection.list_sessions(archived="include")
        assert connection.statistics().connection == before
        for method in ("session/archive", "session/unarchive"):
            with pytest.raises(RequestError) as raw:
                await connection.calls.connection.request(method, {"sessionId": "s"})
            assert raw.value.code == -32601

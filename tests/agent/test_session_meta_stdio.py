"""The unstable session methods end to end: a real agent process (``_agent_over_stdio.py``:
``AgentRuntime`` on SQLite, over stdio), retitled and archived, then a second process on the
same database that still sees both; and a title one process sets while another holds the
session live, which that one's saves and generated titles leave alone."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from _agent_support import CWD, RecordingClient, text
from helpers.processes import child_env
from helpers.timeouts import SCENARIO_TIMEOUT

from accord.errors import RequestError
from accord.roles import ClientSideConnection
from accord.schema import (
    ArchiveSessionRequest,
    InitializeRequest,
    ListSessionsRequest,
    NewSessionRequest,
    PromptRequest,
    ResumeSessionRequest,
    SessionStatusRequest,
    SetSessionTitleRequest,
    UnarchiveSessionRequest,
)
from accord.transports import spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

_AGENT = Path(__file__).with_name("_agent_over_stdio.py")


async def test_a_title_and_an_archive_set_in_one_process_hold_in_the_next(
    tmp_path: Path,
) -> None:
    database = tmp_path / "sessions.sqlite3"
    command = [sys.executable, str(_AGENT), str(database)]
    with anyio.fail_after(SCENARIO_TIMEOUT):
        async with (
            spawn_agent(command, env=child_env(_AGENT)) as transport,
            ClientSideConnection(RecordingClient(), transport) as conn,
        ):
            await conn.initialize(InitializeRequest(protocol_version=1))
            session_id = (
                await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
            ).session_id
            await conn.prompt(PromptRequest(session_id=session_id, prompt=text("hello")))
            titled = SetSessionTitleRequest(session_id=session_id, title="Over stdio")
            assert (await conn.set_session_title(titled)).title == "Over stdio"
            await conn.archive_session(ArchiveSessionRequest(session_id=session_id))
        async with (
            spawn_agent(command, env=child_env(_AGENT)) as transport,
            ClientSideConnection(RecordingClient(), transport) as conn,
        ):
            await conn.initialize(InitializeRequest(protocol_version=1))
            status = await conn.session_status(SessionStatusRequest(session_id=session_id))
            assert status.status == "saved"
            assert (status.meta or {})["accord"]["archived"] is True
            assert (await conn.list_sessions(ListSessionsRequest())).sessions == []
            only = await conn.list_sessions(ListSessionsRequest(archived="only"))
            assert [(s.session_id, s.title, s.archived) for s in only.sessions] == [
                (session_id, "Over stdio", True)
            ]
            with pytest.raises(RequestError) as refused:
                await conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
            assert refused.value.code == -32602
            await conn.unarchive_session(UnarchiveSessionRequest(session_id=session_id))
            await conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
            status = await conn.session_status(SessionStatusRequest(session_id=session_id))
            assert status.status == "open"


async def _title_of(conn: ClientSideConnection, session_id: str) -> str | None:
    listed = await conn.list_sessions(ListSessionsRequest())
    return {s.session_id: s.title for s in listed.sessions}[session_id]


async def test_a_title_set_in_one_process_holds_against_the_process_holding_it_live(
    tmp_path: Path,
) -> None:
    database = tmp_path / "sessions.sqlite3"
    command = [sys.executable, str(_AGENT), str(database)]
    with anyio.fail_after(SCENARIO_TIMEOUT):
        async with (
            spawn_agent(command, env=child_env(_AGENT)) as transport_a,
            ClientSideConnection(RecordingClient(), transport_a) as a,
            spawn_agent(command, env=child_env(_AGENT)) as transport_b,
            ClientSideConnection(RecordingClient(), transport_b) as b,
        ):
            await a.initialize(InitializeRequest(protocol_version=1))
            await b.initialize(InitializeRequest(protocol_version=1))
            session_id = (
                await a.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
            ).session_id
            await a.prompt(PromptRequest(session_id=session_id, prompt=text("title First")))
            assert await _title_of(b, session_id) == "First"
            titled = SetSessionTitleRequest(session_id=session_id, title="From b")
            assert (await b.set_session_title(titled)).title == "From b"
            # a still holds the session live with its old title; its turns save the session.
            await a.prompt(PromptRequest(session_id=session_id, prompt=text("hello")))
            assert await _title_of(b, session_id) == "From b"
            await a.prompt(PromptRequest(session_id=session_id, prompt=text("title Generated")))
            assert await _title_of(a, session_id) == "From b"
            assert await _title_of(b, session_id) == "From b"

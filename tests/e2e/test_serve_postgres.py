"""Two ``accord serve`` processes on one PostgreSQL database share their sessions.

Each agent is a real ``python -m accord.cli serve --store postgresql://...`` process; the model
is the fake OpenAI-compatible server on loopback in this process. What one process stored, the
other lists and loads (replay included) and continues.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from pg_support import fresh_schema

from accord.client import AgentConnection, AllowAll, connect
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

SCENARIO_TIMEOUT = 90.0


@asynccontextmanager
async def agent(
    server: FakeOpenAIServer, project: Path, url: str
) -> AsyncGenerator[AgentConnection]:
    command = [
        sys.executable,
        "-m",
        "accord.cli",
        "serve",
        "--store",
        url,
        "--model",
        "openai:fake-model",
        "--base-url",
        server.base_url,
    ]
    env = {"OPENAI_API_KEY": "test", "ACCORD_MODEL": "", "ACCORD_BASE_URL": ""}
    async with connect(command, cwd=project, env=env, permission_policy=AllowAll()) as connection:
        yield connection


async def test_a_session_stored_by_one_server_is_listed_and_loaded_by_another(
    project: Path,
) -> None:
    script = [ScriptedReply(text=["Noted: 42."]), ScriptedReply(text=["You said 42."])]
    with fresh_schema() as url, FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with agent(server, project, url) as first, agent(server, project, url) as second:
                session = await first.new_session(project)
                await session.prompt("Remember the number 42.")
                listed = await second.list_sessions(cwd=str(project))
                assert [info.session_id for info in listed.sessions] == [session.session_id]
                loaded = await second.load_session(session.session_id, project)
                replayed = [(m.role, m.text) for m in loaded.view.messages]
                assert replayed == [("user", "Remember the number 42."), ("agent", "Noted: 42.")]
                result = await loaded.prompt("Which number?")
    assert result.text == "You said 42."
    assert [m["content"] for m in server.requests[1].messages[1:4]] == [
        "Remember the number 42.",
        "Noted: 42.",
        "Which number?",
    ]

"""Two ``accord serve`` processes on one PostgreSQL database share their sessions.

Each agent is a real ``python -m accord.cli serve --store postgresql://...`` process; the model
is the fake OpenAI-compatible server on loopback in this process. What one process stored, the
other lists and loads (replay included) and continues; when the process running a turn is
killed, another one takes the session over.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from pg_support import fresh_schema

from accord.client import AgentConnection, AllowAll, ToolCallUpdated, connect
from accord.schema import TerminalToolCallContent
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall
from accord.transports import spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

SCENARIO_TIMEOUT = 90.0
ENV = {"OPENAI_API_KEY": "test", "ACCORD_MODEL": "", "ACCORD_BASE_URL": ""}


def serve_command(server: FakeOpenAIServer, url: str) -> list[str]:
    return [
        *(sys.executable, "-m", "accord.cli", "serve", "--store", url),
        *("--model", "openai:fake-model", "--base-url", server.base_url),
    ]


@asynccontextmanager
async def agent(
    server: FakeOpenAIServer, project: Path, url: str
) -> AsyncGenerator[AgentConnection]:
    async with connect(
        serve_command(server, url),
        cwd=project,
        env=ENV,
        permission_policy=AllowAll(),
        terminals=True,
    ) as connection:
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


async def _start_a_turn_and_kill_its_process(
    server: FakeOpenAIServer, project: Path, url: str
) -> str:
    """Run a turn in one ``accord serve`` until its command runs, then kill -9 the process;
    return the session id."""
    session_id = ""
    killed = False
    try:
        async with (
            spawn_agent(serve_command(server, url), cwd=project, env=ENV) as transport,
            connect(transport, permission_policy=AllowAll(), terminals=True) as first,
        ):
            session = await first.new_session(project)
            session_id = session.session_id
            async with session.stream("Run the slow thing.") as stream:
                async for event in stream:
                    running = isinstance(event, ToolCallUpdated) and any(
                        isinstance(c, TerminalToolCallContent) for c in event.tool_call.content
                    )
                    if running and not killed:
                        os.kill(transport.pid, signal.SIGKILL)
                        killed = True
    except Exception:  # the connection dies with its agent: expected once it was killed
        if not killed:
            raise
    assert killed, "the turn never reached its command"
    return session_id


async def test_the_owner_killed_mid_turn_is_taken_over_by_another_server(project: Path) -> None:
    """kill -9 of the process running a turn: another process replays what it committed,
    closes its unfinished tool call, and runs the next turn at once."""
    slow = ScriptedToolCall(name="run_command", arguments={"command": "sleep 30"})
    script = [ScriptedReply(tool_calls=[slow]), ScriptedReply(text=["Picked up where it stopped."])]
    with fresh_schema() as url, FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            session_id = await _start_a_turn_and_kill_its_process(server, project, url)
            async with agent(server, project, url) as second:
                loaded = await second.load_session(session_id, project)
                users = [m.text for m in loaded.view.messages if m.role == "user"]
                assert users == ["Run the slow thing."]
                (command,) = loaded.view.tool_calls.values()
                assert command.status not in ("pending", "in_progress")
                result = await loaded.prompt("Go on.")
    assert result.text == "Picked up where it stopped."

"""``accord serve`` end to end: a real agent process, driven by accord's client.

The agent is ``python -m accord.cli serve --model openai:fake-model --base-url <fake server>``
with a SQLite store in the test's directory; the model is :class:`FakeOpenAIServer` on loopback
in this process, scripted with tool calls, so pydantic-ai's real OpenAI provider code runs in
the agent. The client offers files and terminals, so reads and writes go through the client and
commands run in the client's terminal host.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from _e2e_editor import serve_command
from helpers.processes import gone
from helpers.timeouts import SCENARIO_TIMEOUT

from accord.client import (
    AllowAll,
    AskCallback,
    ConnectedAgent,
    PermissionContext,
    PermissionDecision,
    PermissionPolicy,
    TerminalHost,
    ToolCallUpdated,
    TurnFinished,
    connect,
)
from accord.errors import RequestError
from accord.schema import DiffToolCallContent, TerminalToolCallContent
from accord.testing import FakeOpenAIServer, RecordedRequest, ScriptedReply, ScriptedToolCall

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]


def call(name: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments=arguments)])


def say(*text: str) -> ScriptedReply:
    return ScriptedReply(text=list(text))


@asynccontextmanager
async def agent(
    server: FakeOpenAIServer | None,
    project: Path,
    policy: PermissionPolicy | None = None,
    terminals: bool | TerminalHost = True,
) -> AsyncGenerator[ConnectedAgent]:
    """``accord serve`` in a subprocess, connected with files and terminals enabled."""
    env = {"OPENAI_API_KEY": "test", "ACCORD_MODEL": "", "ACCORD_BASE_URL": ""}
    async with connect(
        serve_command(server, project.parent / "sessions.sqlite3"),
        cwd=project,
        env=env,
        fs=True,
        terminals=terminals,
        permission_policy=policy or AllowAll(),
    ) as connection:
        yield connection


class Recorder:
    """A permission policy that allows everything and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    async def __call__(self, context: PermissionContext) -> PermissionDecision:
        self.asked.append((context.kind, context.title))
        return context.select("allow_once")

    def policy(self) -> AskCallback:
        return AskCallback(self)


def tools_offered(request: RecordedRequest) -> set[str]:
    return {tool["function"]["name"] for tool in request.body.get("tools", [])}


def contents(request: RecordedRequest) -> list[str]:
    return [str(message.get("content")) for message in request.messages]


async def test_a_task_from_reading_to_green_tests(project: Path) -> None:
    script = [
        call("read_file", path="pkg/__init__.py"),
        call(
            "update_plan",
            steps=[
                {"content": "Fix add", "status": "in_progress"},
                {"content": "Run the tests"},
            ],
        ),
        call("edit_file", path="pkg/__init__.py", old_text="a - b", new_text="a + b"),
        call("run_command", command=f"{sys.executable} -m pytest -q -p no:cacheprovider tests"),
        say("Fixed `add`; ", "the tests pass."),
    ]
    recorder = Recorder()
    with FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with agent(server, project, recorder.policy()) as connection:
                session = await connection.new_session(project)
                assert session.view.current_mode_id == "code"
                assert {c.name for c in session.view.available_commands} >= {"mode", "clear"}
                result = await session.prompt("Make the tests pass.")
        requests = server.requests

    assert result.stop_reason == "end_turn"
    assert result.text == "Fixed `add`; the tests pass."
    assert (project / "pkg" / "__init__.py").read_text() == "def add(a, b):\n    return a + b\n"
    # Only the edit and the command asked; reading and planning did not.
    assert [kind for kind, _ in recorder.asked] == ["edit", "execute"]
    assert recorder.asked[0][1] == "Edit pkg/__init__.py"
    assert recorder.asked[1][1].startswith(f"Run {sys.executable}")

    view = session.view
    assert [(e.content, e.status) for e in view.plan] == [
        ("Fix add", "in_progress"),
        ("Run the tests", "pending"),
    ]
    calls = {call.kind: call for call in view.tool_calls.values()}
    assert calls["read"].status == "completed"
    assert calls["think"].status == "completed"
    edit = calls["edit"]
    assert edit.status == "completed"
    assert edit.content == (
        DiffToolCallContent(
            path=str(project / "pkg" / "__init__.py"),
            old_text="def add(a, b):\n    return a - b\n",
            new_text="def add(a, b):\n    return a + b\n",
        ),
    )
    command = calls["execute"]
    assert command.status == "completed"
    assert isinstance(command.content[0], TerminalToolCallContent)
    # The model read the file through the editor and saw the tests pass.
    assert "return a - b" in contents(requests[1])[-1]
    assert "1 passed" in contents(requests[4])[-1]
    assert "[exit code 0]" in contents(requests[4])[-1]


async def test_cancelling_in_the_middle_of_a_command(project: Path) -> None:
    pid_file = project / "pid"
    script = [
        call("run_command", command=f"echo $$ > {pid_file}; sleep 60"),
        say("never sent"),
    ]
    with FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with agent(server, project) as connection:
                session = await connection.new_session(project)
                finished: TurnFinished | None = None
                async with session.stream("Run the slow thing.") as stream:
                    async for event in stream:
                        if isinstance(event, ToolCallUpdated) and any(
                            isinstance(c, TerminalToolCallContent) for c in event.tool_call.content
                        ):
                            await session.cancel()
                        if isinstance(event, TurnFinished):
                            finished = event
                assert finished is not None and finished.stop_reason == "cancelled"
                (command,) = session.view.tool_calls.values()
                assert command.status == "cancelled"
                # The session goes on: the next turn works.
                after = await session.prompt("Anything else?")
                session_id = session.session_id
            # Replayed by a new agent process, the interrupted call is still cancelled.
            async with agent(server, project) as connection:
                loaded = await connection.load_session(session_id, project)
                (replayed,) = loaded.view.tool_calls.values()
                assert replayed.status == "cancelled"
                assert replayed.tool_call_id == command.tool_call_id
        assert len(server.requests) == 2
    assert after.stop_reason == "end_turn"
    assert await anyio.to_thread.run_sync(gone, int(pid_file.read_text()))  # the command died


async def test_a_command_line_runs_on_a_client_that_executes_argv_directly(
    project: Path,
) -> None:
    # A client that runs `command` with `args` as argv (no shell of its own) must still run
    # the model's command line: the agent sends the shell and the line as its argument.
    script = [call("run_command", command="echo one && echo two | tr a-z A-Z"), say("ok")]
    with FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            host = TerminalHost(use_shell=False)
            async with host, agent(server, project, terminals=host) as connection:
                session = await connection.new_session(project)
                result = await session.prompt("Run it.")
        requests = server.requests
    assert result.stop_reason == "end_turn"
    (command,) = session.view.tool_calls.values()
    assert command.status == "completed"
    assert contents(requests[1])[-1] == "one\nTWO\n[exit code 0]"


async def test_restart_and_load_continue_the_conversation(project: Path) -> None:
    script = [say("Noted: 42."), say("You said 42.")]
    with FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with agent(server, project) as connection:
                session = await connection.new_session(project)
                await session.prompt("Remember the number 42.")
                session_id = session.session_id
            # A new agent process on the same store.
            async with agent(server, project) as connection:
                loaded = await connection.load_session(session_id, project)
                replayed = [(m.role, m.text) for m in loaded.view.messages]
                assert replayed == [("user", "Remember the number 42."), ("agent", "Noted: 42.")]
                result = await loaded.prompt("Which number?")
        first, second = server.requests
    assert result.text == "You said 42."
    assert contents(second)[1:4] == ["Remember the number 42.", "Noted: 42.", "Which number?"]
    # The system prompt was stored with the session and reused word for word.
    assert contents(second)[0] == contents(first)[0]


async def test_ask_mode_does_not_even_offer_edits(project: Path) -> None:
    script = [
        call("edit_file", path="pkg/__init__.py", old_text="a - b", new_text="a + b"),
        say("I can only read in ask mode."),
    ]
    recorder = Recorder()
    with FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with agent(server, project, recorder.policy()) as connection:
                session = await connection.new_session(project)
                switched = await session.prompt("/mode ask")
                assert "Switched to ask mode" in switched.text
                assert session.view.current_mode_id == "ask"
                result = await session.prompt("Fix add.")
        (request, _) = server.requests  # the slash command never reached the model
    assert not tools_offered(request) & {"edit_file", "write_file", "run_command"}
    assert {"read_file", "grep"} <= tools_offered(request)
    assert result.text == "I can only read in ask mode."
    (edit,) = (c for c in session.view.tool_calls.values())
    assert edit.status == "failed"
    assert recorder.asked == []
    assert (project / "pkg" / "__init__.py").read_text().endswith("return a - b\n")


async def test_the_mode_picker_restricts_too(project: Path) -> None:
    with FakeOpenAIServer([say("ok")]) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with agent(server, project) as connection:
                session = await connection.new_session(project)
                await session.set_mode("ask")
                await session.prompt("hi")
        (request,) = server.requests
    assert "edit_file" not in tools_offered(request)


async def test_without_a_model_the_agent_explains_how_to_configure_one(project: Path) -> None:
    with anyio.fail_after(SCENARIO_TIMEOUT):
        async with agent(None, project) as connection:
            (method,) = connection.auth_methods
            assert method.description is not None and "--model" in method.description
            with pytest.raises(RequestError) as raised:
                await connection.new_session(project)
    assert raised.value.code == -32000
    assert "accord serve --model" in raised.value.message


async def test_keys_are_never_logged(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    secret = "sk-e2e-0123456789abcdef"
    caplog.set_level(logging.DEBUG, logger="accord.agent.stderr")
    command = [sys.executable, "-m", "accord.cli", "-vv", "serve"]
    with FakeOpenAIServer([say("hi")]) as server:
        command += ["--model", "openai:fake-model", "--base-url", server.base_url]
        command += ["--store", str(project.parent / "s.sqlite3")]
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with connect(command, cwd=project, env={"OPENAI_API_KEY": secret}) as conn:
                session = await conn.new_session(project)
                await session.prompt("hello")
        (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {secret}"  # the key was used ...
    logged = [record.getMessage() for record in caplog.records]
    assert any("DEBUG" in line for line in logged)  # ... the agent logged verbosely ...
    assert not any(secret in line for line in logged)  # ... and never the key

"""``accord run`` answers the agent's questions on a real terminal, and only there.

The built-in coder runs against the fake OpenAI server, scripted to call ``ask_user``; a pty
(Python's ``pty`` module) is the user's terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_pty import Terminal
from helpers.timeouts import TIMEOUT

from accord.testing import FakeOpenAIServer, RecordedRequest, ScriptedReply, ScriptedToolCall

pytestmark = pytest.mark.subprocess

ASK = ScriptedToolCall(
    name="ask_user", arguments={"question": "Which region?", "choices": ["eu", "us"]}
)


def _command(server: FakeOpenAIServer, tmp_path: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "accord.cli",
        "run",
        "deploy it",
        "--model",
        "openai:fake-model",
        "--base-url",
        server.base_url,
        "--store",
        str(tmp_path / "s.db"),
        "--cwd",
        str(tmp_path),
    ]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCORD_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    return env


def _tool_messages(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m.get("role") == "tool"]


def test_the_question_is_asked_field_by_field_on_the_terminal(tmp_path: Path) -> None:
    script = [ScriptedReply(tool_calls=[ASK]), ScriptedReply(text=["Deploying to us."])]
    with FakeOpenAIServer(script) as server:
        terminal = Terminal(_command(server, tmp_path), _env(), tmp_path)
        terminal.expect("The agent asks: Which region?")
        terminal.expect("Answer? [y]es / [n]o, decline / [c]ancel: ")
        terminal.type("y")
        terminal.expect("2. us")
        terminal.type("3")  # not a choice: explained, asked again
        terminal.expect("must be one of 'eu', 'us'")
        terminal.type("2")
        terminal.expect("Deploying to us.")
        assert terminal.wait() == 0
        requests = server.requests
    assert _tool_messages(requests[1]) == ["The user answered: us"]


def test_without_a_terminal_no_question_is_offered(tmp_path: Path) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["Which region: eu or us?"])]) as server:
        done = subprocess.run(
            _command(server, tmp_path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=_env(),
            timeout=TIMEOUT,
        )
        [request] = server.requests
    assert done.returncode == 0, done.stderr
    tools = [tool["function"]["name"] for tool in request.body.get("tools", [])]
    assert "ask_user" not in tools and "read_file" in tools
    assert "Which region: eu or us?" in done.stdout

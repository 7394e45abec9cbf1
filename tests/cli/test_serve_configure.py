"""``accord serve --configure`` in a real terminal, and the terminal auth flow around it.

A pty (Python's ``pty`` module) stands in for the user's terminal: the test reads what the
program writes there and types the answers. The fake OpenAI server stands in for the model
provider, so the saved key is seen where it is used: in the ``Authorization`` header.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_pty import Terminal
from helpers.timeouts import TIMEOUT

from accord.coder import CoderConfig, CoderRuntime
from accord.schema import (
    AuthMethodAgent,
    ClientCapabilities,
    InitializeRequest,
    TerminalAuthMethod,
)
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.subprocess

KEY = "sk-test-not-a-real-key-4242"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OPENAI_", "ANTHROPIC_", "GOOGLE_", "ACCORD_", "OTEL_"))
    }
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        ACCORD_NO_KEYRING="1",
        PYTHONPATH=os.pathsep.join(sys.path),
    )
    return env


def _answer_setup(terminal: Terminal, base_url: str) -> None:
    terminal.expect("Provider [1]: ")
    terminal.type("4")  # an OpenAI-compatible server
    terminal.expect("Server URL")
    terminal.type(base_url)
    terminal.expect("Model [")
    terminal.type("fake-model")
    terminal.expect("API key for OPENAI_API_KEY")
    terminal.type(KEY)
    terminal.expect("Saved: model openai:fake-model")


def test_configure_saves_the_choice_and_a_private_key_that_serve_then_uses(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    serve = [sys.executable, "-m", "accord.cli", "serve", "--store", str(tmp_path / "s.db")]
    with FakeOpenAIServer([ScriptedReply(text=["configured!"])]) as server:
        terminal = Terminal(
            [sys.executable, str(Path(__file__).with_name("_cli_terminal_auth_client.py")), *serve],
            env,
            tmp_path,
        )
        terminal.expect("method: configure-model ['--configure']")
        _answer_setup(terminal, server.base_url)
        terminal.expect("auth methods after: 0")
        terminal.expect("reply: configured!")
        assert terminal.wait() == 0
        [request] = server.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in terminal.screen  # typed with echo off, never printed
    credentials = tmp_path / "config" / "accord" / "credentials.json"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(credentials.parent.stat().st_mode) == 0o700
    assert KEY in credentials.read_text()
    settings = (tmp_path / "config" / "accord" / "model.json").read_text()
    assert KEY not in settings and "openai:fake-model" in settings


def test_configure_without_a_terminal_refuses_and_saves_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "accord.cli", "serve", "--configure"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=TIMEOUT,
    )
    assert done.returncode == 1
    assert "needs a terminal" in done.stderr
    assert not (tmp_path / "config").exists()


def test_end_of_input_saves_nothing(tmp_path: Path) -> None:
    terminal = Terminal(
        [sys.executable, "-m", "accord.cli", "serve", "--configure"], _env(tmp_path), tmp_path
    )
    terminal.expect("Provider [1]: ")
    os.write(terminal.fd, b"\x04")  # Ctrl-D
    assert terminal.wait() == 1
    assert "nothing saved" in terminal.screen
    assert not (tmp_path / "config" / "accord" / "model.json").exists()


@pytest.mark.anyio
@pytest.mark.asyncio_only("the coder runs pydantic-ai, asyncio only")
@pytest.mark.parametrize("terminal", [True, False])
async def test_the_terminal_method_is_advertised_only_to_clients_that_can_run_it(
    terminal: bool,
) -> None:
    runtime = CoderRuntime(CoderConfig(), store=MemorySessionStore())
    capabilities = ClientCapabilities.model_validate({"auth": {"terminal": terminal}})
    try:
        response = await runtime.initialize(
            InitializeRequest(protocol_version=1, client_capabilities=capabilities)
        )
    finally:
        await runtime.aclose()
    *methods, agent = response.auth_methods
    assert isinstance(agent, AuthMethodAgent) and "accord serve --model" in (
        agent.description or ""
    )
    if terminal:
        [method] = methods
        assert isinstance(method, TerminalAuthMethod) and method.args == ["--configure"]
        assert method.to_wire()["type"] == "terminal"
    else:
        assert methods == []


def test_accord_run_offers_the_agents_terminal_sign_in_and_then_prompts(tmp_path: Path) -> None:
    env = _env(tmp_path)
    agent = f"{sys.executable} -m accord.cli serve --store {tmp_path / 's.db'}"
    with FakeOpenAIServer([ScriptedReply(text=["signed in and answering"])]) as server:
        terminal = Terminal(
            [sys.executable, "-m", "accord.cli", "run", "hello", "--agent", agent], env, tmp_path
        )
        terminal.expect("The agent needs you to sign in or set it up first:")
        terminal.expect("1. Configure a model")
        terminal.type("")  # Enter: the first method
        _answer_setup(terminal, server.base_url)
        terminal.expect("signed in; connecting again")
        terminal.expect("signed in and answering")
        assert terminal.wait() == 0
        [request] = server.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in terminal.screen

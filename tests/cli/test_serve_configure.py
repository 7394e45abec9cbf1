"""``accord serve --configure`` in a real terminal, and the terminal auth flow around it.

A pty (Python's ``pty`` module) stands in for the user's terminal: the test reads what the
program writes there and types the answers. The fake OpenAI server stands in for the model
provider, so the saved key is seen where it is used: in the ``Authorization`` header.
"""

from __future__ import annotations

import os
import pty
import select
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

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

TIMEOUT = 60.0
KEY = "sk-test-not-a-real-key-4242"


class Terminal:
    """A program running on a pty: read its screen, type into it."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: exec at once (no Python state of the parent is used)
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        self.screen = ""

    def expect(self, text: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while text not in self.screen:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{text!r} never appeared; the screen:\n{self.screen}"
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # the program exited and closed the pty
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{text!r} never appeared; the screen:\n{self.screen}")
                self.screen += chunk.decode(errors="replace")

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def wait(self) -> int:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    chunk = b""
                self.screen += chunk.decode(errors="replace")
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, 9)
        raise AssertionError(f"the program did not exit; the screen:\n{self.screen}")


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
            [sys.executable, str(Path(__file__).with_name("_terminal_auth_client.py")), *serve],
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
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("terminal", [True, False])
async def test_the_terminal_method_is_advertised_only_to_clients_that_can_run_it(
    terminal: bool, anyio_backend: str
) -> None:
    runtime = CoderRuntime(CoderConfig(), store=MemorySessionStore())
    capabilities = ClientCapabilities.model_validate({"auth": {"terminal": terminal}})
    try:
        response = await runtime.initialize(
            InitializeRequest(protocol_version=1, client_capabilities=capabilities)
        )
    finally:
        await runtime.aclose()
    [method] = response.auth_methods
    if terminal:
        assert isinstance(method, TerminalAuthMethod) and method.args == ["--configure"]
        assert method.to_wire()["type"] == "terminal"
    else:
        assert isinstance(method, AuthMethodAgent) and "accord serve --model" in (
            method.description or ""
        )

"""``accord chat`` in a real terminal (tmux): start it on the built-in agent, type, read back;
a ``/compact`` shown as its compaction note; a provider set from the provider screen with a
masked key, after which the footer says the agent is signed in with it.

The built-in coding agent runs in the ``accord chat`` process with the model pointed at the
fake OpenAI server of :mod:`accord.testing` on loopback (in this test process), so everything
between the keyboard and the model's HTTP API is the real thing: the terminal, Textual's
driver, the client library, the agent runtime, pydantic-ai's OpenAI provider.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from helpers.timeouts import TIMEOUT

from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.subprocess

TMUX = shutil.which("tmux")
#: The chat is a fresh process loading Textual and pydantic-ai inside tmux, and the screen is
#: polled until it shows the text: a scenario more than a single wait.
SCREEN_TIMEOUT = 2 * TIMEOUT


class Tmux:
    """A tmux server of the test's own (its own socket), with one window."""

    def __init__(self, tmux: str) -> None:
        self.tmux = tmux
        self.socket = f"accord-test-{uuid.uuid4().hex[:8]}"

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=True,
        )
        return done.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "chat")

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + SCREEN_TIMEOUT
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the screen:\n{screen}")
            time.sleep(0.1)

    def wait_gone(self, text: str) -> str:
        deadline = time.monotonic() + SCREEN_TIMEOUT
        while True:
            screen = self.screen()
            if text not in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} stayed; the screen:\n{screen}")
            time.sleep(0.1)

    def running(self) -> bool:
        """Whether the window is still there (it closes when the program in it exits)."""
        done = subprocess.run(
            [self.tmux, "-L", self.socket, "has-session", "-t", "chat"],
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        return done.returncode == 0

    def close(self) -> None:
        subprocess.run(
            [self.tmux, "-L", self.socket, "kill-server"], capture_output=True, check=False
        )


def chat_command(
    server: FakeOpenAIServer, tmp_path: Path, extra_env: dict[str, str] | None = None
) -> list[str]:
    """``accord chat`` on the built-in agent, its model the fake server (through ``env``)."""
    env = {
        "OPENAI_API_KEY": "test",
        "ACCORD_MODEL": "",
        "ACCORD_BASE_URL": "",
        "PYTHONPATH": os.pathsep.join(sys.path),
        "TERM": "xterm-256color",
        **(extra_env or {}),
    }
    return [
        "env",
        *(f"{k}={v}" for k, v in env.items()),
        sys.executable,
        "-m",
        "accord.cli",
        "chat",
        "--model",
        "openai:fake-model",
        "--base-url",
        server.base_url,
        "--store",
        str(tmp_path / "sessions.sqlite3"),
        "--cwd",
        str(tmp_path),
    ]


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_chat_in_tmux_streams_the_fake_models_reply(tmp_path: Path) -> None:
    assert TMUX is not None
    script = [ScriptedReply(text=["Hello from ", "the **fake** model."])]
    tmux = Tmux(TMUX)
    with FakeOpenAIServer(script) as server:
        command = chat_command(server, tmp_path)
        try:
            tmux("new-session", "-d", "-s", "chat", "-x", "100", "-y", "30", *command)
            tmux.wait_for(" idle ")
            tmux("send-keys", "-t", "chat", "-l", "say hello")
            tmux("send-keys", "-t", "chat", "Enter")
            screen = tmux.wait_for("Hello from the fake model.")
            assert "say hello" in screen
            tmux.wait_for(" idle ")
            tmux("send-keys", "-t", "chat", "C-q")
            deadline = time.monotonic() + SCREEN_TIMEOUT
            while tmux.running():
                assert time.monotonic() < deadline, "accord chat did not quit on Ctrl-Q"
                time.sleep(0.1)
        finally:
            tmux.close()
    (request,) = server.requests
    assert "say hello" in str(request.body)


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_chat_in_tmux_shows_a_compact_and_goes_on(tmp_path: Path) -> None:
    # Three turns, then /compact: the chat's client advertises session.compaction, so the
    # coder's compaction shows as its note with the summary; the next prompt is answered.
    assert TMUX is not None
    script = [ScriptedReply(text=[t]) for t in ("reply-one", "reply-two", "reply-three")]
    script.append(ScriptedReply(text=["reply-after-compact"]))
    side = {"compact": [ScriptedReply(text=["SUMMARY-OF-THREE-TURNS"])]}
    tmux = Tmux(TMUX)
    with FakeOpenAIServer(script, side_scripts=side) as server:
        try:
            command = chat_command(server, tmp_path)
            tmux("new-session", "-d", "-s", "chat", "-x", "100", "-y", "40", *command)
            tmux.wait_for(" idle ")
            for n, said in enumerate(("one", "two", "three")):
                tmux("send-keys", "-t", "chat", "-l", f"prompt-{said}")
                tmux("send-keys", "-t", "chat", "Enter")
                tmux.wait_for(f"reply-{said}")
                tmux.wait_for(" idle ")
                assert len(server.requests) == n + 1
            # an argument after a space: no completion list takes the Enter
            tmux("send-keys", "-t", "chat", "-l", "/compact keep the names")
            tmux("send-keys", "-t", "chat", "Enter")
            screen = tmux.wait_for("earlier turns summarised")
            screen = tmux.wait_for("SUMMARY-OF-THREE-TURNS")
            assert "[Earlier turns summarised" not in screen  # the note, not the marker
            tmux.wait_for(" idle ")
            tmux("send-keys", "-t", "chat", "-l", "prompt-four")
            tmux("send-keys", "-t", "chat", "Enter")
            tmux.wait_for("reply-after-compact")
        finally:
            tmux.close()
    compact = [r for r in server.side_requests if "keep the names" in str(r.body)]
    assert len(compact) == 1
    last = str(server.requests[-1].body)
    assert "SUMMARY-OF-THREE-TURNS" in last and "prompt-one" not in last


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.timeout(240)  # two turns and two screens of a fresh chat process, polled
def test_chat_in_tmux_sets_a_provider_with_a_masked_key(tmp_path: Path) -> None:
    # Ctrl-R opens the provider screen; Enter on openai asks for its key (typed, never drawn);
    # the next session's request carries it. No keyring: the key goes to the private file of
    # the test's own configuration directory, never to the session store.
    assert TMUX is not None
    key = "sk-tmux-providers-6b1d93"
    tmux = Tmux(TMUX)
    script = [ScriptedReply(text=[t]) for t in ("reply-with-env-key", "reply-with-typed-key")]
    private = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "ACCORD_NO_KEYRING": "1"}
    with FakeOpenAIServer(script) as server:
        try:
            command = chat_command(server, tmp_path, private)
            tmux("new-session", "-d", "-s", "chat", "-x", "120", "-y", "36", *command)
            screen = tmux.wait_for(" idle ")
            assert "signed in" not in screen  # a model at --base-url: no sign-in needed
            tmux("send-keys", "-t", "chat", "-l", "first")
            tmux("send-keys", "-t", "chat", "Enter")
            tmux.wait_for("reply-with-env-key")
            tmux.wait_for(" idle ")
            tmux("send-keys", "-t", "chat", "C-r")
            screen = tmux.wait_for("Model providers (2)")
            assert "in use" in screen and server.base_url in screen
            tmux("send-keys", "-t", "chat", "Enter")
            tmux.wait_for("Set provider openai")
            tmux("send-keys", "-t", "chat", "-l", key)
            screen = tmux.wait_for("•" * 8)  # the masked key
            assert key not in screen
            tmux("send-keys", "-t", "chat", "Enter")
            tmux.wait_gone("Set provider openai")  # the form
            screen = tmux.wait_for("Model providers (2)")  # the list again, and the notice
            assert key not in screen
            tmux("send-keys", "-t", "chat", "Escape")
            tmux.wait_gone("Model providers (2)")  # a key right after Escape would join it
            # auth/status_update: the footer names the account now, never the key.
            screen = tmux.wait_for("signed in openai key (providers/set)")
            assert key not in screen
            tmux("send-keys", "-t", "chat", "C-n")
            tmux.wait_for(" idle ")
            tmux("send-keys", "-t", "chat", "-l", "second")
            tmux("send-keys", "-t", "chat", "Enter")
            screen = tmux.wait_for("reply-with-typed-key")
            assert key not in screen
        finally:
            tmux.close()
    first, second = server.requests
    assert first.headers["authorization"] == "Bearer test"
    assert second.headers["authorization"] == f"Bearer {key}"
    assert key.encode() not in (tmp_path / "sessions.sqlite3").read_bytes()

"""``accord providers`` (list, set ID --key-stdin, disable ID) against ``accord serve`` run as a
subprocess agent, with the test's own configuration directory and no keyring (the key goes to
the private credentials file), then ``accord run`` through the provider set, on accord's fake
OpenAI server on loopback.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
from _cli_support import ACCORD, ECHO_AGENT, ROOT, agent
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode
from accord.testing import FakeOpenAIServer, ScriptedReply

#: Seven ``accord`` processes, each starting its agent: slow on a loaded machine.
pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(240)]

_KEY = "sk-cli-providers-7a2b9c"


class Setup:
    """The environment of the test's ``accord`` processes and the ``--agent`` serving."""

    def __init__(self, root: Path) -> None:
        self.config = root / "config"
        self.env: dict[str, str] = {
            k: v
            for k, v in os.environ.items()
            if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ACCORD_MODEL", "NO_COLOR")
        }
        self.env.update(
            XDG_CONFIG_HOME=str(self.config),
            XDG_DATA_HOME=str(root / "data"),
            ACCORD_NO_KEYRING="1",
            ACCORD_CONFIG=os.devnull + ".missing",
        )
        serve = [*ACCORD, "serve", "--model", "openai-chat:cli-providers-model"]
        self.agent = shlex.join([*serve, "--store", str(root / "sessions.sqlite3")])
        self.root = root

    def accord(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        """Run ``accord ARGS`` to the end with ``stdin``."""
        return subprocess.run(
            [*ACCORD, *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=self.env,
            timeout=TIMEOUT * 3,
            check=False,
        )

    def providers(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        """``accord providers ARGS --agent SERVE``."""
        return self.accord("providers", *args, "--agent", self.agent, stdin=stdin)


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _lines(done: subprocess.CompletedProcess[str]) -> Mapping[str, str]:
    assert done.returncode == 0, done.stderr
    return dict(line.split("  ", 1) for line in done.stdout.splitlines())


def test_list_set_with_the_key_on_stdin_then_run_through_it_and_disable(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    assert _lines(setup.providers()) == {
        "openai": "in use, openai at https://api.openai.com/v1, no key",
        "anthropic": "anthropic at https://api.anthropic.com, no key",
    }
    with FakeOpenAIServer([ScriptedReply(text=["through the route"])]) as server:
        done = setup.providers(
            "set", "openai", "--base-url", server.base_url, "--key-stdin", stdin=f"{_KEY}\n"
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"openai: openai at {server.base_url} (key sent)\n"
        assert _KEY not in done.stderr
        kept = setup.config / "accord"
        assert _KEY in _read(kept / "credentials.json")
        assert _KEY not in _read(kept / "providers.json")
        assert server.base_url in _read(kept / "providers.json")
        listed = _lines(setup.providers())
        assert listed["openai"] == f"in use, openai at {server.base_url}, key configured"

        ran = setup.accord("run", "--agent", setup.agent, "--cwd", str(tmp_path), "-q", "hi")
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == "through the route\n"
        (request,) = server.requests
        assert request.headers["authorization"] == f"Bearer {_KEY}"

    done = setup.providers("disable", "anthropic")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "disabled anthropic\n"
    assert _lines(setup.providers())["anthropic"] == "disabled, no key"

    refused = setup.providers("disable", "openai")
    assert refused.returncode == ExitCode.AGENT_FAILED
    assert "serves the default model" in refused.stderr

    everything = tmp_path.rglob("*")
    for path in (p for p in everything if p.is_file() and p.name != "credentials.json"):
        assert _KEY.encode() not in path.read_bytes(), path


def test_bad_input_is_refused_before_or_by_the_agent(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    empty = setup.providers("set", "openai", "--key-stdin", stdin="\n")
    assert empty.returncode == ExitCode.USAGE
    assert "stdin is empty" in empty.stderr
    missing = setup.providers("set")
    assert missing.returncode == ExitCode.USAGE
    assert "takes a provider id" in missing.stderr
    unknown = setup.providers("set", "mistral", "--api-type", "openai", "--base-url", "http://h")
    assert unknown.returncode == ExitCode.AGENT_FAILED
    assert "unknown provider 'mistral'" in unknown.stderr


def test_an_agent_without_providers_is_told_so(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    done = setup.accord("providers", "--agent", agent(ECHO_AGENT))
    assert done.returncode == ExitCode.ERROR
    assert "cannot configure model providers" in done.stderr
    assert "providers/list was not sent" in done.stderr

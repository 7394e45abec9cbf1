"""``accord serve --listen`` and ``accord run --agent ws://`` as real processes on loopback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(240)]

ACCORD = (sys.executable, "-m", "accord.cli")
TOKEN = "cli-test-token-0123456789abcdef"
SLOW = 120.0


def _env(**extra: str) -> dict[str, str]:
    dropped = ("ACCORD_MODEL", "ACCORD_BASE_URL", "ACCORD_TOKEN", "NO_COLOR")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["ACCORD_CONFIG"] = os.devnull + ".missing"
    env["OPENAI_API_KEY"] = "test-key"
    env.update(extra)
    return env


@contextmanager
def accord_serve(
    *args: str, env: dict[str, str], port: int = 0
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start ``accord serve --listen 127.0.0.1:PORT ...``; yield its URL once it listens."""
    process = subprocess.Popen(
        [*ACCORD, "serve", "--listen", f"127.0.0.1:{port}", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stderr is not None
        seen: list[str] = []
        for line in process.stderr:
            seen.append(line)
            found = re.search(r"listening on (\S+)", line)
            if found:
                yield found.group(1), process
                return
        raise AssertionError(f"accord serve did not start: {''.join(seen)}")
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)


def test_a_non_loopback_address_without_tls_is_refused_with_exit_2() -> None:
    done = subprocess.run(
        [*ACCORD, "serve", "--listen", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        env=_env(ACCORD_TOKEN=TOKEN),
        timeout=SLOW,
        check=False,
    )
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.strip().splitlines() == [
        "accord serve: refusing to listen on 0.0.0.0 without TLS: give --certfile and "
        "--keyfile, or --insecure-no-tls if the network is trusted"
    ]


@pytest.mark.parametrize("value", ["8765", "host:", "host:99999", ":80"])
def test_a_malformed_listen_address_is_exit_2(value: str) -> None:
    done = subprocess.run(
        [*ACCORD, "serve", "--listen", value],
        capture_output=True,
        text=True,
        env=_env(ACCORD_TOKEN=TOKEN),
        timeout=SLOW,
        check=False,
    )
    assert done.returncode == ExitCode.USAGE
    assert "HOST:PORT" in done.stderr


def test_a_short_token_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("tiny-secret\n")
    done = subprocess.run(
        [*ACCORD, "serve", "--listen", "127.0.0.1:0", "--token-file", str(token_file)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=SLOW,
        check=False,
    )
    assert done.returncode == ExitCode.ERROR
    assert "shorter than 16 characters" in done.stderr
    assert "tiny-secret" not in done.stderr


def test_run_against_a_served_agent(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with FakeOpenAIServer([ScriptedReply(text=["Served over the network."])]) as model:
        serve_args = ("--model", "openai:fake", "--base-url", model.base_url)
        serve_args += ("--store", str(tmp_path / "s.db"))
        with accord_serve(*serve_args, env=_env(ACCORD_TOKEN=TOKEN)) as (url, _):
            run = subprocess.run(
                [*ACCORD, "run", "--agent", url, "--json", "hello"],
                capture_output=True,
                text=True,
                cwd=project,
                env=_env(ACCORD_TOKEN=TOKEN),
                timeout=SLOW,
                check=False,
            )
            listed = subprocess.run(
                [*ACCORD, "sessions", "--agent", url, "list"],
                capture_output=True,
                text=True,
                cwd=project,
                env=_env(ACCORD_TOKEN=TOKEN),
                timeout=SLOW,
                check=False,
            )
            refused = subprocess.run(
                [*ACCORD, "run", "--agent", url, "hello"],
                capture_output=True,
                text=True,
                cwd=project,
                env=_env(ACCORD_TOKEN="wrong-token-0123456789abcdef"),
                timeout=SLOW,
                check=False,
            )
    assert run.returncode == ExitCode.OK, run.stderr
    assert "Served over the network." in run.stdout
    assert listed.returncode == ExitCode.OK, listed.stderr
    assert str(project) in listed.stdout
    assert refused.returncode == ExitCode.AGENT_FAILED
    assert "401" in refused.stderr and "wrong-token" not in refused.stderr


def test_a_generated_token_is_printed_once() -> None:
    with accord_serve(env=_env()) as (url, process):
        assert url.startswith("ws://127.0.0.1:")
    assert process.stderr is not None
    rest = process.stderr.read()
    assert "token" not in rest

"""``accord run`` with the built-in coding agent against accord's fake OpenAI server on loopback.

What a person meets first: the diff of an edit shown before they approve it (on a real
pseudo-terminal), the model's failures as one line with what to do (an unreachable
``--base-url``, an HTTP 400), the missing-model message once, ``--mode``, ``--continue``,
the usage in the summary, and no pydantic-ai banner.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pyte
import pytest
from _cli_support import accord, json_lines, on_a_terminal
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.cli import ExitCode
from accord.testing import FakeOpenAIServer, ScriptedError, ScriptedReply, ScriptedToolCall

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(240)]
#: ``accord run`` starts the built-in agent, which imports pydantic-ai and talks to a model:
#: two processes and a model round trip per command, so a scenario's bound.
SLOW = SCENARIO_TIMEOUT

KEY = {"OPENAI_API_KEY": "test-key"}


def call(name: str, **arguments: object) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments=arguments)])


def builtin(server_url: str, store: Path) -> list[str]:
    return ["--model", "openai:fake-model", "--base-url", server_url, "--store", str(store)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n")
    return root


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_base_url_is_one_line_and_3(project: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = accord("run", *builtin(url, tmp_path / "s.db"), "hi", cwd=project, env=KEY, timeout=SLOW)
    assert done.returncode == ExitCode.AGENT_FAILED
    assert done.stderr == (
        f"accord: the model openai:fake-model could not be reached at {url} (Connection "
        "error.): check --base-url, that the server is running, and the network\n"
    )
    # The session is titled beside the turn (here from the prompt's first line, the model
    # being unreachable), so the title may be shown before the failure ends the turn.
    assert done.stdout in ("", "[title] hi\n")


def test_a_model_http_error_is_one_line_and_3(project: Path, tmp_path: Path) -> None:
    script = [ScriptedReply(error=ScriptedError(status=400, message="no model fake-model"))]
    with FakeOpenAIServer(script) as server:
        done = accord(
            "run",
            *builtin(server.base_url, tmp_path / "s.db"),
            "hi",
            cwd=project,
            env=KEY,
            timeout=SLOW,
        )
    assert done.returncode == ExitCode.AGENT_FAILED
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        f"accord: the model openai:fake-model at {server.base_url} answered HTTP 400: "
    )
    assert lines[0].endswith(
        "answered HTTP 400: no model fake-model; check the model name and its settings"
    )


def test_verbose_adds_the_traceback(project: Path, tmp_path: Path) -> None:
    script = [ScriptedReply(error=ScriptedError(status=400, message="nope"))]
    with FakeOpenAIServer(script) as server:
        done = accord(
            "-v",
            "run",
            *builtin(server.base_url, tmp_path / "s.db"),
            "hi",
            cwd=project,
            env=KEY,
            timeout=SLOW,
        )
    assert done.returncode == ExitCode.AGENT_FAILED
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("accord: the model openai:fake-model")


def test_no_model_is_said_once_and_1(project: Path, tmp_path: Path) -> None:
    done = accord("run", "--store", str(tmp_path / "s.db"), "hi", cwd=project, timeout=SLOW)
    assert done.returncode == ExitCode.ERROR
    assert done.stderr == (
        "accord: no model is configured for the built-in agent: give --model (e.g. --model "
        'openai:gpt-5 with OPENAI_API_KEY set), set ACCORD_MODEL, or put model = "..." in the '
        "config file; or use another agent with --agent\n"
    )
    listed = accord("sessions", "--store", str(tmp_path / "s.db"), cwd=project, timeout=SLOW)
    assert listed.returncode == ExitCode.OK
    assert listed.stderr == "no sessions\n"  # and no model warning


def test_the_diff_is_shown_before_the_edit_is_approved(project: Path, tmp_path: Path) -> None:
    script = [
        call("edit_file", path="app.py", old_text="a - b", new_text="a + b"),
        ScriptedReply(text=["Fixed."]),
    ]
    env = {**KEY, "LC_ALL": "C.UTF-8", "PYTEST_VERSION": None, "CI": None}
    env["ACCORD_CONTEXT_WINDOW"] = "128000"  # so the agent reports the context it uses
    with FakeOpenAIServer(script) as server:
        command = ("run", *builtin(server.base_url, tmp_path / "s.db"), "--cwd", str(project))
        with on_a_terminal(*command, "fix add", env=env) as (process, out, keys):
            question = out.wait_for("[N]ever: ", timeout=SLOW)
            assert (project / "app.py").read_text().endswith("a - b\n")  # not yet
            os.write(keys, b"y\n")
            out.read_to_end(timeout=SLOW)
            assert process.wait(timeout=TIMEOUT) == ExitCode.OK
    assert (project / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
    before = question.split("Allow edit: ")[0]
    # the edit in its file (the whole-file diff the request carries), before the question
    shown = before.replace("\x1b[31m", "").replace("\x1b[32m", "").replace("\x1b[0m", "")
    assert "\n def add(a, b):\n-    return a - b\n+    return a + b\n" in shown
    assert shown.count("-    return a - b") == 1, "shown more than once"
    screen = pyte.Screen(160, 60)
    pyte.ByteStream(screen).feed(out.data)
    lines = [line.rstrip() for line in screen.display if line.strip()]
    assert "Fixed." in lines
    assert lines[-1].startswith("[done, session ")
    # The turn's tokens the agent reported (PromptResponse.usage, the fake model's counts),
    # then the context meter (the last usage_update: of the configured window; no cost, as
    # genai-prices knows no price for a model on a loopback server).
    assert re.search(
        r", [\d,]+ tokens \([\d,]+ in, [\d,]+ out\), context [\d,]+/128,000 tokens \(\d+%\)\]$",
        lines[-1],
    ), lines[-1]
    assert "Logfire" not in out.text and "PYDANTIC_AI_NO_BANNER" not in out.text


def test_the_context_meter_of_a_base_url_model(project: Path, tmp_path: Path) -> None:
    """The window: ``--context-window``, else the config file's, else what the server's
    ``/v1/models`` reports; the summary line shows the meter."""
    config = tmp_path / "config.toml"
    config.write_text("context_window = 60000\n")
    env = {**KEY, "ACCORD_CONFIG": str(config), "ACCORD_CONTEXT_WINDOW": None}
    info = {"fake-model": {"owned_by": "vllm", "max_model_len": 40960}}
    script = [ScriptedReply(text=["Done."]) for _ in range(3)]
    summaries: list[str] = []
    with FakeOpenAIServer(script, model_info=info) as server:
        for flags in (["--context-window", "50000"], []):
            command = ("run", *builtin(server.base_url, tmp_path / "s.db"), *flags, "hi")
            done = accord(*command, cwd=project, env=env, timeout=SLOW)
            assert done.returncode == ExitCode.OK, done.stderr
            summaries.append(done.stdout.splitlines()[-1])
        assert server.info_requests == ()  # a configured window asks the server nothing
        config.write_text("")
        command = ("run", *builtin(server.base_url, tmp_path / "s.db"), "hi")
        done = accord(*command, cwd=project, env=env, timeout=SLOW)
        assert done.returncode == ExitCode.OK, done.stderr
        summaries.append(done.stdout.splitlines()[-1])
        assert server.info_requests == (("GET", "/v1/models"),)
    windows = [re.search(r"context [\d,]+/([\d,]+) tokens", s) for s in summaries]
    assert [w.group(1) if w else s for w, s in zip(windows, summaries, strict=True)] == [
        "50,000",
        "60,000",
        "40,960",
    ]
    bad = accord("run", "--context-window", "0", "hi", cwd=project, env=env, timeout=SLOW)
    assert bad.returncode == ExitCode.USAGE
    assert "--context-window: must be a positive number of tokens: '0'" in bad.stderr


def test_mode_picks_the_session_mode(project: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["Read only."])]) as server:
        done = accord(
            "run",
            *builtin(server.base_url, tmp_path / "s.db"),
            "--mode",
            "ask",
            "--json",
            "look",
            cwd=project,
            env=KEY,
            timeout=SLOW,
        )
        offered = {tool["function"]["name"] for tool in server.requests[0].body["tools"]}
    assert done.returncode == ExitCode.OK, done.stderr
    assert "edit_file" not in offered and "read_file" in offered
    assert json_lines(done.stdout)[-1]["result"]["text"] == "Read only."


def test_an_unknown_mode_is_1_with_the_offered_ones(project: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer([]) as server:
        done = accord(
            "run",
            *builtin(server.base_url, tmp_path / "s.db"),
            "--mode",
            "yolo",
            "x",
            cwd=project,
            env=KEY,
            timeout=SLOW,
        )
    assert done.returncode == ExitCode.ERROR
    assert done.stderr == "accord: unknown --mode 'yolo': the agent offers ask, code, auto\n"


def test_continue_carries_on_the_last_session_of_the_directory(
    project: Path, tmp_path: Path
) -> None:
    store = tmp_path / "s.db"
    script = [ScriptedReply(text=["one"]), ScriptedReply(text=["two"])]
    with FakeOpenAIServer(script) as server:
        first = accord(
            "run",
            *builtin(server.base_url, store),
            "--json",
            "a",
            cwd=project,
            env=KEY,
            timeout=SLOW,
        )
        second = accord(
            "run",
            *builtin(server.base_url, store),
            "--json",
            "-c",
            "b",
            cwd=project,
            env=KEY,
            timeout=SLOW,
        )
        history = server.requests[1].messages
    assert first.returncode == second.returncode == ExitCode.OK, second.stderr
    session = json_lines(first.stdout)[-1]["result"]["sessionId"]
    assert json_lines(second.stdout)[-1]["result"]["sessionId"] == session
    assert any(m.get("content") == "one" for m in history)  # the model saw the first turn


def test_continue_without_an_earlier_session_is_1(project: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer([]) as server:
        done = accord(
            "run",
            *builtin(server.base_url, tmp_path / "s.db"),
            "-c",
            "x",
            cwd=project,
            env=KEY,
            timeout=SLOW,
        )
    assert done.returncode == ExitCode.ERROR
    assert done.stderr == f"accord: no earlier session in {project} to continue\n"

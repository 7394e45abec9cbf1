"""``accord run``: the reply as readable lines, ``--json`` as raw updates, ``--cwd``.

Every test runs the real command (``python -m accord.cli``) against an agent script in
``tests/helpers/script_agent.py`` or the echo example; stdin is not a terminal.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from _cli_support import (
    ECHO_AGENT,
    OutputReader,
    accord,
    agent,
    json_lines,
    on_a_terminal,
    start_accord,
)
from helpers.timeouts import TIMEOUT
from helpers.wire_schema import WireValidator

from accord.schema import SessionNotification

pytestmark = pytest.mark.subprocess


def test_plain_output_is_the_streamed_text_then_the_summary() -> None:
    """The stop reason in words and the session id; no colours or control codes in a pipe."""
    done = accord("run", "--agent", agent(ECHO_AGENT), "hello there, echo agent")
    assert done.returncode == 0, done.stderr
    reply, summary = done.stdout.splitlines()
    assert reply == "hello there, echo agent"
    assert re.fullmatch(r"\[done, session [0-9a-f-]{36}\]", summary)
    assert "\x1b" not in done.stdout
    assert done.stderr == ""


def test_plain_output_shows_plan_tool_call_diff_and_permission_as_lines(tmp_path: Path) -> None:
    done = accord(
        "run", "--agent", agent("workflow"), "--approve-all", "--cwd", str(tmp_path), "go"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[plan 0/2 done] now: Read config.toml",
        "Looking at config.toml.",
        "[permission?] edit: Update config.toml",
        "[permission] allowed once",
        "[tool completed] edit: Update config.toml",  # one line per tool call, once it ends
        f"--- a{tmp_path}/config.toml",
        f"+++ b{tmp_path}/config.toml",
        "@@ -1 +1 @@",
        "-debug = false",
        "+debug = true",
        "[plan 2/2 done]",
        "Permission granted: config.toml updated.",
        "[done, session workflow-1]",
    ]
    assert done.stderr == ""


def test_plain_output_streams_as_the_reply_arrives() -> None:
    """The first words are on stdout while the agent is still echoing the rest."""
    words = [f"word{n}" for n in range(1, 11)]
    process = start_accord(
        "run", "--agent", agent(ECHO_AGENT), " ".join(words), env={"ECHO_DELAY": "0.3"}
    )
    try:
        assert process.stdout is not None
        out = OutputReader(process.stdout.fileno())
        early = out.wait_for("word2")
        assert words[-1] not in early
        assert process.poll() is None  # still running: the output was not held back
        assert out.read_to_end().startswith(" ".join(words) + "\n[done, session ")
        assert process.wait(timeout=TIMEOUT) == 0
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
        for stream in (process.stdout, process.stderr):
            assert stream is not None
            stream.close()


def test_json_prints_each_update_as_one_json_line(
    tmp_path: Path, wire_validator: WireValidator
) -> None:
    done = accord(
        "run",
        "--agent",
        agent("workflow"),
        "--approve-all",
        "--json",
        "--cwd",
        str(tmp_path),
        "go",
    )
    assert done.returncode == 0, done.stderr
    *lines, result = json_lines(done.stdout)
    assert result == {
        "result": {
            "exitCode": 0,
            "stopReason": "end_turn",
            "sessionId": "workflow-1",
            "usage": None,
            "text": "Looking at config.toml.Permission granted: config.toml updated.",
            "error": None,
        }
    }
    for line in lines:
        assert set(line) == {"sessionId", "update"}
        assert line["sessionId"] == "workflow-1"
        wire_validator.check_def("SessionNotification", line)
        SessionNotification.model_validate(line)
    assert [line["update"]["sessionUpdate"] for line in lines] == [
        "plan",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "agent_message_chunk",
    ]
    diff = lines[3]["update"]["content"][0]
    assert diff == {
        "type": "diff",
        "path": f"{tmp_path}/config.toml",
        "oldText": "debug = false\n",
        "newText": "debug = true\n",
    }
    assert lines[-1]["update"]["content"]["text"] == "Permission granted: config.toml updated."
    assert done.stderr == ""


def test_json_text_chunks_add_up_to_the_reply() -> None:
    done = accord("run", "--json", "--agent", agent(ECHO_AGENT), "a few words here")
    assert done.returncode == 0, done.stderr
    *lines, result = json_lines(done.stdout)
    assert result["result"]["text"] == "a few words here"
    assert {line["update"]["sessionUpdate"] for line in lines} == {"agent_message_chunk"}
    assert "".join(line["update"]["content"]["text"] for line in lines) == "a few words here"


def test_json_keeps_permission_notices_off_stdout() -> None:
    """Refused without a terminal: the notice goes to stderr, stdout stays pure JSON."""
    done = accord("run", "--json", "--agent", agent("workflow"), "go")
    assert done.returncode == 4
    *lines, result = json_lines(done.stdout)
    assert result["result"]["exitCode"] == 4
    assert all(set(line) == {"sessionId", "update"} for line in lines)
    assert lines[-1]["update"]["content"]["text"] == "Permission refused (reject): nothing changed."
    assert "permission requests are refused" in done.stderr


def test_cwd_is_the_session_cwd(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    done = accord("run", "--agent", agent("cwd"), "--cwd", str(project), "where?")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"session cwd: {project}"


def test_relative_cwd_is_made_absolute(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "sub").mkdir()
    done = accord("run", "--agent", agent("cwd"), "--cwd", "sub", "where?", cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"session cwd: {root / 'sub'}"


def test_without_cwd_the_session_cwd_is_the_current_directory(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    done = accord("run", "--agent", agent("cwd"), "where?", cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"session cwd: {root}"


def test_a_missing_cwd_is_a_local_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    done = accord("run", "--agent", agent("cwd"), "--cwd", str(missing), "where?")
    assert done.returncode == 1
    assert done.stderr == f"accord: --cwd {missing} is not a directory\n"
    assert done.stdout == ""


def test_json_ends_with_a_result_record_even_when_the_agent_fails() -> None:
    done = accord("run", "--json", "--agent", agent("crash", "--exit", "7"), "hello")
    assert done.returncode == 3
    *_, result = json_lines(done.stdout)
    record = result["result"]
    assert (record["exitCode"], record["stopReason"]) == (3, None)
    assert "exited with code 7" in record["error"]
    assert done.stderr.startswith("accord: ")


def test_the_usage_the_agent_reports_ends_the_run() -> None:
    """Token counts from ``PromptResponse.usage``, then the context meter (the last
    ``usage_update``), end the summary line; the counts end the ``--json`` result; an agent
    that reports nothing gets no figures (none are made up)."""
    done = accord("run", "--agent", agent("usage"), "hi")
    assert done.returncode == 0, done.stderr
    summary = done.stdout.splitlines()[-1]
    assert summary == (
        "[done, session usage-1, 1,534 tokens (1,200 in, 334 out, 50 thinking), "
        "context 12,345/200,000 tokens (6%)]"
    )
    priced = accord("run", "--agent", agent("usage", "--cost"), "hi")
    assert priced.stdout.splitlines()[-1].endswith("(6%), cost 0.0123 USD]"), priced.stdout

    done = accord("run", "--agent", agent("usage"), "--json", "hi")
    assert json_lines(done.stdout)[-1]["result"]["usage"] == {
        "totalTokens": 1534,
        "inputTokens": 1200,
        "outputTokens": 334,
        "thoughtTokens": 50,
    }

    done = accord("run", "--agent", agent("usage", "--no-usage"), "hi")
    assert done.stdout.splitlines()[-1] == "[done, session usage-1]"
    done = accord("run", "--agent", agent("usage", "--no-usage"), "--json", "hi")
    assert json_lines(done.stdout)[-1]["result"]["usage"] is None


def test_mode_uses_the_mode_config_option_of_an_agent_without_modes() -> None:
    done = accord("run", "--agent", agent("mode_option"), "--mode", "code", "which mode?")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "mode: code"
    unknown = accord("run", "--agent", agent("mode_option"), "--mode", "yolo", "x")
    assert unknown.returncode == 1
    assert unknown.stderr == "accord: unknown --mode 'yolo': the agent offers ask, code\n"


def test_auth_signs_in_with_an_agent_method_and_says_which_methods_exist() -> None:
    # issue 26: agent-type auth methods are used with --auth; without one, the error lists them
    done = accord("run", "--agent", agent("signin"), "--auth", "token", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "signed in with token"
    needed = accord("run", "--agent", agent("signin"), "hello")
    assert needed.returncode == 3
    assert needed.stderr == (
        "accord: the agent needs you to sign in first: the agent offers token (agent: Use the"
        " saved token); run again with --auth METHOD\n"
    )
    unknown = accord("run", "--agent", agent("signin"), "--auth", "nope", "hello")
    assert unknown.returncode == 1
    assert unknown.stderr == (
        "accord: unknown --auth 'nope': the agent offers token (agent: Use the saved token)\n"
    )
    terminal = accord("run", "--agent", agent("signin", "--terminal"), "hello")
    assert terminal.returncode == 3
    assert "setup (terminal: Set up)" in terminal.stderr
    assert "offered when accord run runs on a terminal" in terminal.stderr
    both = accord("run", "--agent", agent("signin", "--both"), "hello")
    assert both.returncode == 3
    assert both.stderr == (
        "accord: the agent needs you to sign in first: the agent offers setup (terminal: Set"
        " up), token (agent: Use the saved token); run again with --auth METHOD; terminal"
        " methods are offered when accord run runs on a terminal\n"
    )


def test_on_a_terminal_the_auth_methods_are_offered_numbered_and_the_chosen_one_used() -> None:
    # issue 26: no --auth, session/new answers -32000: the agent's methods are listed on the
    # terminal; an agent method chosen is sent as authenticate and session/new is tried again
    command = agent("signin", "--both")
    with on_a_terminal("run", "--agent", command, "hello") as (process, out, keys):
        out.wait_for("Sign in with one now? (number, Enter = 1, n = no): ")
        assert "  1. Set up (runs in this terminal)\n" in out.text
        assert "  2. Use the saved token (agent)\n" in out.text
        os.write(keys, b"2\r")
        out.wait_for("signed in with token")
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == 0, out.text


def test_on_a_terminal_declining_to_sign_in_names_the_methods() -> None:
    with on_a_terminal("run", "--agent", agent("signin"), "hello") as (process, out, keys):
        out.wait_for("  1. Use the saved token (agent)\n")
        out.wait_for("Sign in with one now?")
        os.write(keys, b"n\r")
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == 3, out.text
    assert "the agent offers token (agent: Use the saved token); run again with --auth" in (
        out.text
    )
    assert "signed in with token" not in out.text

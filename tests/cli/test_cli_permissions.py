"""``accord run`` and permission requests: ``--approve-all``, ``--deny-all``, the refusal
without a terminal, and the question asked on a real (pseudo-)terminal.

The agent (``workflow`` of ``tests/helpers/script_agent.py``) asks to edit ``config.toml`` and
says in its last line whether it was allowed; a refused permission makes the exit code 4.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pyte
import pytest
from _cli_support import accord, agent, on_a_terminal
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode

pytestmark = pytest.mark.subprocess

GRANTED = "Permission granted: config.toml updated."
NO_TERMINAL = (
    "accord: stdin is not a terminal, so permission requests are refused "
    "(use --approve-all to allow them)\n"
)


@pytest.mark.parametrize(
    ("flags", "chosen", "agent_says", "exit_code"),
    [
        (["--approve-all"], "allowed once", GRANTED, ExitCode.OK),
        (["--deny-all"], "refused", "Permission refused (reject): nothing changed.", 4),
        ([], "refused", "Permission refused (reject): nothing changed.", 4),
    ],
    ids=["approve-all", "deny-all", "no-terminal"],
)
def test_permission_policy_decides_and_sets_the_exit_code(
    flags: list[str], chosen: str, agent_says: str, exit_code: int
) -> None:
    done = accord("run", "--agent", agent("workflow"), *flags, "go")
    assert done.returncode == exit_code, done.stderr
    lines = done.stdout.splitlines()
    assert f"[permission] {chosen}" in lines
    assert lines[-2:] == [agent_says, "[done, session workflow-1]"]
    assert done.stderr == ("" if flags else NO_TERMINAL)


def test_refused_permission_exit_code_is_documented() -> None:
    assert ExitCode.PERMISSION_REFUSED == 4


def test_without_a_terminal_the_refusal_notice_is_given_once() -> None:
    done = accord("run", "--agent", agent("workflow", "--twice"), "go")
    assert done.returncode == ExitCode.PERMISSION_REFUSED
    assert done.stdout.splitlines().count("[permission] refused") == 2
    assert done.stderr == NO_TERMINAL


def test_deny_all_refuses_every_request() -> None:
    done = accord("run", "--agent", agent("workflow", "--twice"), "--deny-all", "go")
    assert done.returncode == ExitCode.PERMISSION_REFUSED
    assert done.stdout.splitlines().count("[permission] refused") == 2
    assert done.stderr == ""


def test_approve_all_and_deny_all_exclude_each_other() -> None:
    done = accord("run", "--agent", agent("workflow"), "--approve-all", "--deny-all", "go")
    assert done.returncode == ExitCode.USAGE
    assert "not allowed with argument" in done.stderr
    assert done.stdout == ""


BEFORE_THE_QUESTION = [
    "[plan 0/2 done] now: Read config.toml",
    "Looking at config.toml.",
    "· edit: Update config.toml (pending)",
    "[permission?] edit: Update config.toml",
]
QUESTION = "Allow edit: Update config.toml? [y]es / [a]lways / [n]o: "
RE_ASK = "Please answer one of: y, a, n"
#: The terminal's language: UTF-8, so the marks are the Unicode ones.
UTF8 = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


def screen_lines(data: bytes) -> list[str]:
    """What the terminal shows: the non-empty lines of a pyte screen fed ``data``."""
    screen = pyte.Screen(160, 60)
    pyte.ByteStream(screen).feed(data)
    return [
        line.rstrip()
        for line in screen.display
        if line.strip() and not line.startswith("accord: waiting for ")
    ]


@pytest.mark.parametrize(
    ("answers", "chosen", "granted"),
    [
        (["y"], "allowed once", True),
        (["a"], "allowed always", True),
        (["n"], "refused", False),
        (["", "9", "yes please", "y"], "allowed once", True),
        (["N", "no"], "refused", False),
    ],
    ids=["yes", "always", "no", "re-asked-until-valid", "absent-never-re-asked"],
)
def test_on_a_terminal_the_question_is_asked(
    tmp_path: Path, answers: list[str], chosen: str, granted: bool
) -> None:
    """The question comes after the lines leading up to it, by option kind; re-asked on
    anything else; the answer decides."""
    command = ("run", "--agent", agent("workflow"), "--cwd", str(tmp_path), "go")
    with on_a_terminal(*command, env=UTF8) as (process, out, keys):
        for answer in answers:
            asked = out.text.count(QUESTION)
            out.wait_for(lambda text, asked=asked: text.count(QUESTION) > asked)
            os.write(keys, answer.encode() + b"\n")
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == (0 if granted else 4)
    if granted:
        outcome = [
            "✓ edit: Update config.toml",
            f"--- a{tmp_path}/config.toml",
            f"+++ b{tmp_path}/config.toml",
            "@@ -1 +1 @@",
            "-debug = false",
            "+debug = true",
            "[plan 2/2 done]",
            GRANTED,
        ]
    else:
        outcome = ["✗ edit: Update config.toml", "Permission refused (reject): nothing changed."]
    asked: list[str] = []
    for answer in answers:
        asked += [f"{QUESTION}{answer}".rstrip(), RE_ASK]
    assert screen_lines(out.data) == [
        *BEFORE_THE_QUESTION,
        *asked[:-1],  # the terminal echoes what was typed
        f"[permission] {chosen}",
        *outcome,
        "[done, session workflow-1]",
    ]


def test_end_of_input_at_the_question_refuses(tmp_path: Path) -> None:
    command = ("run", "--agent", agent("workflow"), "--cwd", str(tmp_path), "go")
    with on_a_terminal(*command, env=UTF8) as (process, out, keys):
        out.wait_for(QUESTION)
        os.write(keys, b"\x04")  # Ctrl-D
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == ExitCode.PERMISSION_REFUSED
    assert "[permission] refused" in screen_lines(out.data)


def test_ctrl_c_during_the_question_cancels_the_turn_and_exits(tmp_path: Path) -> None:
    """The abandoned question does not keep ``accord`` alive waiting for a line."""
    command = ("run", "--agent", agent("workflow"), "--cwd", str(tmp_path), "go")
    with on_a_terminal(*command, env=UTF8) as (process, out, _):
        out.wait_for(QUESTION)
        process.send_signal(signal.SIGINT)
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == ExitCode.CANCELLED
    assert screen_lines(out.data) == [
        *BEFORE_THE_QUESTION,
        QUESTION.rstrip(),
        "accord: cancelling (Ctrl-C again to quit now)",
        "[permission] cancelled",
        "✗ edit: Update config.toml",
        "Permission refused (cancelled): nothing changed.",
        "[cancelled, session workflow-1]",
    ]


ODD_QUESTION = "Allow edit: Update config.toml? [n]o / [1] Go ahead: "


def test_approve_all_never_picks_an_option_of_unknown_kind() -> None:
    """The agent's only allowing option has no kind: ``--approve-all`` cannot know it allows."""
    done = accord("run", "--agent", agent("workflow", "--odd-kinds"), "--approve-all", "go")
    lines = done.stdout.splitlines()
    assert "[permission] cancelled" in lines, done.stderr
    assert lines[-2:] == [
        "Permission refused (cancelled): nothing changed.",
        "[done, session workflow-1]",
    ]


def test_on_a_terminal_an_option_of_unknown_kind_is_offered_by_number(tmp_path: Path) -> None:
    command = (
        "run",
        "--agent",
        agent("workflow", "--odd-kinds"),
        "--cwd",
        str(tmp_path),
        "go",
    )
    with on_a_terminal(*command, env=UTF8) as (process, out, keys):
        out.wait_for(ODD_QUESTION)
        os.write(keys, b"1\n")
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == 0
    lines = screen_lines(out.data)
    assert f"{ODD_QUESTION}1" in lines
    assert "[permission] chosen (of an unknown kind)" in lines
    assert lines[-2:] == [GRANTED, "[done, session workflow-1]"]


BLUNT = Path(__file__).resolve().parents[1] / "helpers" / "blunt_agent.py"


def test_deny_all_hosts_no_writes_or_terminals_for_an_agent_that_never_asks(
    tmp_path: Path,
) -> None:
    done = accord("run", "--agent", agent(BLUNT), "--cwd", str(tmp_path), "--deny-all", "go")
    assert done.returncode == ExitCode.OK, done.stderr
    lines = done.stdout.splitlines()
    # Not advertised, and refused when sent anyway; nothing changed on disk.
    assert "advertised write=False terminal=False" in lines
    assert any(
        line.startswith("write: refused -32601") and "not offered by this client" in line
        for line in lines
    ), lines
    assert any(
        line.startswith("terminal: refused -32601") and "not offered by this client" in line
        for line in lines
    ), lines
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_without_deny_all_the_same_agent_may_write_inside_the_session(tmp_path: Path) -> None:
    done = accord("run", "--agent", agent(BLUNT), "--cwd", str(tmp_path), "go")
    assert done.returncode == ExitCode.OK, done.stderr
    lines = done.stdout.splitlines()
    assert "advertised write=True terminal=True" in lines
    assert "write: ok" in lines and "terminal: ok" in lines
    assert (tmp_path / "written.txt").read_text() == "written without asking\n"


def test_deny_all_says_what_it_refuses_in_help() -> None:
    done = accord("run", "--help")
    text = " ".join(done.stdout.split())
    assert "--deny-all refuse every tool call, and host no file writes or terminals" in text


def test_deny_all_still_serves_reads_inside_the_session(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("kept\n")
    request = json.dumps({"read": str(tmp_path / "notes.txt")})
    done = accord("run", "--agent", agent("dirs"), "--cwd", str(tmp_path), "--deny-all", request)
    assert done.returncode == ExitCode.OK, done.stderr
    assert f"read {tmp_path / 'notes.txt'}: ok kept" in done.stdout.splitlines()

"""``accord run`` and permission requests: ``--approve-all``, ``--deny-all``, the refusal
without a terminal, and the question asked on a real (pseudo-)terminal.

The agent (``agents/workflow_agent.py``) asks to edit ``config.toml`` and says in its last
line whether it was allowed; a refused permission makes the exit code 4.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _cli_support import TIMEOUT, OutputReader, accord, agent, start_accord

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
        (["--approve-all"], "Allow once", GRANTED, ExitCode.OK),
        (["--deny-all"], "Reject", "Permission refused (reject): nothing changed.", 4),
        ([], "Reject", "Permission refused (reject): nothing changed.", 4),
    ],
    ids=["approve-all", "deny-all", "no-terminal"],
)
def test_permission_policy_decides_and_sets_the_exit_code(
    flags: list[str], chosen: str, agent_says: str, exit_code: int
) -> None:
    done = accord("run", "--agent", agent("workflow_agent"), *flags, "go")
    assert done.returncode == exit_code, done.stderr
    lines = done.stdout.splitlines()
    assert f"[permission] {chosen}" in lines
    assert lines[-2:] == [agent_says, "[end_turn]"]
    assert done.stderr == ("" if flags else NO_TERMINAL)


def test_refused_permission_exit_code_is_documented() -> None:
    assert ExitCode.PERMISSION_REFUSED == 4


def test_without_a_terminal_the_refusal_notice_is_given_once() -> None:
    done = accord("run", "--agent", agent("workflow_agent", "--twice"), "go")
    assert done.returncode == ExitCode.PERMISSION_REFUSED
    assert done.stdout.splitlines().count("[permission] Reject") == 2
    assert done.stderr == NO_TERMINAL


def test_deny_all_refuses_every_request() -> None:
    done = accord("run", "--agent", agent("workflow_agent", "--twice"), "--deny-all", "go")
    assert done.returncode == ExitCode.PERMISSION_REFUSED
    assert done.stdout.splitlines().count("[permission] Reject") == 2
    assert done.stderr == ""


def test_approve_all_and_deny_all_exclude_each_other() -> None:
    done = accord("run", "--agent", agent("workflow_agent"), "--approve-all", "--deny-all", "go")
    assert done.returncode == ExitCode.USAGE
    assert "not allowed with argument" in done.stderr
    assert done.stdout == ""


@contextmanager
def on_a_terminal(*args: str) -> Iterator[tuple[subprocess.Popen[bytes], OutputReader, int]]:
    """Run ``accord ARGS`` with stdin, stdout and stderr on a pseudo-terminal.

    Yields the process, a reader of everything it shows, and the terminal's master side to
    type into. The terminal is closed, and the process killed if still running, on exit.
    """
    master, slave = pty.openpty()
    try:
        process = start_accord(
            *args, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
        )
    finally:
        os.close(slave)
    try:
        yield process, OutputReader(master), master
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


BEFORE_THE_QUESTION = [
    "[plan 0/2 done] now: Read config.toml",
    "Looking at config.toml.",
    "[tool pending] edit: Update config.toml",
    "[permission?] edit: Update config.toml (Allow once, Always allow, Reject)",
    "",
    "The agent asks permission: Update config.toml (edit)",
    "  1. Allow once [allow_once]",
    "  2. Always allow [allow_always]",
    "  3. Reject [reject_once]",
]
PROMPT = "Choose a number (Enter = refuse): "


@pytest.mark.parametrize(
    ("answer", "chosen", "granted"),
    [
        ("1", "Allow once", True),
        ("2", "Always allow", True),
        ("3", "Reject", False),
        ("", "Reject", False),
        ("9", "Reject", False),
    ],
    ids=["allow-once", "allow-always", "reject", "enter", "out-of-range"],
)
def test_on_a_terminal_the_question_is_asked(
    tmp_path: Path, answer: str, chosen: str, granted: bool
) -> None:
    """The question comes after the lines leading up to it; the answer decides."""
    command = ("run", "--agent", agent("workflow_agent"), "--cwd", str(tmp_path), "go")
    with on_a_terminal(*command) as (process, out, keys):
        out.wait_for(PROMPT)
        os.write(keys, answer.encode() + b"\n")
        screen = out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == (0 if granted else 4)
    if granted:
        outcome = [
            f"[tool completed] edit: Update config.toml (edits {tmp_path}/config.toml)",
            "[plan 2/2 done]",
            GRANTED,
        ]
    else:
        outcome = [
            "[tool failed] edit: Update config.toml",
            "Permission refused (reject): nothing changed.",
        ]
    assert screen.splitlines() == [
        *BEFORE_THE_QUESTION,
        PROMPT + answer,  # the terminal echoes what was typed
        f"[permission] {chosen}",
        *outcome,
        "[end_turn]",
    ]


def test_ctrl_c_during_the_question_cancels_the_turn_and_exits(tmp_path: Path) -> None:
    """The abandoned question does not keep ``accord`` alive waiting for a line."""
    command = ("run", "--agent", agent("workflow_agent"), "--cwd", str(tmp_path), "go")
    with on_a_terminal(*command) as (process, out, _):
        out.wait_for(PROMPT)
        process.send_signal(signal.SIGINT)
        screen = out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == ExitCode.CANCELLED
    assert screen.splitlines() == [
        *BEFORE_THE_QUESTION,
        PROMPT,
        "accord: cancelling (Ctrl-C again to quit now)",
        "[permission] cancelled",
        "[tool failed] edit: Update config.toml",
        "Permission refused (cancelled): nothing changed.",
        "[cancelled]",
    ]

"""Terminal-escape injection (issue 12, finding 10): nothing an agent sends is obeyed by the
terminal ``accord`` writes to, and the permission question shows the options' real kinds.

The ``hostile`` agent of ``tests/helpers/script_agent.py`` puts an OSC 52 clipboard write, an
OSC 0 window title, cursor movement, a C1 CSI, BEL and a bidi override into its reply, thought,
title, tool title, command, path, diff, stderr and session list, and offers an ``allow_always``
option *named* "Deny" (with "allow always" hidden by ``ESC[8m``). ``accord`` runs on a real
pseudo-terminal; the tests check the bytes it wrote (only accord's own colour and line-erase
codes may be there) and what a terminal emulator (pyte) shows.
"""

from __future__ import annotations

import os
import re

import pyte
import pytest
from _cli_support import accord, agent, on_a_terminal
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode

pytestmark = pytest.mark.subprocess

HOSTILE = agent("hostile")
#: accord's own control codes: its colours (SGR) and the erase-line of in-place updates.
OWN_CODES = re.compile(r"\x1b\[(?:0|1|2|31|32|33|36)m|\r\x1b\[2K")
#: Anything else a terminal would act on.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
UTF8 = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


def foreign_controls(data: bytes) -> list[str]:
    """The control characters in ``data`` that are not accord's own codes or line ends."""
    text = data.decode("utf-8", errors="strict")  # the terminal gets valid UTF-8 only
    text = OWN_CODES.sub("", text).replace("\r\n", "\n")
    return sorted({repr(c) for c in CONTROL.findall(text)})


def screen_lines(data: bytes) -> list[str]:
    """What a terminal shows after ``data``: the non-empty lines of a 200x80 screen.

    The notice a slow start brings (``accord: waiting for ...``, timing-dependent on a busy
    machine) is left out.
    """
    screen = pyte.Screen(200, 80)
    pyte.ByteStream(screen).feed(data)
    return [
        line.rstrip()
        for line in screen.display
        if line.strip() and not line.startswith("accord: waiting for ")
    ]


@pytest.mark.parametrize("colour", [True, False], ids=["colour", "NO_COLOR"])
def test_the_agent_cannot_drive_the_terminal(colour: bool) -> None:
    env = {**UTF8, **({} if colour else {"NO_COLOR": "1"})}
    with on_a_terminal("run", "--agent", HOSTILE, "go", env=env) as (process, out, keys):
        out.wait_for("[n]o: ")
        os.write(keys, b"n\n")
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == ExitCode.PERMISSION_REFUSED
    assert foreign_controls(out.data) == []
    if not colour:
        assert b"\x1b[0m" not in out.data and b"\x1b[2m" not in out.data
    lines = screen_lines(out.data)
    shown = "\n".join(lines)
    # The screen was not cleared: the first line is still there, and every attack is text.
    assert lines[0].startswith("(thinking)")
    assert "reply^[]52;c;cm0gLXJmIH4=^G^[]0;pwned^[\\^[[2J^[[H^[[3A\\x9b31m^G\\u202e" in shown
    assert "[title] title^[]52;c;" in shown
    assert "[permission?] execute: Run ^[[8msomething else^[[2J^[[H^[[3A" in shown
    assert "  command: ls^[[2J^[[H^[[3A; true^[]52;c;cm0gLXJmIH4=^G" in shown
    assert "  path: /tmp/^[]52;c;cm0gLXJmIH4=^Gx" in shown
    assert "+new^[]52;c;cm0gLXJmIH4=^G" in shown  # the diff, before the question
    assert shown.index("+new^[]52") < shown.index("[n]o: ")
    assert "chosen: reject" in shown


@pytest.mark.parametrize(
    ("typed", "chosen"),
    [(["n"], "reject"), (["1", "2", "y", "N", "n"], "reject"), (["a"], "sneaky")],
    ids=["no", "numbers-and-absent-kinds-are-asked-again", "always"],
)
def test_the_question_offers_the_real_option_kinds(typed: list[str], chosen: str) -> None:
    """The option named "Deny" is offered as what it is: [a]lways. Its number selects nothing."""
    with on_a_terminal("run", "--agent", HOSTILE, "go", env=UTF8) as (process, out, keys):
        for answer in typed:
            asked = out.text.count("[a]lways / [n]o: ")
            out.wait_for(lambda text, asked=asked: text.count("[a]lways / [n]o: ") > asked)
            os.write(keys, answer.encode() + b"\n")
        out.read_to_end()
        expected = ExitCode.OK if chosen == "sneaky" else ExitCode.PERMISSION_REFUSED
        assert process.wait(timeout=TIMEOUT) == expected
    lines = screen_lines(out.data)
    questions = [line for line in lines if line.startswith("Allow ")]
    assert questions == [
        f"Allow execute: Run ^[[8msomething else^[[2J^[[H^[[3A? [a]lways / [n]o: {answer}"
        for answer in typed
    ]
    assert lines.count("Please answer one of: a, n") == len(typed) - 1
    assert f"chosen: {chosen}" in lines
    verdict = "allowed always" if chosen == "sneaky" else "refused"
    assert f"[permission] {verdict}" in lines
    assert not any("Deny" in line for line in questions)


def test_the_crash_message_shows_the_agents_stderr_neutralised() -> None:
    crashing = agent("hostile", "--crash")
    with on_a_terminal("run", "--agent", crashing, "go", env=UTF8) as (process, out, _):
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == ExitCode.AGENT_FAILED
    assert foreign_controls(out.data) == []
    shown = "\n".join(screen_lines(out.data))
    assert "exited with code 1; the end of its stderr:" in shown
    assert "dying^[]52;c;cm0gLXJmIH4=^G^[]0;pwned^[\\^[[2J^[[H^[[3A\\x9b31m^G\\u202e" in shown


def test_verbose_logs_of_the_agents_stderr_are_neutralised() -> None:
    crashing = agent("hostile", "--crash")
    with on_a_terminal("-v", "run", "--agent", crashing, "go", env=UTF8) as (process, out, _):
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == ExitCode.AGENT_FAILED
    assert foreign_controls(out.data) == []
    assert "INFO accord.agent.stderr: [agent" in out.text


def test_sessions_lists_ids_titles_and_directories_neutralised() -> None:
    with on_a_terminal("sessions", "--agent", HOSTILE, env=UTF8) as (process, out, _):
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == ExitCode.OK
    assert foreign_controls(out.data) == []
    assert screen_lines(out.data) == [
        "s^[]52;c;cm0gLXJmIH4=^G1  -  t^[]0;pwned^[\\^[[8mx  [/tmp^[[2J^[[H^[[3A]"
    ]


def test_piped_output_carries_no_control_codes_at_all() -> None:
    """Not a terminal: no colours either, and the attacks as text."""
    done = accord("run", "--agent", HOSTILE, "--deny-all", "go")
    assert done.returncode == ExitCode.PERMISSION_REFUSED
    assert CONTROL.findall(done.stdout.replace("\n", "")) == []
    assert CONTROL.findall(done.stderr.replace("\n", "")) == []
    assert "reply^[]52;c;cm0gLXJmIH4=^G" in done.stdout

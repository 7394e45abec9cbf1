"""The exit codes of ``accord run``, each reached for real: 0 done, 1 local error, 2 usage,
3 agent failed, 4 permission refused (see ``test_cli_permissions``), 5 refusal, 130 Ctrl-C.

Ctrl-C is a SIGINT sent to the ``accord`` process only (the agent runs in a session of its
own, as it would on a terminal), once the output shows the turn is under way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cli_support import ECHO_AGENT, OutputReader, accord, agent, start_accord
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode

pytestmark = pytest.mark.subprocess


def test_exit_codes_are_the_documented_ones() -> None:
    assert {code.name: int(code) for code in ExitCode} == {
        "OK": 0,
        "ERROR": 1,
        "USAGE": 2,
        "AGENT_FAILED": 3,
        "PERMISSION_REFUSED": 4,
        "REFUSED": 5,
        "CANCELLED": 130,
    }


def test_done_is_0() -> None:
    done = accord("run", "--agent", agent(ECHO_AGENT), "all good")
    assert done.returncode == ExitCode.OK
    assert done.stdout.startswith("all good\n[done, session ")


def test_refusal_is_5() -> None:
    done = accord("run", "--agent", agent("refusal"), "do something bad")
    assert done.returncode == ExitCode.REFUSED
    assert done.stdout.startswith(
        "I cannot help with that.\n[the agent refused the prompt (refusal), session "
    )
    assert done.stderr == ""


def test_agent_crash_mid_turn_is_3_with_its_exit_code_and_stderr() -> None:
    command = agent("crash", "--exit", "7")
    done = accord("run", "--agent", command, "hello")
    assert done.returncode == ExitCode.AGENT_FAILED
    assert done.stdout == "partial\n"  # what arrived, with its line ended
    assert done.stderr.startswith(f"accord: {command!r} exited with code 7; the end of its")
    assert "RuntimeError: model exploded" in done.stderr  # the tail of the agent's stderr


def test_agent_error_answer_is_3() -> None:
    done = accord("run", "--agent", agent("crash", "--error"), "hello")
    assert done.returncode == ExitCode.AGENT_FAILED
    assert done.stdout == "partial\n"
    assert "model exploded" in done.stderr
    assert "-32603" in done.stderr


def test_agent_exiting_before_initialize_is_3() -> None:
    command = f"{sys.executable} -c 'import sys; sys.exit(9)'"
    done = accord("run", "--agent", command, "hello")
    assert done.returncode == ExitCode.AGENT_FAILED
    assert "exited with code 9" in done.stderr
    assert done.stdout == ""


def test_missing_agent_program_is_3_with_a_clear_message(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-agent"
    done = accord("run", "--agent", f"{missing} --acp", "hello")
    assert done.returncode == ExitCode.AGENT_FAILED
    assert done.stderr == (
        f"accord: '{missing} --acp' could not be started: No such file or directory: {missing}\n"
    )
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "accord: --agent is empty: give an agent name or its command line\n"),
        ("   ", "accord: --agent is empty: give an agent name or its command line\n"),
        (
            "'unbalanced",
            'accord: --agent "\'unbalanced" is not a valid command line: No closing quotation\n',
        ),
    ],
    ids=["empty", "blank", "unbalanced-quote"],
)
def test_bad_agent_command_line_is_1(value: str, message: str) -> None:
    """Never the built-in agent: an empty ``--agent`` is a mistake, said so."""
    done = accord("run", "--agent", value, "hello")
    assert done.returncode == ExitCode.ERROR
    assert done.stderr == message
    assert done.stdout == ""


def test_unparsable_command_line_is_2() -> None:
    done = accord("run", "--agent", agent(ECHO_AGENT), "--frobnicate", "hi")
    assert done.returncode == ExitCode.USAGE
    assert "unrecognized arguments: --frobnicate" in done.stderr


def test_options_are_never_abbreviated() -> None:
    """``--mod`` is not taken for ``--model`` (nor ``--mode``)."""
    done = accord("run", "--agent", agent(ECHO_AGENT), "--mod", "x", "hi")
    assert done.returncode == ExitCode.USAGE
    assert "unrecognized arguments: --mod" in done.stderr


# ---------------------------------------------------------------------- Ctrl-C


def _finish(process: subprocess.Popen[bytes]) -> tuple[str, str]:
    """Read the rest of a process's output and wait for it; kill it on a time-out."""
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        out = OutputReader(process.stdout.fileno()).read_to_end()
        err = OutputReader(process.stderr.fileno()).read_to_end()
        process.wait(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
    return out, err


def test_ctrl_c_sends_session_cancel_and_exits_130() -> None:
    words = [f"word{n}" for n in range(1, 41)]
    process = start_accord(
        "run", "--agent", agent(ECHO_AGENT), " ".join(words), env={"ECHO_DELAY": "0.2"}
    )
    assert process.stdout is not None
    stdout = OutputReader(process.stdout.fileno())
    early = stdout.wait_for("word2")
    process.send_signal(signal.SIGINT)
    rest, err = _finish(process)
    out = early + rest
    assert process.returncode == ExitCode.CANCELLED
    assert err == "accord: cancelling (Ctrl-C again to quit now)\n"
    # The echo agent answers "cancelled" only when session/cancel reached it in the turn.
    reply, summary = out.removesuffix("\n").rsplit("\n", 1)
    assert summary.startswith("[cancelled, session ")
    assert words[-1] not in out
    streamed = reply.split()
    assert streamed == words[: len(streamed)]


@pytest.fixture
def ready_pipe(tmp_path: Path) -> Iterator[tuple[Path, OutputReader]]:
    """A named pipe for the ``stuck`` script agent and a reader of its side.

    The agent writes ``ready PID`` when it is stuck and keeps the pipe open while it lives,
    so end of file on the pipe means the agent process is gone.
    """
    path = tmp_path / "ready.fifo"
    os.mkfifo(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        yield path, OutputReader(fd)
    finally:
        os.close(fd)


def test_second_ctrl_c_quits_without_waiting_for_the_agent(
    ready_pipe: tuple[Path, OutputReader],
) -> None:
    """The agent ignores session/cancel: the second Ctrl-C leaves, and stops the agent."""
    fifo, ready = ready_pipe
    process = start_accord("run", "--agent", agent("stuck", str(fifo)), "hello")
    assert process.stderr is not None
    ready.wait_for("ready")
    process.send_signal(signal.SIGINT)
    stderr = OutputReader(process.stderr.fileno())
    stderr.wait_for("Ctrl-C again to quit now")
    process.send_signal(signal.SIGINT)
    out, err = _finish(process)
    assert process.returncode == ExitCode.CANCELLED
    assert out == "working\n"  # no stop reason: the turn never ended
    assert stderr.text + err == (
        "accord: cancelling (Ctrl-C again to quit now)\n"
        "accord: quit without waiting for the agent\n"
    )
    ready.read_to_end()  # end of file: the agent process has exited


def test_ctrl_c_before_the_turn_exits_130_without_a_traceback(
    ready_pipe: tuple[Path, OutputReader],
) -> None:
    """Interrupted while the agent initializes (say, a slow ``npx`` download)."""
    fifo, ready = ready_pipe
    command = agent("stuck", str(fifo), "--in", "initialize")
    process = start_accord("run", "--agent", command, "hello")
    ready.wait_for("ready")
    process.send_signal(signal.SIGINT)
    out, err = _finish(process)
    assert process.returncode == ExitCode.CANCELLED
    assert out == ""
    assert err == "\naccord: interrupted\n"
    ready.read_to_end()  # the agent process has exited


def test_ctrl_c_in_accord_sessions_exits_130(ready_pipe: tuple[Path, OutputReader]) -> None:
    fifo, ready = ready_pipe
    command = agent("stuck", str(fifo), "--in", "initialize")
    process = start_accord("sessions", "--agent", command)
    ready.wait_for("ready")
    process.send_signal(signal.SIGINT)
    out, err = _finish(process)
    assert process.returncode == ExitCode.CANCELLED
    assert (out, err) == ("", "\naccord: interrupted\n")
    ready.read_to_end()

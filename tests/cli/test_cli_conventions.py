"""The command line's conventions: ``--version``, the prompt from stdin or ``--file``, ``-q``,
agent names and the config file, ``--timeout``, ``--help`` and shell completion; and every
kind of bad input getting one clear line and its documented exit code.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pyte
import pytest
from _cli_support import ACCORD, ECHO_AGENT, ROOT, accord, agent, on_a_terminal
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode

pytestmark = pytest.mark.subprocess

ECHO = agent(ECHO_AGENT)


def run_with_stdin(
    *args: str, stdin: str, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    from _cli_support import _env

    return subprocess.run(
        [*ACCORD, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(env),
        timeout=TIMEOUT,
        check=False,
    )


def test_version() -> None:
    done = accord("--version")
    assert done.returncode == ExitCode.OK
    assert done.stdout == f"accord {version('accord')}\n"


def test_help_gives_examples_environment_and_exit_codes() -> None:
    done = accord("run", "--help")
    assert done.returncode == ExitCode.OK
    for needle in ("examples:", "ACCORD_MODEL", "NO_COLOR", "exit codes:", "130  Ctrl-C"):
        assert needle in done.stdout


@pytest.mark.parametrize(
    ("args", "stdin"),
    [(["-"], "from stdin"), ([], "from stdin"), (["--file", "-", "from"], "stdin")],
    ids=["dash", "piped", "file-dash-after-the-argument"],
)
def test_the_prompt_from_stdin(args: list[str], stdin: str) -> None:
    done = run_with_stdin("run", "-q", "--agent", ECHO, *args, stdin=stdin)
    assert done.returncode == ExitCode.OK, done.stderr
    assert done.stdout.split() == ["from", "stdin"]


def test_the_prompt_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "task.md").write_text("written down\n")
    done = accord("run", "-q", "--agent", ECHO, "--file", str(tmp_path / "task.md"))
    assert done.returncode == ExitCode.OK, done.stderr
    assert done.stdout == "written down\n"


def test_quiet_prints_only_the_final_answer(tmp_path: Path) -> None:
    done = accord(
        "run",
        "-q",
        "--agent",
        agent("workflow"),
        "--approve-all",
        "--cwd",
        str(tmp_path),
        "go",
    )
    assert done.returncode == ExitCode.OK, done.stderr
    assert done.stdout == "Permission granted: config.toml updated.\n"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (
            ["--file", "/no/such/file"],
            "",
            "accord: cannot read --file /no/such/file: No such file or directory\n",
        ),
        (["-"], "  \n\n", "accord: the prompt is empty (from stdin)\n"),
        ([], "", "accord: the prompt is empty (from stdin)\n"),
        (["  "], "", "accord: the prompt is empty (from the argument)\n"),
        (
            ["-", "--file", "-"],
            "x",
            "accord: the prompt cannot be read from stdin twice (- and --file -)\n",
        ),
        (["--agent", "nosuchagent", "hi"], "", None),
        (["--cwd", "/no/such/dir", "hi"], "", "accord: --cwd /no/such/dir is not a directory\n"),
        (
            ["--add-dir", "/no/such/dir", "hi"],
            "",
            "accord: --add-dir /no/such/dir is not a directory\n",
        ),
    ],
    ids=[
        "unreadable-file",
        "blank-stdin",
        "empty-stdin",
        "blank-argument",
        "stdin-twice",
        "unknown-agent",
        "missing-cwd",
        "missing-add-dir",
    ],
)
def test_bad_input_is_one_line_and_1(args: list[str], stdin: str, message: str | None) -> None:
    agent_args = [] if "--agent" in args else ["--agent", ECHO]
    done = run_with_stdin("run", *agent_args, *args, stdin=stdin)
    assert done.returncode == ExitCode.ERROR
    assert done.stdout == ""
    if message is None:
        assert done.stderr.startswith("accord: unknown agent 'nosuchagent': not a known name (")
        assert "claude, codex, gemini, goose, opencode, qwen" in done.stderr
    else:
        assert done.stderr == message
    assert done.stderr.count("\n") == 1


def config(tmp_path: Path, text: str) -> dict[str, str | None]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return {"ACCORD_CONFIG": str(path)}


def test_agent_names_come_from_the_config_file(tmp_path: Path) -> None:
    env = config(tmp_path, f'[agents]\necho = "{sys.executable} {ECHO_AGENT}"\n')
    done = accord("run", "-q", "--agent", "echo", "named", env=env)
    assert done.returncode == ExitCode.OK, done.stderr
    assert done.stdout == "named\n"


def test_the_config_files_agent_is_the_default(tmp_path: Path) -> None:
    env = config(tmp_path, f'agent = "echo"\n[agents]\necho = "{sys.executable} {ECHO_AGENT}"\n')
    done = accord("run", "-q", "by default", env=env)
    assert done.returncode == ExitCode.OK, done.stderr
    assert done.stdout == "by default\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("model = [", "is not valid TOML"),
        ("model = 3\n", "'model' must be a non-empty string"),
        ("modle = 'x'\n", "unknown setting 'modle'"),
        ("agents = 'x'\n", "[agents] must be a table"),
        ("[agents]\nx = ''\n", "agents.x must be a non-empty command line"),
        ("context_window = '32k'\n", "'context_window' must be a positive integer"),
        ("context_window = 0\n", "'context_window' must be a positive integer"),
    ],
)
def test_a_broken_config_file_is_one_line_and_1(tmp_path: Path, text: str, problem: str) -> None:
    env = config(tmp_path, text)
    done = accord("run", "--agent", ECHO, "hi", env=env)
    assert done.returncode == ExitCode.ERROR
    assert done.stderr.startswith(f"accord: the config file {tmp_path / 'config.toml'}")
    assert problem in done.stderr
    assert done.stderr.count("\n") == 1
    listed = accord("sessions", "--agent", ECHO, env=env)
    assert listed.returncode == ExitCode.ERROR


def test_timeout_bounds_initialize(tmp_path: Path) -> None:
    fifo = tmp_path / "ready.fifo"
    fifo.touch()  # a plain file: the agent writes "ready" and sticks in initialize
    command = agent("stuck", str(fifo), "--in", "initialize")
    done = accord("run", "--agent", command, "--timeout", "1", "hello")
    assert done.returncode == ExitCode.AGENT_FAILED
    assert done.stderr.startswith(f"accord: {command!r} did not answer initialize in time")
    assert done.stderr.endswith("; see --timeout\n")


# ---------------------------------------------------------------------- completion


def test_bash_completion_completes_subcommands_options_and_choices() -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    script = accord("completion", "bash").stdout

    def complete(*words: str) -> list[str]:
        line = " ".join(["accord", *words])
        probe = (
            f"{script}\nCOMP_WORDS=(accord {' '.join(words)}); COMP_CWORD={len(words)};"
            f" COMP_LINE='{line}'; _accord; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        )
        done = subprocess.run([bash, "-c", probe], capture_output=True, text=True, check=True)
        return done.stdout.split()

    assert complete("r") == ["run"]
    assert complete("run", "--qu") == ["--quiet"]
    assert complete("run", "--agent", "cl") == ["claude"]
    assert complete("sessions", "sh") == ["show"]
    assert complete("completion", "f") == ["fish"]


def test_zsh_and_fish_completion_scripts() -> None:
    zsh = accord("completion", "zsh").stdout
    assert zsh.startswith("autoload -U +X bashcompinit && bashcompinit\n")
    fish = accord("completion", "fish").stdout
    assert "complete -c accord -n '__fish_use_subcommand' -a run" in fish
    assert "complete -c accord -n '__fish_seen_subcommand_from run' -s q -l quiet" in fish
    fish_shell = shutil.which("fish")
    if fish_shell is not None:  # the script parses
        subprocess.run([fish_shell, "-n", "-c", fish], check=True)


def test_on_a_terminal_a_slow_start_is_announced_and_the_spinner_turns(tmp_path: Path) -> None:
    fifo = tmp_path / "ready"
    fifo.touch()
    command = agent("stuck", str(fifo), "--in", "initialize")
    env = {"LC_ALL": "C.UTF-8"}
    with on_a_terminal("run", "--agent", command, "--timeout", "6", "hi", env=env) as (
        process,
        out,
        _,
    ):
        out.wait_for(f"accord: waiting for {command!r} to start (up to 6 s; --timeout)")
        out.read_to_end()
        assert process.wait(timeout=TIMEOUT) == ExitCode.AGENT_FAILED
    assert "waiting for the agent" in out.text  # the spinner turned while it waited
    screen = pyte.Screen(300, 20)
    pyte.ByteStream(screen).feed(out.data)
    shown = [line.rstrip() for line in screen.display if line.strip()]
    assert not any("waiting for the agent" in line for line in shown)  # and was erased
    assert shown[-1].startswith(f"accord: {command!r} did not answer initialize in time")


def test_add_dir_opens_a_directory_to_the_agent_and_nothing_more(tmp_path: Path) -> None:
    """``--add-dir``: through the client's file system the agent reads and writes in the added
    directory as in the working directory; a directory beside them stays refused."""
    work, extra, outside = (tmp_path / name for name in ("work", "extra", "outside"))
    for directory in (work, extra, outside):
        directory.mkdir()
    (extra / "notes.txt").write_text("added directory notes\n")
    (outside / "secret.txt").write_text("not for the agent\n")
    paths = {
        "read": str(extra / "notes.txt"),
        "write": str(extra / "new" / "out.txt"),
        "outside_read": str(outside / "secret.txt"),
        "outside_write": str(outside / "planted.txt"),
    }

    dirs_agent = agent("dirs")
    done = accord(
        "run", "-q", "--agent", dirs_agent, "--cwd", str(work), "--add-dir", str(extra),
        json.dumps(paths),
    )  # fmt: skip
    assert done.returncode == ExitCode.OK, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"roots: {work} {extra}"
    assert f"read {extra / 'notes.txt'}: ok added directory notes" in lines
    assert f"write {extra / 'new' / 'out.txt'}: ok" in lines
    assert (extra / "new" / "out.txt").read_text() == "written by the agent\n"
    refused = [line for line in lines if line.startswith("outside_")]
    assert len(refused) == 2 and all(": refused " in line for line in refused), lines
    assert not (outside / "planted.txt").exists()

    # Without --add-dir the same directory is outside too.
    done = accord(
        "run", "-q", "--agent", dirs_agent, "--cwd", str(work), json.dumps(paths)
    )  # fmt: skip
    assert done.returncode == ExitCode.OK, done.stderr
    assert f"read {extra / 'notes.txt'}: refused" in done.stdout
    assert done.stdout.splitlines()[0] == f"roots: {work}"


def test_add_dir_with_an_agent_that_does_not_take_directories_is_one_line(tmp_path: Path) -> None:
    done = accord("run", "--agent", ECHO, "--add-dir", str(tmp_path), "hi")
    assert done.returncode == ExitCode.ERROR, done
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "does not accept further directories" in done.stderr
    assert "--add-dir cannot be used" in done.stderr


@pytest.mark.parametrize(
    ("args", "config_text", "message"),
    [
        (["--agent", "nosuchagent"], None, "accord: unknown agent 'nosuchagent': not a known name"),
        (["--agent", "  "], None, "accord: --agent is empty"),
        ([], "model = ", "is not valid TOML"),
    ],
    ids=["unknown-agent", "empty-agent", "broken-config"],
)
def test_chat_bad_input_is_one_line_before_the_screen(
    args: list[str], config_text: str | None, message: str, tmp_path: Path
) -> None:
    """``accord chat`` refuses bad input like ``accord run``: one line, exit 1, and the
    terminal UI never starts (nothing on stdout)."""
    env = config(tmp_path, config_text) if config_text is not None else None
    done = accord("chat", *args, env=env)
    assert done.returncode == ExitCode.ERROR
    assert done.stdout == ""
    assert message in done.stderr
    assert done.stderr.count("\n") == 1

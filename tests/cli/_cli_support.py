"""Helpers for the command-line tests: run ``accord`` as a real process, read its output.

``accord`` runs as ``python -m accord.cli`` (the console script's equivalent, without PATH
questions) with stdin from ``/dev/null`` unless a test gives it a terminal. The agents it
drives are the script agents of ``tests/helpers/script_agent.py`` (one script, the behaviour
chosen by name), spawned with this interpreter; :func:`agent` builds the ``--agent`` command
line for one of them.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from helpers.script_agent import script_agent
from helpers.timeouts import TIMEOUT

__all__ = (
    "ACCORD",
    "ECHO_AGENT",
    "ROOT",
    "OutputReader",
    "accord",
    "agent",
    "json_lines",
    "on_a_terminal",
    "start_accord",
)

ROOT = Path(__file__).resolve().parents[2]
ECHO_AGENT = ROOT / "examples" / "echo_agent.py"
#: The ``accord`` command.
ACCORD = (sys.executable, "-m", "accord.cli")


def agent(script: str | Path, *args: str) -> str:
    """The ``--agent`` value running ``script`` with ``args``: the name of a script agent
    (:func:`helpers.script_agent.script_agent`) or the path of a Python script."""
    if isinstance(script, Path):
        return shlex.join([sys.executable, str(script), *args])
    return shlex.join(script_agent(script, *args))


def _env(extra: Mapping[str, str | None] | None) -> dict[str, str]:
    """This process's environment for ``accord``, with ``extra`` over it (None: removed)."""
    # No colour unless a test asks (NO_COLOR=""), no user config file, no inherited model.
    dropped = ("ECHO_DELAY", "COLUMNS", "NO_COLOR", "ACCORD_MODEL", "ACCORD_BASE_URL")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["ACCORD_CONFIG"] = os.devnull + ".missing"  # never the user's own config file
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def accord(
    *args: str,
    cwd: str | Path | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """Run ``accord ARGS`` to the end (stdin is not a terminal) and return what it did."""
    return subprocess.run(
        [*ACCORD, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=_env(env),
        timeout=timeout,
        check=False,
    )


def _default_sigint() -> None:
    """In the child before ``exec``: SIGINT as on a terminal, even if the test run ignores it.

    A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored
    across ``exec``; Python then installs no handler and Ctrl-C would not reach ``accord``.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_accord(
    *args: str, env: Mapping[str, str | None] | None = None, **popen: Any
) -> subprocess.Popen[bytes]:
    """Start ``accord ARGS`` (stdin not a terminal, output piped, unless ``popen`` says else)."""
    options: dict[str, Any] = {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "cwd": ROOT,
        "preexec_fn": _default_sigint,
    }
    options.update(popen)
    return subprocess.Popen([*ACCORD, *args], env=_env(env), **options)


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """Every line of ``stdout`` parsed as JSON (a line that does not parse fails the test)."""
    return [json.loads(line) for line in stdout.splitlines()]


class OutputReader:
    """Reads a file descriptor (a pipe, a pseudo-terminal's master side) as output arrives.

    :meth:`wait_for` blocks until the text read so far satisfies a condition, or raises
    ``TimeoutError`` (with what was read) after ``timeout`` seconds; :meth:`read_to_end`
    reads until the writer is gone.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.data = b""
        self.closed = False

    @property
    def text(self) -> str:
        """Everything read so far, decoded (pseudo-terminal line ends made plain)."""
        return self.data.decode(errors="replace").replace("\r\n", "\n")

    def _read_some(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        ready, _, _ = select.select([self.fd], [], [], max(remaining, 0))
        if not ready:
            raise TimeoutError(f"no more output within the time limit; so far:\n{self.text}")
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # a pseudo-terminal whose other side is closed (EIO)
            chunk = b""
        if not chunk:
            self.closed = True
        self.data += chunk

    def wait_for(self, condition: str | Callable[[str], bool], timeout: float = TIMEOUT) -> str:
        """Read until ``condition`` (a substring, or a predicate on the text) holds."""
        if isinstance(condition, str):
            needle = condition

            def check(text: str) -> bool:
                return needle in text

        else:
            check = condition
        deadline = time.monotonic() + timeout
        while not check(self.text):
            if self.closed:
                raise EOFError(f"the output ended before {condition!r}; it was:\n{self.text}")
            self._read_some(deadline)
        return self.text

    def read_to_end(self, timeout: float = TIMEOUT) -> str:
        """Read until end of file; return everything read."""
        deadline = time.monotonic() + timeout
        while not self.closed:
            self._read_some(deadline)
        return self.text


@contextmanager
def on_a_terminal(
    *args: str, env: Mapping[str, str | None] | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], OutputReader, int]]:
    """Run ``accord ARGS`` with stdin, stdout and stderr on a pseudo-terminal.

    Yields the process, a reader of everything it shows, and the terminal's master side to
    type into. The terminal is closed, and the process killed if still running, on exit.
    """
    master, slave = pty.openpty()
    try:
        process = start_accord(
            *args, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
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

"""``accord`` as a real process, for the remote and TUI tests.

:func:`run_accord` runs any ``accord`` command to its end. :func:`accord_serve` starts
``accord serve --listen`` on loopback (``python -m accord.cli``, the console script without
PATH questions), waits for its ``listening on URL`` line on stderr and yields the URL and the
process; on the way out the process is terminated and waited for. :func:`accord_serve_logged`
does the same with verbose options and keeps all the process writes (:class:`ServeLog`).
:func:`accord_env` is the
environment such a process gets: no user config file, no inherited model, token or colour
setting, a placeholder OpenAI key (the fake model server takes any).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from helpers.timeouts import TIMEOUT

ACCORD = (sys.executable, "-m", "accord.cli")
"""The ``accord`` command."""


def accord_env(**extra: str) -> dict[str, str]:
    """This process's environment for an ``accord`` child, with ``extra`` over it."""
    dropped = ("ACCORD_MODEL", "ACCORD_BASE_URL", "ACCORD_TOKEN", "NO_COLOR")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["ACCORD_CONFIG"] = os.devnull + ".missing"  # never the user's own config file
    env["OPENAI_API_KEY"] = "test-key"
    env.update(extra)
    return env


@contextmanager
def accord_serve(
    *args: str, env: dict[str, str], port: int = 0
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start ``accord serve --listen 127.0.0.1:PORT ARGS``; yield its URL once it listens
    (port 0: any free port) and the process.

    Raises:
        AssertionError: the process ended before saying where it listens (with its stderr).
    """
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


def run_accord(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``accord ARGS`` to its end (stdin empty, not a terminal) and return what it did."""
    return subprocess.run(
        [*ACCORD, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=TIMEOUT,
        check=False,
    )


class ServeLog:
    """Everything an ``accord serve`` process wrote, read off its pipes by threads as it comes.

    A process logging at ``-vv`` writes more than a pipe holds; reading it all the while keeps
    it from blocking on a full pipe.
    """

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.stderr: list[str] = []
        self.stdout: list[str] = []
        self._listening = threading.Event()
        self.url = ""
        assert process.stderr is not None and process.stdout is not None
        self._threads = [
            threading.Thread(target=self._read, args=(process.stderr, self.stderr), daemon=True),
            threading.Thread(target=self._read, args=(process.stdout, self.stdout), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read(self, pipe: IO[str], into: list[str]) -> None:
        for line in pipe:
            into.append(line)
            found = re.search(r"listening on (\S+)", line)
            if found and into is self.stderr and not self.url:
                self.url = found.group(1)
                self._listening.set()
        if into is self.stderr:
            self._listening.set()  # ended without listening: the waiter sees no URL

    def wait_listening(self) -> str:
        """The URL once the process listens.

        Raises:
            AssertionError: it ended (or took :data:`TIMEOUT`) without saying where it listens.
        """
        self._listening.wait(TIMEOUT)
        assert self.url, f"accord serve did not start: {''.join(self.stderr)}"
        return self.url

    def join(self) -> None:
        """Wait until both pipes are read to their end (the process has exited)."""
        for thread in self._threads:
            thread.join(TIMEOUT)

    @property
    def text(self) -> str:
        """Both streams, stderr first."""
        return "".join(self.stderr) + "".join(self.stdout)


@contextmanager
def accord_serve_logged(
    *args: str, env: dict[str, str], options: tuple[str, ...] = ("-vv",), host: str = "127.0.0.1"
) -> Iterator[tuple[str, ServeLog]]:
    """``accord OPTIONS serve --listen HOST:0 ARGS`` with stdout and stderr kept whole.

    Yields the URL it listens on and its :class:`ServeLog`; on the way out the process is
    interrupted (SIGINT, as at a terminal), waited for and its pipes read to their end, so
    the log is complete once the ``with`` block is left.
    """
    process = subprocess.Popen(
        [*ACCORD, *options, "serve", "--listen", f"{host}:0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    log = ServeLog(process)
    try:
        yield log.wait_listening(), log
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=TIMEOUT)
        log.join()

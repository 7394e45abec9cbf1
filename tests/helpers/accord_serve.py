"""``accord`` as a real process, for the remote and TUI tests.

:func:`run_accord` runs any ``accord`` command to its end. :func:`accord_serve` starts
``accord serve --listen`` on loopback (``python -m accord.cli``, the console script without
PATH questions), waits for its ``listening on URL`` line on stderr and yields the URL and the
process; on the way out the process is terminated and waited for. :func:`accord_env` is the
environment such a process gets: no user config file, no inherited model, token or colour
setting, a placeholder OpenAI key (the fake model server takes any).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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

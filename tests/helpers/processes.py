"""Child processes of the tests: the environment of a child script, and waiting for an exit.

A child does not get pytest's ``sys.path``: :func:`child_env` sets ``PYTHONPATH`` so that it
imports accord from this checkout's ``src``, its own directory's helpers (``_<dir>_*.py``) and
the shared ``helpers`` package, the way the test that starts it does. :func:`gone` and
:func:`wait_gone` wait for a process to terminate through a pidfd (Linux): no polling.
"""

from __future__ import annotations

import os
import select
from pathlib import Path

import anyio

import accord
from helpers.timeouts import TIMEOUT

TESTS = Path(__file__).resolve().parents[1]
"""The ``tests/`` directory."""


def child_env(script: Path) -> dict[str, str]:
    """This process's environment with ``PYTHONPATH`` set for running ``script``."""
    src = Path(accord.__file__).resolve().parents[1]
    paths = [str(src), str(script.resolve().parent), str(TESTS), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def gone(pid: int, within: float = TIMEOUT) -> bool:
    """Wait up to ``within`` seconds until process ``pid`` has terminated (a zombie counts);
    whether it has."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], within)
        return bool(readable)
    finally:
        os.close(fd)


async def wait_gone(pid: int) -> None:
    """Wait until process ``pid`` has terminated (a zombie counts).

    Raises:
        TimeoutError: it is still running after :data:`~helpers.timeouts.TIMEOUT`.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with anyio.fail_after(TIMEOUT):
            await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)

"""Commands do not outlive the agent: a watchdog process ends their groups when the agent dies.

Every command the coder runs locally gets its own process group (:func:`._process.run_local`),
so one signal reaches everything it started. That covers timeouts, cancelled turns and an
orderly shutdown; it cannot cover the agent being killed outright (``kill -9``, the OOM killer,
a crash), which runs no code at all. So the first command starts a small **watchdog**: a
separate Python process, in a session of its own, whose stdin is a pipe only the agent holds
the write end of (the descriptor is not inherited by commands). The agent writes ``+PGID``
when a command's group starts and ``-PGID`` when it has been reaped. When the pipe reaches end
of file, which the kernel guarantees however the agent ended, the watchdog sends each group
still registered ``SIGTERM``, then ``SIGKILL`` after :data:`GRACE_SECONDS`, and exits.

Why not ``PR_SET_PDEATHSIG``: it is Linux only, it fires when the *thread* that forked exits
(anyio starts processes from worker threads, which come and go), and a command's children
(``make`` spawning compilers) do not inherit it. The pipe is portable POSIX and watches the
whole group.

One watchdog per agent process, started lazily (about 10 MB while commands have run, nothing
before). If it dies it is started again at the next registration. A command's shell waits at
a gate until its group is registered (:data:`._process.GATE`), so there is no window in which
the agent can die leaving a running command unregistered: killed before the registration, it
closes the gate's pipe and the shell exits without running the command.

Above: :mod:`._process`. Below: the OS.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from typing import Final

__all__ = ("GRACE_SECONDS", "WATCHDOG_SOURCE", "GroupWatchdog", "group_watchdog")

_log = logging.getLogger("accord.coder")

GRACE_SECONDS: Final = 2.0
"""Between the watchdog's ``SIGTERM`` and its ``SIGKILL`` to the groups left behind."""

WATCHDOG_SOURCE: Final = f"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups = set()
for line in sys.stdin.buffer:
    try:
        pgid = int(line[1:])
    except ValueError:
        continue
    if line[:1] == b"+":
        groups.add(pgid)
    else:
        groups.discard(pgid)
def signal_all(signum):
    alive = set()
    for pgid in groups:
        try:
            os.killpg(pgid, signum)
            alive.add(pgid)
        except (ProcessLookupError, PermissionError):
            pass
    return alive
groups = signal_all(signal.SIGTERM)
deadline = time.monotonic() + {GRACE_SECONDS!r}
while groups and time.monotonic() < deadline:
    time.sleep(0.05)
    groups = signal_all(0)
signal_all(signal.SIGKILL)
"""
"""The watchdog's program (``python -S -c``): read registrations until EOF, then end the groups."""


class GroupWatchdog:
    """The agent's end of the watchdog: register and unregister process groups.

    Thread-safe; the watchdog process is started on the first :meth:`register`.
    """

    def __init__(self) -> None:
        """Create the handle; no process is started yet."""
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The watchdog process's id, once started."""
        process = self._process
        return None if process is None else process.pid

    def register(self, pgid: int) -> None:
        """A command's process group started: end it if this process dies."""
        self._send(f"+{pgid}\n".encode())

    def unregister(self, pgid: int) -> None:
        """The group has ended (its leader reaped): forget it."""
        with self._lock:
            if self._process is None:
                return
        self._send(f"-{pgid}\n".encode())

    def _send(self, line: bytes) -> None:
        with self._lock:
            for attempt in range(2):
                process = self._process
                if process is None or process.poll() is not None:
                    process = self._process = self._start()
                    if process is None:
                        return
                stdin = process.stdin
                assert stdin is not None
                try:
                    stdin.write(line)
                    stdin.flush()
                    return
                except (BrokenPipeError, ValueError):
                    if attempt:
                        _log.warning("the command watchdog is not running; commands may outlive us")
                    self._process = None

    @staticmethod
    def _start() -> subprocess.Popen[bytes] | None:
        try:
            return subprocess.Popen(
                [sys.executable, "-S", "-c", WATCHDOG_SOURCE],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
                cwd="/",
            )
        except OSError as exc:
            _log.warning("cannot start the command watchdog (%s); commands may outlive us", exc)
            return None


_watchdog: GroupWatchdog | None = None
_owner = 0
_watchdog_lock = threading.Lock()


def group_watchdog() -> GroupWatchdog:
    """This process's watchdog handle (one per process: a forked child gets its own)."""
    global _watchdog, _owner
    with _watchdog_lock:
        if _watchdog is None or _owner != os.getpid():
            _watchdog, _owner = GroupWatchdog(), os.getpid()
        return _watchdog

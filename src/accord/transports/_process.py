"""Child processes in their own process group: start one, stop it in a bounded ladder, keep the
tail of its output.

Three parts of accord run other programs: the subprocess transport (an agent), the client's
terminal host (an agent's commands) and the coding agent's local command runner. They share
what is hard to get right:

* :func:`spawn_group` starts a process as the leader of a new session (so a new process group
  whose id is its pid): one signal to the group reaches everything it started, grandchildren
  included;
* :func:`stop_group` is the shutdown ladder: ``SIGTERM`` to the group, a bounded wait,
  ``SIGKILL`` to the group, a bounded wait. Every step is bounded and the whole ladder is
  shielded from the cancellation that usually causes it, so a child that ignores ``SIGTERM``
  can neither hang its caller nor outlive it;
* :class:`TailBuffer` keeps the newest bytes of an output stream, within a fixed limit, cut at
  a UTF-8 character boundary, and counts what it dropped.

POSIX only (sessions, process groups, signals). This module sits on anyio and the operating
system; above it are :mod:`accord.transports` (``spawn_agent``), ``accord.client``'s terminal
host and ``accord.coder``'s command runner.
"""

from __future__ import annotations

import codecs
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Final

import anyio
from anyio.abc import Process

__all__ = (
    "GROUP_KILL_TIMEOUT",
    "GROUP_TERMINATE_TIMEOUT",
    "TailBuffer",
    "signal_group",
    "spawn_group",
    "stop_group",
)

logger = logging.getLogger(__name__)

GROUP_TERMINATE_TIMEOUT: Final = 2.0
"""Default seconds between ``SIGTERM`` and ``SIGKILL`` in :func:`stop_group`."""

GROUP_KILL_TIMEOUT: Final = 2.0
"""Default seconds :func:`stop_group` waits after ``SIGKILL``: it cannot be caught, so only a
process stuck in uninterruptible I/O (or a holder of the output outside the group) outlives it."""

# A UTF-8 character is at most four bytes: one lead byte and up to three continuation bytes.
_MAX_CONTINUATION: Final = 3


class TailBuffer:
    """The newest ``limit`` bytes written to it, cut at a UTF-8 character boundary.

    When old bytes must go, the bytes of a character cut in half go with them (at most three
    more: binary output cannot make the cut run away), so :meth:`text` never starts with a
    mangled character. ``dropped`` counts every byte dropped.

    Args:
        limit: The most bytes kept (0 keeps nothing, counting what it drops).
    """

    __slots__ = ("_data", "dropped", "limit")

    def __init__(self, limit: int) -> None:
        """Create an empty buffer keeping at most ``limit`` bytes."""
        if limit < 0:
            raise ValueError(f"a TailBuffer's limit cannot be negative: {limit}")
        self.limit = limit
        self._data = bytearray()
        self.dropped = 0
        """Bytes dropped from the front so far."""

    def __len__(self) -> int:
        """The bytes kept now."""
        return len(self._data)

    @property
    def truncated(self) -> bool:
        """Whether older output was dropped."""
        return self.dropped > 0

    def write(self, chunk: bytes) -> None:
        """Append ``chunk``, dropping the oldest bytes beyond the limit."""
        data = self._data
        data += chunk
        excess = len(data) - self.limit
        if excess <= 0:
            return
        for _ in range(_MAX_CONTINUATION):
            if excess < len(data) and data[excess] & 0xC0 == 0x80:  # 0b10xxxxxx
                excess += 1
        del data[:excess]  # bytearray deletes at the front in O(1) (it moves its start)
        self.dropped += excess

    def text(self, *, final: bool = True) -> str:
        """The kept bytes as text; invalid UTF-8 becomes U+FFFD.

        Until the output is ``final``, an incomplete character at the end is held back rather
        than shown as U+FFFD: the rest of it may still be on its way.
        """
        return codecs.getincrementaldecoder("utf-8")("replace").decode(self._data, final=final)


async def spawn_group(
    argv: Sequence[str],
    *,
    stdin: int | IO[Any] | None,
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Process:
    """Start ``argv`` (no shell) as the leader of a new process group (its id is the pid).

    ``stdin``, ``stdout`` and ``stderr`` are as for :func:`anyio.open_process` (a descriptor,
    a file, ``subprocess.PIPE``, ``subprocess.DEVNULL``, ``subprocess.STDOUT``).

    Raises:
        OSError: the program could not be started (``FileNotFoundError``,
            ``PermissionError``, a vanished ``cwd``, ...).
    """
    return await anyio.open_process(
        list(argv),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        cwd=Path(cwd) if cwd is not None else None,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )


def signal_group(pgid: int, signum: signal.Signals) -> bool:
    """Send ``signum`` to process group ``pgid``; ``False`` if no member of it is left.

    A group member that changed its user id (setuid) may refuse the signal: that is logged and
    the leader alone is signalled, if it is still there.
    """
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        logger.warning("not allowed to signal process group %d; signalling its leader", pgid)
        try:
            os.kill(pgid, signum)
        except (ProcessLookupError, PermissionError):
            return False
    return True


async def stop_group(
    process: Process,
    *,
    terminate_timeout: float = GROUP_TERMINATE_TIMEOUT,
    kill_timeout: float = GROUP_KILL_TIMEOUT,
    finished: Callable[[], bool] | None = None,
    wait: Callable[[], Awaitable[object]] | None = None,
    sweep: bool = False,
) -> bool:
    """Stop ``process`` and its group: ``SIGTERM``, wait, ``SIGKILL``, wait. Shielded, bounded.

    The process must lead its own group (see :func:`spawn_group`). Nothing is signalled when it
    is already finished. The ladder takes at most ``terminate_timeout + kill_timeout`` seconds,
    whatever the group does, and runs to its end even when the caller is cancelled.

    Args:
        process: The group's leader.
        terminate_timeout: Seconds between ``SIGTERM`` and ``SIGKILL``.
        kill_timeout: Seconds to wait after ``SIGKILL`` before giving up.
        finished: When the caller considers the process gone; default: it has exited. (The
            terminal host also waits for every holder of its output pipe to close it.)
        wait: Waits until ``finished()``; default: the process's exit.
        sweep: ``SIGKILL`` the group even when the leader went at ``SIGTERM`` (or had exited
            already): members that ignore ``SIGTERM`` or were left in the background must not
            outlive it.

    Returns:
        Whether the process is finished; ``False`` only when it survived ``SIGKILL`` for
        ``kill_timeout`` seconds (logged).
    """
    is_finished = finished if finished is not None else lambda: process.returncode is not None
    wait_finished = wait if wait is not None else process.wait
    pid = process.pid
    with anyio.CancelScope(shield=True):
        if not is_finished():
            signal_group(pid, signal.SIGTERM)
            with anyio.move_on_after(terminate_timeout):
                await wait_finished()
        if sweep or not is_finished():
            signal_group(pid, signal.SIGKILL)
        if not is_finished():
            with anyio.move_on_after(kill_timeout):
                await wait_finished()
        if is_finished():
            return True
    logger.warning(
        "process %d survived SIGKILL for %.1f s (or a process outside its group holds its"
        " output); giving up on it",
        pid,
        kill_timeout,
    )
    return False

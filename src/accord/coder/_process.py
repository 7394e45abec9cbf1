"""Running a command: the result the model reads, and the local fallback runner.

When the client offers terminals, ``run_command`` runs there (the editor shows the output
live); otherwise :func:`run_local` runs the command line here, under ``bash -c`` (``/bin/sh -c``
without bash) in its own process group, with stdin from ``/dev/null``, stdout and stderr
together. The shell first waits at a gate (:data:`GATE`: one line read from a pipe) until the
group is registered with the watchdog, so nothing the command starts can run while an agent
killed at that moment would leave it behind; if the agent dies first, the gate reads end of
file and the shell exits without running the command. Both ways are bounded:

* time: :data:`DEFAULT_TIMEOUT_SECONDS` unless the model asks for another timeout, never more
  than :data:`MAX_TIMEOUT_SECONDS`; a command that runs over is killed (the whole group);
* output: the newest :data:`MAX_OUTPUT_BYTES` are kept (test runners and compilers print
  their verdict last), cut at a character boundary, with a note saying how much was dropped.

A cancelled turn kills the command too: the process group gets ``SIGTERM``, then ``SIGKILL``
after :data:`TERMINATE_GRACE_SECONDS`, shielded from the cancellation that caused it. And the
group does not outlive the agent: while it runs it is registered with the process's watchdog
(:mod:`._watchdog`), which ends it if the agent dies, even by ``SIGKILL``.

POSIX only (process groups and signals), like the client's terminal host.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
from dataclasses import dataclass
from typing import Final

import anyio
import anyio.to_thread
from anyio.abc import Process

from ..transports import TailBuffer, spawn_group, stop_group
from ._watchdog import group_watchdog

__all__ = (
    "DEFAULT_TIMEOUT_SECONDS",
    "GATE",
    "MAX_OUTPUT_BYTES",
    "MAX_TIMEOUT_SECONDS",
    "TERMINATE_GRACE_SECONDS",
    "CommandResult",
    "clamp_timeout",
    "run_local",
    "shell_argv",
)

DEFAULT_TIMEOUT_SECONDS: Final = 120.0
"""How long a command may run when the model does not say (a test suite, a build)."""

MAX_TIMEOUT_SECONDS: Final = 600.0
"""The longest timeout the model may ask for; longer work belongs in the user's own terminal."""

MAX_OUTPUT_BYTES: Final = 64 * 1024
"""Output kept per command (the newest bytes): a long log's verdict, not the whole log."""

TERMINATE_GRACE_SECONDS: Final = 2.0
"""Between ``SIGTERM`` and ``SIGKILL`` when a command is stopped."""

_READ_CHUNK: Final = 65536

GATE: Final = "read -r _ || exit 125\nexec </dev/null\n"
"""What the shell runs before the command line: wait for the go line on stdin (end of file:
the agent died before registering the group, so run nothing), then read ``/dev/null``."""


def clamp_timeout(seconds: float | None) -> float:
    """The timeout to use: the default for ``None``, else within ``(0, MAX_TIMEOUT_SECONDS]``."""
    if seconds is None or seconds <= 0:
        return DEFAULT_TIMEOUT_SECONDS
    return min(float(seconds), MAX_TIMEOUT_SECONDS)


def shell_argv(command: str) -> list[str]:
    """The argv that runs ``command`` as a shell command line."""
    bash = shutil.which("bash")
    return [bash, "-c", command] if bash else ["/bin/sh", "-c", command]


async def _open_gate(process: Process) -> None:
    """Let the shell past :data:`GATE`; a shell already gone is left for ``wait`` to report."""
    stdin = process.stdin
    assert stdin is not None
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stdin.send(b"go\n")
    await stdin.aclose()


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """How a command ended, and what it printed.

    Attributes:
        command: The command line.
        output: The output kept (the newest part).
        truncated: Older output was dropped.
        dropped_bytes: How many bytes were dropped, when known.
        exit_code: The exit status, if it exited.
        signal: The signal that ended it (e.g. ``SIGKILL``), if one did.
        timed_out: It ran longer than its timeout and was killed.
    """

    command: str
    output: str
    truncated: bool = False
    dropped_bytes: int | None = None
    exit_code: int | None = None
    signal: str | None = None
    timed_out: bool = False

    def for_model(self, timeout: float) -> str:
        """The result as the model reads it: output, then how the command ended."""
        lines: list[str] = []
        if self.truncated:
            amount = f"{self.dropped_bytes:,} " if self.dropped_bytes else ""
            lines.append(f"[… {amount}earlier bytes of output dropped]")
        output = self.output.rstrip("\n")
        lines.append(output if output else "[no output]")
        if self.timed_out:
            lines.append(f"[timed out after {timeout:g} s; the command was killed]")
        elif self.exit_code is not None:
            lines.append(f"[exit code {self.exit_code}]")
        elif self.signal is not None:
            lines.append(f"[killed by {self.signal}]")
        return "\n".join(lines)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


async def run_local(
    command: str, *, cwd: str, time_limit: float, output_limit: int = MAX_OUTPUT_BYTES
) -> CommandResult:
    """Run ``command`` with a shell in ``cwd``; bounded in time and output (module docstring).

    Args:
        command: The command line.
        cwd: Where to run it.
        time_limit: Seconds before it is killed.
        output_limit: Bytes of output kept (the newest).

    Raises:
        OSError: the shell could not be started (e.g. ``cwd`` vanished).
    """
    process = await spawn_group(
        shell_argv(GATE + command),
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    watchdog = group_watchdog()
    buffer = TailBuffer(output_limit)
    timed_out = False
    try:
        # Its own session: the group id is its pid. A worker thread: the first registration
        # starts the watchdog process. Until both are done, the shell waits at the gate.
        await anyio.to_thread.run_sync(watchdog.register, process.pid)
        await _open_gate(process)
        with anyio.move_on_after(time_limit) as scope:
            assert process.stdout is not None
            try:
                while True:
                    buffer.write(await process.stdout.receive(_READ_CHUNK))
            except anyio.EndOfStream:
                pass
            await process.wait()
        timed_out = scope.cancelled_caught
    finally:
        # SIGKILL the group even when the shell went at SIGTERM: a child that ignores it (or
        # that the shell left in the background) must not outlive the command.
        await stop_group(process, terminate_timeout=TERMINATE_GRACE_SECONDS, sweep=True)
        await process.aclose()
        watchdog.unregister(process.pid)
    code = process.returncode
    return CommandResult(
        command=command,
        output=buffer.text(),
        truncated=buffer.dropped > 0,
        dropped_bytes=buffer.dropped or None,
        exit_code=code if code is not None and code >= 0 and not timed_out else None,
        signal=_signal_name(-code) if code is not None and code < 0 else None,
        timed_out=timed_out,
    )

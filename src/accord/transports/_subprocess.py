"""Spawn an agent as a child process and talk to it over its stdin and stdout.

``spawn_agent(command)`` starts the process in its own process group, always drains its
stderr (into a bounded ring buffer and the ``accord.agent.stderr`` logger: an agent writing
megabytes to stderr must never block), and shuts it down in a bounded ladder: close stdin,
wait a grace period, SIGTERM the process group, wait, SIGKILL, reap. Every step is bounded and
shielded from cancellation. When the agent exits mid-session, ``receive`` raises
:class:`~accord.errors.AgentProcessExited` with the exit code and the tail of its stderr.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import Process

from ..errors import AgentProcessExited, ConnectionClosed
from ._fd import FdReceiveStream, FdSendStream
from ._framing import MAX_MESSAGE_BYTES
from ._process import TailBuffer, signal_group, spawn_group, stop_group
from ._stream import StreamTransport

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

__all__ = (
    "EXIT_WAIT_TIMEOUT",
    "KILL_TIMEOUT",
    "SHUTDOWN_GRACE",
    "STDERR_TAIL_BYTES",
    "TERMINATE_TIMEOUT",
    "SubprocessTransport",
    "spawn_agent",
)

logger = logging.getLogger("accord.agent.stderr")

#: After stdin is closed, how long a well-behaved agent gets to exit on its own.
SHUTDOWN_GRACE = 2.0
#: After SIGTERM, how long before SIGKILL.
TERMINATE_TIMEOUT = 2.0
#: After SIGKILL, how long to wait for the kernel to reap (it should be immediate).
KILL_TIMEOUT = 2.0
#: When stdout ends, how long to wait for the exit code before reporting it as unknown.
EXIT_WAIT_TIMEOUT = 2.0
#: How much of the agent's stderr is kept for error messages: enough for a traceback.
STDERR_TAIL_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class _Limits:
    grace: float
    terminate: float
    kill: float


class _StderrRing:
    """An agent's stderr: split into lines for the log, its last ``limit`` bytes kept as text."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._tail = TailBuffer(limit)
        self._partial: bytes = b""
        self.total_bytes = 0

    def feed(self, data: bytes) -> list[str]:
        """Take what was read; return the lines it completed."""
        self.total_bytes += len(data)
        self._tail.write(data)
        pieces: list[bytes] = (self._partial + data).split(b"\n")
        self._partial = pieces.pop()
        if len(self._partial) > self._limit:  # one endless line: keep its end for the log
            self._partial = self._partial[-self._limit :]
        return [line.decode("utf-8", "replace") for line in pieces]

    def finish(self) -> list[str]:
        """End of the stream: a last line without a newline counts; return it (if any)."""
        if not self._partial:
            return []
        line = self._partial.decode("utf-8", "replace")
        self._partial = b""
        return [line]

    def tail(self) -> str:
        """The last ``limit`` bytes as text, without the final newline."""
        return self._tail.text().removesuffix("\n")


class SubprocessTransport(StreamTransport):
    """A transport to a spawned agent process; build it with :func:`spawn_agent`."""

    def __init__(
        self,
        process: Process,
        stdin_fd: int,
        stdout_fd: int,
        stderr: _StderrRing,
        limits: _Limits,
        max_message_bytes: int,
    ) -> None:
        # The agent's stdin and stdout are our own pipes, written and read with non-blocking
        # system calls (see ``_fd.py``): no event-loop transport sits between us and the pipe.
        reader = FdReceiveStream(stdout_fd)
        reader.owns_fd = True
        super().__init__(reader, FdSendStream(stdin_fd), max_message_bytes=max_message_bytes)
        self.process = process
        self._stderr = stderr
        self._stderr_done = anyio.Event()
        self._limits = limits
        self._closing = False

    @property
    def pid(self) -> int:
        """The agent's process id."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The exit code once the agent has exited (negative: killed by that signal)."""
        return self.process.returncode

    def stderr_tail(self) -> str:
        """The last lines the agent wrote to stderr."""
        return self._stderr.tail()

    @property
    def stderr_bytes(self) -> int:
        """How many bytes the agent has written to stderr in all."""
        return self._stderr.total_bytes

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message to the agent's stdin."""
        try:
            await super().send(message)
        except ConnectionClosed:
            raise await self._exit_error() from None

    async def receive(self) -> Any:
        """Read the next message; raises ``AgentProcessExited`` once stdout ends."""
        try:
            return await super().receive()
        except anyio.EndOfStream:
            if self._closing:
                raise
            raise await self._exit_error() from None

    async def receive_batch(self, max_messages: int) -> list[Any]:
        """Read the messages already received; raises ``AgentProcessExited`` at the end."""
        try:
            return await super().receive_batch(max_messages)
        except anyio.EndOfStream:
            if self._closing:
                raise
            raise await self._exit_error() from None

    async def _exit_error(self) -> ConnectionClosed:
        with anyio.move_on_after(EXIT_WAIT_TIMEOUT):
            await self.process.wait()
            await self._stderr_done.wait()
        code = self.process.returncode
        if code is None:
            return ConnectionClosed("the agent closed its stdout but is still running")
        return AgentProcessExited(code, self.stderr_tail())

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        try:
            async for chunk in stream:
                for line in self._stderr.feed(chunk):
                    logger.info("[agent %d] %s", self.process.pid, line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            for line in self._stderr.finish():  # often the crash message: log it too
                logger.info("[agent %d] %s", self.process.pid, line)
            self._stderr_done.set()

    async def aclose(self) -> None:
        """Shut the agent down: close stdin, grace period, SIGTERM, SIGKILL, reap."""
        self._closing = True
        with anyio.CancelScope(shield=True):
            await self._shutdown()

    async def _shutdown(self) -> None:
        process = self.process
        await self._flush_before_close()
        try:
            await self._writer.aclose()
        except (anyio.BrokenResourceError, OSError):
            pass
        if process.returncode is None:
            with anyio.move_on_after(self._limits.grace):
                await process.wait()
        await stop_group(
            process, terminate_timeout=self._limits.terminate, kill_timeout=self._limits.kill
        )
        if process.returncode is not None:
            # Read what the agent wrote last (often why it exited) before the drain stops;
            # bounded, since a process outside its group may still hold stderr open.
            with anyio.move_on_after(EXIT_WAIT_TIMEOUT):
                await self._stderr_done.wait()
        await self._close_reader()


@asynccontextmanager
async def spawn_agent(
    command: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    stderr_tail_bytes: int = STDERR_TAIL_BYTES,
    shutdown_grace: float = SHUTDOWN_GRACE,
    terminate_timeout: float = TERMINATE_TIMEOUT,
    kill_timeout: float = KILL_TIMEOUT,
) -> AsyncGenerator[SubprocessTransport]:
    """Start an agent process and yield a transport to it; shut it down on exit.

    Args:
        command: the program and its arguments (no shell).
        cwd: the working directory of the process.
        env: variables set for the process, over this process's environment if
            ``inherit_env`` (the default), else alone.
        max_message_bytes: the largest line accepted from the agent.
        stderr_tail_bytes: how much of stderr is kept for error messages.
        shutdown_grace, terminate_timeout, kill_timeout: the shutdown ladder's bounds.

    Raises:
        FileNotFoundError: the program does not exist.
    """
    if not command:
        raise ValueError("spawn_agent needs a command")
    full_env = dict(os.environ) if inherit_env else {}
    if env:
        full_env.update(env)
    child_stdin, parent_stdin = os.pipe()
    parent_stdout, child_stdout = os.pipe()
    try:
        process = await spawn_group(
            command,
            stdin=child_stdin,
            stdout=child_stdout,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=full_env,
        )
    except BaseException:
        os.close(parent_stdin)
        os.close(parent_stdout)
        raise
    finally:
        os.close(child_stdin)
        os.close(child_stdout)
    transport = SubprocessTransport(
        process,
        parent_stdin,
        parent_stdout,
        _StderrRing(stderr_tail_bytes),
        _Limits(shutdown_grace, terminate_timeout, kill_timeout),
        max_message_bytes,
    )
    try:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(transport._drain_stderr)
            try:
                yield transport
            finally:
                await transport.aclose()
                task_group.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            signal_group(process.pid, signal.SIGKILL)

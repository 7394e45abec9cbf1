"""Byte streams over raw file descriptors (pipes), for any anyio backend.

anyio offers no stream for an inherited file descriptor such as the agent's own stdin and
stdout, so these classes put the descriptor in non-blocking mode and wait for readiness with
``anyio.wait_readable`` / ``anyio.wait_writable``. This works on asyncio and trio alike and
avoids a thread hop per message. The original blocking mode is restored on close.
"""

from __future__ import annotations

import contextlib
import errno
import os

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ("FdReceiveStream", "FdSendStream")


class _FdBase:
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)
        self._closed = False

    def fileno(self) -> int:
        """The file descriptor."""
        return self._fd

    @property
    def closed(self) -> bool:
        """Whether the stream was closed."""
        return self._closed

    def _restore(self) -> None:
        if not self._closed:
            self._closed = True
            # A task blocked on this descriptor would otherwise wait forever (a closed fd is
            # silently dropped from epoll): wake it with ClosedResourceError.
            anyio.notify_closing(self._fd)
            try:
                os.set_blocking(self._fd, self._was_blocking)
            except OSError:
                pass


class FdReceiveStream(_FdBase, ByteReceiveStream):
    """Read bytes from a file descriptor without blocking the event loop.

    Closing the stream leaves the descriptor open unless :attr:`owns_fd` is set (a pipe
    this process created, such as a child's stdout).
    """

    owns_fd: bool = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """Read up to ``max_bytes``; raises ``anyio.EndOfStream`` at end of file."""
        while True:
            data = self.read_nowait(max_bytes)
            if data is not None:
                return data
            await self.wait_readable()

    def read_nowait(self, max_bytes: int = 65536) -> bytes | None:
        """Read what the pipe holds now (up to ``max_bytes``), or ``None`` when it is empty.

        Raises:
            anyio.EndOfStream: end of file.
            anyio.ClosedResourceError: the stream was closed.
            anyio.BrokenResourceError: reading failed.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = os.read(self._fd, max_bytes)
        except BlockingIOError:
            return None
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def wait_readable(self) -> None:
        """Wait until the pipe has data or end of file (or the stream is closed).

        Raises:
            anyio.ClosedResourceError: the stream was closed (also while waiting).
        """
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            await anyio.wait_readable(self._fd)
        except PermissionError:
            # A regular file (stdin redirected from one), which epoll refuses to watch: it is
            # always readable, a read returns data or end of file.
            await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        """Stop reading; close the descriptor if this stream owns it."""
        if not self._closed:
            self._restore()
            if self.owns_fd:
                with contextlib.suppress(OSError):
                    os.close(self._fd)


class FdSendStream(_FdBase, ByteSendStream):
    """Write bytes to a file descriptor without blocking the event loop."""

    def write_nowait(self, data: bytes | memoryview) -> int:
        """Write what the pipe takes now, without waiting; returns the bytes written.

        Raises:
            anyio.ClosedResourceError: the stream was closed.
            anyio.BrokenResourceError: the reader is gone.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise anyio.BrokenResourceError from exc
            raise

    async def wait_writable(self) -> None:
        """Wait until the pipe takes bytes again (or the reader is gone).

        Raises:
            anyio.ClosedResourceError: the stream was closed (also while waiting).
        """
        if self._closed:
            raise anyio.ClosedResourceError
        await anyio.wait_writable(self._fd)

    async def send(self, item: bytes) -> None:
        """Write all of ``item``, waiting while the pipe is full."""
        view = memoryview(item)
        while view:
            written = self.write_nowait(view)
            if written:
                view = view[written:]
            else:
                await self.wait_writable()

    async def aclose(self) -> None:
        """Close the write side so the reader sees end of file."""
        if not self._closed:
            self._restore()
            try:
                os.close(self._fd)
            except OSError:
                pass

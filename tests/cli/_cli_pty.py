"""A program on a real pseudo-terminal (Python's ``pty``): read its screen, type into it."""

from __future__ import annotations

import os
import pty
import select
import time
from pathlib import Path

from helpers.timeouts import TIMEOUT

__all__ = ("Terminal",)


class Terminal:
    """A program running on a pty: read its screen, type into it."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: exec at once (no Python state of the parent is used)
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        self.screen = ""

    def expect(self, text: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while text not in self.screen:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{text!r} never appeared; the screen:\n{self.screen}"
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # the program exited and closed the pty
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{text!r} never appeared; the screen:\n{self.screen}")
                self.screen += chunk.decode(errors="replace")

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def wait(self) -> int:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    chunk = b""
                self.screen += chunk.decode(errors="replace")
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, 9)
        raise AssertionError(f"the program did not exit; the screen:\n{self.screen}")

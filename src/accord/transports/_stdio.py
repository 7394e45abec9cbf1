"""The agent's own stdin and stdout as a message transport.

An agent launched by an editor reads JSON-RPC from stdin and writes it to stdout; anything
else it prints must go to stderr. ``stdio_transport()`` takes over file descriptors 0 and 1
(by default) and returns a :class:`StreamTransport` over them. It redirects Python-level
``sys.stdout`` to stderr so that a stray ``print()`` cannot corrupt the protocol stream.
"""

from __future__ import annotations

import os
import sys

from ._fd import FdReceiveStream, FdSendStream
from ._framing import MAX_MESSAGE_BYTES
from ._stream import StreamTransport

__all__ = ("stdio_transport",)


def stdio_transport(
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    protect_stdout: bool = True,
) -> StreamTransport:
    """Return a transport over this process's stdin and stdout.

    Args:
        stdin_fd: descriptor to read messages from.
        stdout_fd: descriptor to write messages to. It is duplicated, so closing the
            transport closes only the duplicate and the process can still exit cleanly.
        max_message_bytes: the largest line accepted.
        protect_stdout: point ``sys.stdout`` at stderr so ``print()`` cannot corrupt the
            stream of messages.
    """
    out_fd = os.dup(stdout_fd)
    if protect_stdout and stdout_fd == 1:
        sys.stdout.flush()
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return StreamTransport(
        FdReceiveStream(stdin_fd), FdSendStream(out_fd), max_message_bytes=max_message_bytes
    )

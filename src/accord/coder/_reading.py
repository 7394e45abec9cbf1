"""Opening the files the model names, safely: regular files only, never blocking, bounded.

Every file the coder reads from disk for the model (``read_file``, ``grep``, the project notes)
is opened here. A project can hold anything: a named pipe (opening it for reading waits for a
writer, forever), a link to ``/dev/zero`` (reading never ends) or to a terminal, a socket, a
file of many gigabytes. So a file is opened with ``O_NONBLOCK`` (a FIFO opens at once instead
of waiting) and ``O_NOCTTY``, its type and size are checked on the open descriptor (``fstat``:
what is read is what was checked), and only a regular file is read, at most ``limit`` bytes
(a file that grows past the limit while being read is refused too).

:class:`Unreadable` says why a file was not read, in words the model understands; the tools
turn it into a failed call (``read_file``) or a skipped file (``grep``).

Above: :mod:`._files`, :mod:`._search`, :mod:`._prompt`. Below: the OS.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Final

from ._paths import ToolError

__all__ = ("READ_FLAGS", "Unreadable", "describe_mode", "read_regular")

READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
"""How files are opened: never blocking on a FIFO, never becoming a controlling terminal."""

_CHUNK: Final = 1024 * 1024


class Unreadable(ToolError):
    """A file that is not read: not a regular file, too large, or not openable."""


def describe_mode(mode: int) -> str:
    """What kind of file ``mode`` (an ``st_mode``) is, as a phrase (``"a named pipe (FIFO)"``)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def read_regular(
    path: str, *, limit: int, shown: str | None = None, truncate: bool = False
) -> bytes:
    """The content of the regular file at ``path``, at most ``limit`` bytes.

    Args:
        path: The file (links are followed; confine it first).
        limit: The largest size read; a larger file is refused, not cut (but see ``truncate``).
        shown: How the file is named in messages (default: ``path``).
        truncate: Return the first ``limit + 1`` bytes of a larger file instead of refusing it
            (the caller sees it was cut by the length).

    Raises:
        Unreadable: it is missing, not a regular file (FIFO, device, socket, directory),
            larger than ``limit``, or cannot be opened or read.
    """
    name = shown or path
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        raise Unreadable(f"{name} does not exist") from None
    except IsADirectoryError:
        raise Unreadable(f"{name} is a directory") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a device without its driver
            raise Unreadable(f"{name} is {_kind_of(path)}; only regular files are read") from None
        raise Unreadable(f"cannot read {name}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = describe_mode(info.st_mode)
            raise Unreadable(f"{name} is {kind}; only regular files are read")
        if info.st_size > limit and not truncate:
            raise Unreadable(_too_large(name, info.st_size, limit))
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit and not truncate:
            raise Unreadable(_too_large(name, total, limit))
        return b"".join(chunks)
    except OSError as exc:
        raise Unreadable(f"cannot read {name}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _kind_of(path: str) -> str:
    try:
        return describe_mode(os.stat(path).st_mode)
    except OSError:
        return "not a regular file"


def _too_large(name: str, size: int, limit: int) -> str:
    return (
        f"{name} is {size:,} bytes, more than the {limit:,} bytes read at once; "
        "look into it with grep, or run_command (head, tail, sed -n)"
    )

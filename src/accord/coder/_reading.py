"""Opening the files the model names, safely: regular files only, never blocking, bounded.

Every file the coder reads from disk for the model (``read_file``, ``grep``, the project notes)
is opened here. A path inside the session's roots is resolved and opened by
:func:`read_confined` on directory descriptors (:mod:`accord.confined`, the walker the client's
file host uses too): a directory of the project swapped for a symlink while the coder works
cannot make it read a file outside the roots.

A project can hold anything: a named pipe (opening it for reading waits for a writer,
forever), a link to ``/dev/zero`` (reading never ends) or to a terminal, a socket, a file of
many gigabytes. So a file is opened with ``O_NONBLOCK`` (a FIFO opens at once instead of
waiting) and ``O_NOCTTY``, its type and size are checked on the open descriptor (``fstat``:
what is read is what was checked), and only a regular file is read, at most ``limit`` bytes
(a file that grows past the limit while being read is refused too).

:class:`Unreadable` says why a file was not read, in words the model understands; the tools
turn it into a failed call (``read_file``) or a skipped file (``grep``).

Above: :mod:`._files`, :mod:`._search`, :mod:`._prompt`. Below: :mod:`accord.confined`, the OS.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from typing import Final

from ..confined import Confined, Finish, confined
from ..errors import InvalidParams
from ._paths import ToolError

__all__ = (
    "Missing",
    "Unreadable",
    "describe_mode",
    "open_confined",
    "read_confined",
    "read_regular_fd",
)

_CHUNK: Final = 1024 * 1024


class Unreadable(ToolError):
    """A file that is not read: not a regular file, too large, or not openable."""


class Missing(Unreadable):
    """A directory on the path does not exist (so neither does the file)."""


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


def read_regular_fd(fd: int, name: str, *, limit: int, truncate: bool = False) -> bytes:
    """The content of the open file ``fd`` (named ``name`` in messages), at most ``limit`` bytes.

    Only a regular file is read (its type and size checked on the open descriptor: what is
    read is what was checked); a file that grows past ``limit`` while being read is refused
    too, unless ``truncate``, which returns the first ``limit + 1`` bytes (the caller sees
    it was cut by the length).

    Raises:
        Unreadable: not a regular file, larger than ``limit``, or unreadable.
    """
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


def open_confined(
    path: str,
    roots: Sequence[str],
    finish: Finish,
    *,
    shown: str | None = None,
    create_parents: bool = False,
) -> Confined:
    """Resolve absolute ``path`` inside ``roots``, on descriptors (``accord.confined``).

    The caller closes the result. A missing final component is not an error here (its ``fd``
    or ``existing`` is None).

    Raises:
        ToolError: the path leads outside the roots (a symlink swapped in meanwhile), or the
            tree refused (a parent missing or not a directory, a loop, a permission).
    """
    name = shown or path
    try:
        return confined(path, roots, final=finish, create_parents=create_parents)
    except InvalidParams as exc:
        raise ToolError(f"{name} is outside the workspace ({exc.message})") from None
    except IsADirectoryError:
        raise Unreadable(f"{name} is a directory") from None
    except NotADirectoryError:
        raise Unreadable(f"{name}: a component of the path is not a directory") from None
    except FileNotFoundError:
        raise Missing(f"{name} does not exist (a directory on its path is missing)") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a device without its driver
            raise Unreadable(f"{name} is not a regular file; only regular files are read") from None
        raise Unreadable(f"cannot open {name}: {exc.strerror or exc}") from exc


def read_confined(
    path: str,
    roots: Sequence[str],
    *,
    limit: int,
    shown: str | None = None,
    truncate: bool = False,
) -> bytes | None:
    """The content of the regular file at ``path`` inside ``roots``, opened with no race.

    Returns:
        The bytes (at most ``limit``, or ``limit + 1`` with ``truncate``), or None when the
        file (or a directory on its path) does not exist.

    Raises:
        ToolError: outside the roots; Unreadable: not a regular file, too large, unreadable.
    """
    name = shown or path
    try:
        found = open_confined(path, roots, "open", shown=name)
    except Missing:
        return None
    try:
        if found.fd is None:
            return None
        return read_regular_fd(found.fd, name, limit=limit, truncate=truncate)
    finally:
        found.close()


def _too_large(name: str, size: int, limit: int) -> str:
    return (
        f"{name} is {size:,} bytes, more than the {limit:,} bytes read at once; "
        "look into it with grep, or run_command (head, tail, sed -n)"
    )

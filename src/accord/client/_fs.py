"""The client's file-system host service: ``fs/read_text_file`` and ``fs/write_text_file``.

The client library calls :class:`FileSystemHost` when an agent asks to read or write a file. Every
path is confined to the session's roots (its ``cwd`` plus any additional directories):

* the path must be absolute (the spec says so; a relative path is refused, never guessed at);
* it is resolved with symlinks followed, and the result must lie inside one of the (resolved)
  roots, so ``..`` traversal and symlinks that leave the roots are refused, while symlinks that
  stay inside are followed;
* resolution and use happen on directory descriptors (:mod:`accord.confined`), never
  on path strings, so an agent that swaps a directory for a symlink meanwhile (a
  rename-exchange race) cannot make a read or a write, or its temporary file, land outside;
* refusals are :class:`~accord.errors.InvalidParams` naming the path; a file that does not exist is
  :class:`~accord.errors.ResourceNotFound` with ``data = {"uri": "file://..."}``.

Reads stream the file and stop after the requested lines, so ``line``/``limit`` on a huge file
cost what they return. Lines end at ``\\n`` only (``\\r\\n`` is kept as-is inside the content);
the editor's unsaved buffer, when an :data:`OpenBuffer` hook is given, wins over the disk.
Writes are atomic (temporary file in the same directory, ``fsync``, ``os.replace``), keep an
existing file's permissions, and create the file and any missing parent directories inside
the roots (the spec says the client MUST create the file; a missing directory is the same
request one level up). All blocking I/O runs in a worker thread.

Above: the client library (``accord.client``), which advertises ``fs.readTextFile`` /
``fs.writeTextFile`` only when a host is configured and passes each session's roots. Below:
the wire models of ``accord.schema`` and the error tree of ``accord.errors``; nothing else of
ours. The terminal host reuses :func:`resolve_within` for its working directories.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, TypeAlias

import anyio.to_thread

from accord.confined import MAX_SYMLINKS, Confined, confined
from accord.errors import InternalError, InvalidParams, RequestError, ResourceNotFound
from accord.schema import (
    ReadTextFileRequest,
    ReadTextFileResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

__all__ = ("MAX_READ_BYTES", "FileSystemHost", "OpenBuffer", "resolve_within")

#: Largest text one ``fs/read_text_file`` answer may carry. The answer travels in one JSON-RPC
#: frame (``accord.transports.MAX_MESSAGE_BYTES`` = 64 MiB) and JSON escaping can inflate text
#: several times; no model context holds even this much, so past it the agent must page with
#: ``line``/``limit``.
MAX_READ_BYTES = 16 * 1024 * 1024

#: Bytes read at a time while skipping lines before ``line``: big enough that skipping a
#: million short lines is a few hundred reads, small enough that a single giant line is never
#: held in memory just to be skipped.
_SKIP_CHUNK_BYTES = 256 * 1024

# The temporary file is created by name in a directory we hold: never through a symlink.
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)

OpenBuffer: TypeAlias = Callable[[Path], str | None]
"""A hook from the embedding editor: the unsaved text of the buffer open for a path, or None.

It receives the resolved (real) path and must not block; ``fs/read_text_file`` serves its text
instead of the disk's, as the spec asks ("including unsaved editor state").
"""


def resolve_within(path: str, roots: Sequence[str | os.PathLike[str]]) -> Path:
    """Resolve an absolute path, following symlinks, and check it lies inside one of the roots.

    A path that does not exist (yet) resolves as far as it exists, so a file about to be
    created is judged by its closest existing ancestor.

    Args:
        path: the path from the request; must be absolute.
        roots: the session's directories (``cwd`` first); each is resolved the same way.

    Returns:
        The resolved path.

    Raises:
        InvalidParams: the path is relative, malformed, or resolves outside every root.
    """
    if "\0" in path:
        raise InvalidParams(f"path contains a NUL character: {path!r}", {"path": path})
    if not os.path.isabs(path):
        raise InvalidParams(f"path must be absolute: {path!r}", {"path": path})
    real = Path(os.path.realpath(path))
    resolved_roots = [Path(os.path.realpath(root)) for root in roots]
    if any(real.is_relative_to(root) for root in resolved_roots):
        return real
    shown = ", ".join(str(root) for root in resolved_roots) or "(none)"
    resolved = "" if str(real) == path else f" (it resolves to {str(real)!r})"
    raise InvalidParams(
        f"path is outside the session's directories: {path!r}{resolved}; allowed: {shown}",
        {"path": path},
    )


class FileSystemHost:
    """Serves ``fs/read_text_file`` and ``fs/write_text_file`` inside a session's roots.

    One host serves every session; the caller passes each request's roots. The host keeps no
    state between calls, so it needs no ``async with``.

    Args:
        open_buffer: optional :data:`OpenBuffer` hook returning an editor's unsaved text.
        max_read_bytes: the largest content one read may return (see :data:`MAX_READ_BYTES`).
    """

    def __init__(
        self, *, open_buffer: OpenBuffer | None = None, max_read_bytes: int = MAX_READ_BYTES
    ) -> None:
        self._open_buffer = open_buffer
        self._max_read_bytes = max_read_bytes

    async def read_text_file(
        self, request: ReadTextFileRequest, roots: Sequence[str | os.PathLike[str]]
    ) -> ReadTextFileResponse:
        """Read a text file, or the lines ``line`` (1-based) to ``line + limit - 1`` of it.

        Lines end at ``\\n``; each returned line keeps its ending (``\\r\\n`` included). A
        ``line`` past the end gives empty content, as does ``limit = 0``.

        Args:
            request: the agent's request.
            roots: the session's directories, ``cwd`` first.

        Raises:
            InvalidParams: the path is refused (see :func:`resolve_within`), ``line`` is 0,
                the path is a directory or not a regular file, the selected text is not UTF-8,
                or it is larger than ``max_read_bytes``.
            ResourceNotFound: the file does not exist.
            InternalError: the operating system refused the read for another reason.
        """
        path = request.path
        line = 1 if request.line is None else request.line
        if line < 1:
            raise InvalidParams(f"line is 1-based, got {line}", {"path": path, "line": line})
        limit = request.limit
        try:
            found = await anyio.to_thread.run_sync(_open_for_reading, path, roots)
        except OSError as exc:
            raise _os_error(exc, path, "read") from exc
        try:
            if self._open_buffer is not None:
                text = self._open_buffer(Path(found.real))
                if text is not None:
                    content = _slice_lines(text, line, limit)
                    if len(content.encode("utf-8", "replace")) > self._max_read_bytes:
                        raise _too_large(path, self._max_read_bytes)
                    return ReadTextFileResponse(content=content)
            fd = found.take_fd()
        finally:
            found.close()
        if fd is None:
            raise ResourceNotFound(f"file not found: {path!r}", {"uri": Path(path).as_uri()})
        try:
            data = await anyio.to_thread.run_sync(
                _read_lines, fd, path, line, limit, self._max_read_bytes
            )
        except OSError as exc:
            raise _os_error(exc, path, "read") from exc
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidParams(
                f"{path!r} is not UTF-8 text (invalid byte at offset {exc.start} of the "
                "requested lines)",
                {"path": path},
            ) from None
        return ReadTextFileResponse(content=content)

    async def write_text_file(
        self, request: WriteTextFileRequest, roots: Sequence[str | os.PathLike[str]]
    ) -> WriteTextFileResponse:
        """Write a text file atomically, creating it (and missing parent directories).

        The content is encoded as UTF-8 and written verbatim (no newline translation). An
        existing file keeps its permission bits (and its owner, where the process may set it);
        a written symlink keeps pointing at the file it named, which is replaced. Readers
        see the old or the new content, never a mix.

        Args:
            request: the agent's request.
            roots: the session's directories, ``cwd`` first.

        Raises:
            InvalidParams: the path is refused (see :func:`resolve_within`), is a directory,
                is not a regular file, or a parent component is not a directory.
            InternalError: the operating system refused the write for another reason.
        """
        path = request.path
        try:
            data = request.content.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParams(
                f"content for {path!r} is not valid Unicode (lone surrogate)", {"path": path}
            ) from None
        try:
            await anyio.to_thread.run_sync(_atomic_write, path, roots, data)
        except OSError as exc:
            raise _os_error(exc, path, "write") from exc
        return WriteTextFileResponse()


def _too_large(path: str, limit: int) -> InvalidParams:
    return InvalidParams(
        f"{path!r}: the requested text is larger than {limit} bytes; "
        "read it in parts with 'line' and 'limit'",
        {"path": path},
    )


def _check_regular_file(mode: int, path: str) -> None:
    """Refuse directories, FIFOs, sockets and devices: nothing a text-file request may touch."""
    if stat.S_ISDIR(mode):
        raise InvalidParams(f"{path!r} is a directory, not a file", {"path": path})
    if not stat.S_ISREG(mode):
        raise InvalidParams(f"{path!r} is not a regular file", {"path": path})


def _os_error(exc: OSError, path: str, action: str) -> RequestError:
    """Map an OS error from a worker thread to the error the agent should see."""
    data = {"path": path}
    if isinstance(exc, FileNotFoundError) and action == "read":
        return ResourceNotFound(f"file not found: {path!r}", {"uri": Path(path).as_uri()})
    if isinstance(exc, IsADirectoryError):
        return InvalidParams(f"{path!r} is a directory, not a file", data)
    if isinstance(exc, NotADirectoryError | FileNotFoundError | FileExistsError):
        return InvalidParams(f"cannot {action} {path!r}: a parent is not a directory", data)
    if isinstance(exc, PermissionError):
        return InvalidParams(f"cannot {action} {path!r}: permission denied", data)
    if exc.errno == errno.ELOOP:
        return InvalidParams(
            f"cannot {action} {path!r}: a symlink loop (more than {MAX_SYMLINKS} symlinks)",
            data,
        )
    return InternalError(f"cannot {action} {path!r}: {exc.strerror or exc}", data)


def _slice_lines(text: str, line: int, limit: int | None) -> str:
    """Lines ``line``.. of ``text`` (at most ``limit``), ending at ``\\n`` like the disk path."""
    start = 0
    for _ in range(line - 1):
        newline = text.find("\n", start)
        if newline < 0:
            return ""
        start = newline + 1
    if limit is None:
        return text[start:]
    end = start
    for _ in range(limit):
        newline = text.find("\n", end)
        if newline < 0:
            return text[start:]
        end = newline + 1
    return text[start:end]


def _open_for_reading(path: str, roots: Sequence[str | os.PathLike[str]]) -> Confined:
    """Worker thread: resolve and open ``path`` inside the roots (see :mod:`accord.confined`)."""
    return confined(path, roots, final="open")


def _read_lines(fd: int, path: str, line: int, limit: int | None, max_bytes: int) -> bytes:
    """Worker thread: the bytes of lines ``line``.. (at most ``limit``) of the file ``fd``.

    Takes ownership of ``fd``. Only a regular file is read: a FIFO, a device or a directory
    is refused before any read (the open did not block: ``O_NONBLOCK``).
    """
    try:
        _check_regular_file(os.fstat(fd).st_mode, path)
        file = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with file:
        if line > 1 and not _skip_lines(file, line - 1):
            return b""
        if limit is None:
            data = file.read(max_bytes + 1)
        else:
            parts: list[bytes] = []
            size = 0
            while len(parts) < limit and size <= max_bytes:
                part = file.readline(max_bytes + 1 - size)
                if not part:
                    break
                parts.append(part)
                size += len(part)
            data = b"".join(parts)
    if len(data) > max_bytes:
        raise _too_large(path, max_bytes)
    return data


def _skip_lines(file: BinaryIO, count: int) -> bool:
    """Move past ``count`` newlines; False if the file has fewer (the start is past the end)."""
    remaining = count
    while True:
        chunk = file.read(_SKIP_CHUNK_BYTES)
        if not chunk:
            return False
        found = chunk.count(b"\n")
        if found < remaining:
            remaining -= found
            continue
        position = -1
        for _ in range(remaining):
            position = chunk.index(b"\n", position + 1)
        file.seek(position + 1 - len(chunk), os.SEEK_CUR)
        return True


def _atomic_write(path: str, roots: Sequence[str | os.PathLike[str]], data: bytes) -> None:
    """Worker thread: replace (or create) ``path`` with ``data`` so readers never see a mix."""
    # Every step below is relative to the parent's descriptor: a directory on the way that
    # is swapped for a symlink meanwhile cannot move the file, or its temporary, elsewhere.
    found = confined(path, roots, final="stat", create_parents=True)
    try:
        parent, name, existing = found.parent_fd, found.name, found.existing
        if existing is not None:
            _check_regular_file(existing.st_mode, path)
        temporary = f".{name[:180]}.{secrets.token_hex(6)}.accord-tmp"
        # A new file gets 0o666 minus the umask, like any file the user's tools create.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
        fd = os.open(temporary, flags, 0o666, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                if existing is not None:
                    _copy_ownership(file.fileno(), existing)
                os.fsync(file.fileno())
            os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=parent)
            raise
        with contextlib.suppress(OSError):
            os.fsync(parent)  # make the rename durable
    finally:
        found.close()


def _copy_ownership(fd: int, existing: os.stat_result) -> None:
    """Give the new file the old one's mode and, when allowed, its owner and group."""
    os.fchmod(fd, stat.S_IMODE(existing.st_mode))
    current = os.fstat(fd)
    if (existing.st_uid, existing.st_gid) != (current.st_uid, current.st_gid):
        # Only a privileged process may give a file away; the content matters more.
        with contextlib.suppress(OSError):
            os.fchown(fd, existing.st_uid, existing.st_gid)

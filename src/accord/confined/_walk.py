"""Paths confined to a session's roots, resolved and opened with no window for a swap.

An agent may share the machine with the client and change the tree while the client works on
it: swap a directory for a symlink (``renameat2(RENAME_EXCHANGE)``) between a check of the path
and its use. A check-then-open on path strings always has that window. This module has none:
it walks the path one component at a time from a descriptor of the root, opening each
directory relative to the previous one with ``O_NOFOLLOW | O_DIRECTORY``. A symlink met on the
way is read (``readlink`` relative to its directory) and its target walked the same way: a
relative target from where the link sits, an absolute one only from a root it lies in; ``..``
pops one directory and is refused above the root. Whatever the tree does meanwhile, every
descriptor in hand is a directory inside a root, so the final open (or create, or rename),
relative to the last of them, lands inside the roots or fails.

Above: the client's file-system host (:mod:`accord.client._fs`), which maps the ``OSError``
raised here to ACP errors, and the coder's own file tools (:mod:`accord.coder._files`,
:mod:`accord.coder._search`), which map it to messages for the model: one implementation for
both sides. Below: the POSIX ``*at`` calls of :mod:`os` (``dir_fd=``). Nothing else of ours
but the error tree.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from accord.errors import InvalidParams

__all__ = ("MAX_SYMLINKS", "Confined", "Finish", "confined")

Finish = Literal["open", "stat", "directory"]
"""What :func:`confined` does with the final component: open it for reading, ``lstat`` it (for
a write, which creates or renames onto it), or open it as a directory (for a listing)."""

#: Most symlinks one path may go through, as the kernel's own limit (``ELOOP`` past it).
MAX_SYMLINKS = 40

_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
# A FIFO or device must not block the open; regular files ignore the flag.
_O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
# A terminal opened for reading must not become the controlling one.
_O_NOCTTY: int = getattr(os, "O_NOCTTY", 0)
_READ_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_NOCTTY | _O_CLOEXEC
# How an open with O_NOFOLLOW reports a symlink: ELOOP (Linux, BSD), EMLINK (FreeBSD), and
# ENOTDIR with O_DIRECTORY (Linux).
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})


@dataclass(slots=True)
class Confined:
    """A resolved path inside the roots, held by descriptors; :meth:`close` releases them.

    Attributes:
        parent_fd: a descriptor of the directory holding the final component (-1 when the
            path named a root itself, with ``final="directory"``).
        name: the final component's name in that directory.
        real: the resolved absolute path, for messages and the editor's buffer lookup.
        fd: for ``final="open"``, the opened file; for ``final="directory"``, the opened
            directory (None when it does not exist).
        existing: for ``final="stat"``, the final component's ``lstat`` (None when absent).
    """

    parent_fd: int
    name: str
    real: str
    fd: int | None = None
    existing: os.stat_result | None = None

    def close(self) -> None:
        """Close the descriptors still held (the opened file too, unless taken with ``take_fd``)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.parent_fd >= 0:
            os.close(self.parent_fd)
            self.parent_fd = -1

    def take_fd(self) -> int | None:
        """Hand the opened file's descriptor to the caller, who closes it from then on."""
        fd, self.fd = self.fd, None
        return fd


def _components(path: str) -> list[str]:
    return [part for part in path.split("/") if part and part != "."]


class _Root:
    __slots__ = ("forms", "real")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        given: str = os.path.abspath(os.fspath(root))
        self.real: str = os.path.realpath(given)
        forms = {tuple(_components(self.real)), tuple(_components(os.path.normpath(given)))}
        # Shortest first: the outermost spelling of a root leaves the most room for ``..``.
        self.forms = sorted(forms, key=len)

    def strip(self, parts: Sequence[str]) -> list[str] | None:
        """``parts`` below this root, or None if the path does not start with it."""
        for form in self.forms:
            if tuple(parts[: len(form)]) == form:
                return list(parts[len(form) :])
        return None


def _outside(path: str, shown: str, roots: Sequence[_Root]) -> InvalidParams:
    allowed = ", ".join(root.real for root in roots) or "(none)"
    resolved = "" if shown == path else f" (it resolves to {shown!r})"
    return InvalidParams(
        f"path is outside the session's directories: {path!r}{resolved}; allowed: {allowed}",
        {"path": path},
    )


def _readlink(name: str, dir_fd: int) -> str | None:
    """The target of the symlink ``name`` in ``dir_fd``, or None if it is not a symlink."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def confined(
    path: str,
    roots: Sequence[str | os.PathLike[str]],
    *,
    final: Finish,
    create_parents: bool = False,
) -> Confined:
    """Resolve ``path`` inside ``roots`` by descriptors; see the module docstring.

    Args:
        path: the absolute path from the request.
        roots: the session's directories, ``cwd`` first (trusted: the client chose them).
        final: ``"open"`` opens the final component for reading (``O_NOFOLLOW``,
            ``O_NONBLOCK``); ``"stat"`` only ``lstat``s it (for a write, which renames onto
            it); ``"directory"`` opens it as a directory (a root itself included). Either
            way a final symlink is followed, inside the roots.
        create_parents: create missing directories on the way (``mkdir`` relative to the
            parent's descriptor), for writes.

    Raises:
        InvalidParams: the path is relative or holds a NUL, or it (or a symlink on the way)
            leads outside every root.
        OSError: the tree refused: a missing parent (``FileNotFoundError``), a parent that is
            not a directory (``NotADirectoryError``), too many symlinks (``ELOOP``), the
            final component is a directory (``IsADirectoryError``), or not one for
            ``final="directory"`` (``NotADirectoryError``), a permission.
    """
    if "\0" in path:
        raise InvalidParams(f"path contains a NUL character: {path!r}", {"path": path})
    if not os.path.isabs(path):
        raise InvalidParams(f"path must be absolute: {path!r}", {"path": path})
    all_roots = [_Root(root) for root in roots]
    start = _locate(path, all_roots)
    if start is None:
        raise _outside(path, os.path.realpath(path), all_roots)
    root, rest = start
    return _Walk(path, all_roots, create_parents).run(root, rest, final)


def _locate(path: str, roots: Sequence[_Root]) -> tuple[_Root, list[str]] | None:
    """The root ``path`` starts with (the outermost), and the components below it."""
    parts = _components(path)
    found: tuple[_Root, list[str]] | None = None
    for root in roots:
        rest = root.strip(parts)
        if rest is not None and (found is None or len(rest) > len(found[1])):
            found = root, rest
    if found is not None:
        return found
    # Spelled through a link above the root (or with ``..`` into it): where it leads today
    # only tells which components to walk; the walk itself trusts nothing but descriptors.
    real_parts = _components(os.path.realpath(path))
    for root in roots:
        rest = root.strip(real_parts)
        if rest is not None:
            return root, rest
    return None


class _Walk:
    """One resolution: the descriptors opened so far, closed on the way out."""

    __slots__ = ("_create", "_links", "_path", "_roots", "_stack")

    def __init__(self, path: str, roots: Sequence[_Root], create_parents: bool) -> None:
        self._path = path
        self._roots = roots
        self._create = create_parents
        self._links = 0
        #: (descriptor, real path) of each directory from the root down to the current one.
        self._stack: list[tuple[int, str]] = []

    def run(self, root: _Root, rest: list[str], final: Finish) -> Confined:
        try:
            self._enter_root(root)
            queue = deque(rest)
            while True:
                if not queue:
                    # The path names a directory (a root, or ``x/..``): no file there.
                    if final == "directory":
                        fd, where = self._stack.pop()  # handed over: not closed with the rest
                        return Confined(-1, "", where, fd)
                    raise IsADirectoryError(errno.EISDIR, "is a directory", self._path)
                name = queue.popleft()
                if name == "..":
                    self._up(queue)
                    continue
                fd, where = self._stack[-1]
                if queue:
                    self._down(name, fd, where, queue)
                    continue
                result = self._final(name, fd, where, queue, final)
                if result is not None:
                    return result
        finally:
            self._close_all()

    # ----------------------------------------------------------------- steps

    def _enter_root(self, root: _Root) -> None:
        self._close_all()
        fd = os.open(root.real, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        self._stack.append((fd, root.real))

    def _up(self, queue: deque[str]) -> None:
        if len(self._stack) == 1:
            shown = os.path.normpath(os.path.join(self._stack[-1][1], "..", *queue))
            raise _outside(self._path, shown, self._roots)
        os.close(self._stack.pop()[0])

    def _down(self, name: str, fd: int, where: str, queue: deque[str]) -> None:
        for _ in range(3):  # a directory created, then swapped away, by a racing peer
            try:
                child = os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not self._create:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                continue
            except OSError as exc:
                if exc.errno not in _SYMLINK_ERRNOS:
                    raise
                target = _readlink(name, fd)
                if target is None:
                    raise NotADirectoryError(
                        errno.ENOTDIR, "not a directory", os.path.join(where, name)
                    ) from None
                self._follow(target, where, queue)
                return
            self._stack.append((child, os.path.join(where, name)))
            return
        raise FileNotFoundError(errno.ENOENT, "directory keeps vanishing", self._path)

    def _final(
        self, name: str, fd: int, where: str, queue: deque[str], final: Finish
    ) -> Confined | None:
        real = os.path.join(where, name)
        if final != "stat":
            flags = _READ_FLAGS if final == "open" else _DIRECTORY_FLAGS
            try:
                opened = os.open(name, flags, dir_fd=fd)
            except FileNotFoundError:
                return self._result(name, real, None, None)
            except OSError as exc:
                if exc.errno not in _SYMLINK_ERRNOS:
                    raise
                target = _readlink(name, fd)
                if target is None:
                    if final == "directory":
                        raise NotADirectoryError(errno.ENOTDIR, "not a directory", real) from None
                    raise
                self._follow(target, where, queue)
                return None
            return self._result(name, real, opened, None)
        try:
            existing = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return self._result(name, real, None, None)
        if stat.S_ISLNK(existing.st_mode):
            target = _readlink(name, fd)
            if target is not None:
                self._follow(target, where, queue)
                return None
            return self._final(name, fd, where, queue, final)  # it changed: look again
        return self._result(name, real, None, existing)

    def _follow(self, target: str, where: str, queue: deque[str]) -> None:
        """Continue the walk through a symlink's target, in place of the link."""
        self._links += 1
        if self._links > MAX_SYMLINKS:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", self._path)
        if os.path.isabs(target):
            parts = _components(target)
            for root in self._roots:
                rest = root.strip(parts)
                if rest is not None:
                    self._enter_root(root)
                    queue.extendleft(reversed(rest))
                    return
            shown = os.path.normpath(os.path.join(target, *queue))
            raise _outside(self._path, shown, self._roots)
        queue.extendleft(reversed(_components(target)))

    # ----------------------------------------------------------------- descriptors

    def _result(
        self, name: str, real: str, fd: int | None, existing: os.stat_result | None
    ) -> Confined:
        parent_fd, _ = self._stack.pop()  # handed over: not closed with the rest
        return Confined(parent_fd, name, real, fd, existing)

    def _close_all(self) -> None:
        for fd, _ in self._stack:
            os.close(fd)
        self._stack.clear()

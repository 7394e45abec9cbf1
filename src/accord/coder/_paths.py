"""The session's roots, and the confinement of every path a tool is given to them.

A session works in its ``cwd`` and its additional directories (the *roots*). Every path the
model passes to a tool goes through :meth:`Roots.resolve`: relative paths are taken from the
``cwd``, ``~`` is not expanded (the model has no business in the user's home), and the result
must lie inside one of the roots *after symbolic links are resolved*, so a link inside the
project that points at ``/etc`` does not open a way out. The path handed on (to the editor or
to the disk) is the normalized one, not the resolved one: editors know open buffers by the
path the user sees.

:class:`ToolError` is the one exception the coder's tool code raises for a problem the model
should hear about (a path outside the roots, a missing file, an ambiguous edit); the tool layer
turns it into a failed tool call whose message the model reads.

This module imports nothing of pydantic-ai; the tools and the local fallbacks use it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ("MAX_PATH_CHARS", "Roots", "ToolError")

MAX_PATH_CHARS: Final = 4096
"""The longest path a tool accepts (Linux's ``PATH_MAX``); a longer one is refused unread."""


class ToolError(Exception):
    """A tool cannot do what the model asked; ``message`` is shown to the model and the user."""

    def __init__(self, message: str) -> None:
        """Create the error with the message the model will read."""
        super().__init__(message)
        self.message = message


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _real(given: str, absolute: str) -> str:
    """``absolute`` with its symbolic links resolved (a swap under way fails, never crashes)."""
    try:
        return os.path.realpath(absolute)
    except OSError as exc:  # a link replaced by a directory (or back) while it was read
        raise ToolError(
            f"{given!r} changed while it was being resolved ({exc.strerror or exc}); try again"
        ) from None


@dataclass(frozen=True, slots=True)
class Roots:
    """The directories a session may touch: ``cwd`` first, then the additional ones.

    Attributes:
        cwd: The session's absolute working directory.
        additional: More absolute directories, in the client's order.
    """

    cwd: str
    additional: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[str, ...]:
        """Every root, ``cwd`` first."""
        return (self.cwd, *self.additional)

    def resolve(self, path: str) -> str:
        """Return ``path`` as a normalized absolute path inside the roots.

        Raises:
            ToolError: the path is empty, too long, contains a NUL, or lies (after symbolic links)
                outside every root.
        """
        if not path or not path.strip():
            raise ToolError("the path is empty")
        if len(path) > MAX_PATH_CHARS:
            raise ToolError(
                f"the path is {len(path):,} characters long; at most {MAX_PATH_CHARS:,}"
            )
        if "\0" in path:
            raise ToolError(f"{path!r} contains a NUL character; no file has such a name")
        absolute = os.path.normpath(os.path.join(self.cwd, path))
        real = _real(path, absolute)
        for root in self.all:
            if _inside(absolute, os.path.normpath(root)) and _inside(real, os.path.realpath(root)):
                return absolute
        raise ToolError(
            f"{path!r} is outside the workspace; paths must be inside {self.describe()}"
        )

    def holds(self, path: str) -> bool:
        """Whether ``path`` (absolute), once its symbolic links are resolved, is inside a root.

        What a search asks of every link it meets: one whose target is outside is skipped.
        """
        try:
            real = _real(path, path)
        except ToolError:
            return False
        return any(_inside(real, os.path.realpath(root)) for root in self.all)

    def display(self, path: str) -> str:
        """``path`` relative to ``cwd`` when inside it, else absolute (for compact listings)."""
        if _inside(path, self.cwd):
            return os.path.relpath(path, self.cwd)
        return path

    def describe(self) -> str:
        """The roots as a human-readable list."""
        return ", ".join(repr(root) for root in self.all)

    @classmethod
    def of(cls, cwd: str, additional: Iterable[str] = ()) -> Roots:
        """Build the roots of a session (paths normalized)."""
        return cls(os.path.normpath(cwd), tuple(os.path.normpath(d) for d in additional))

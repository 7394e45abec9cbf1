"""Listing and searching the workspace on disk: ``list_directory``, ``find_files``, ``grep``.

ACP gives an agent no way to list or search through the editor, so these read the disk, always
confined to the session's roots (:class:`~._paths.Roots`). They are plain blocking functions
(the tools run them in a worker thread) and every one is bounded: at most
:data:`MAX_ENTRIES` directory entries, :data:`MAX_MATCHES` matches, files up to
:data:`MAX_GREP_FILE_BYTES`. Directories that are never the point of a search
(:data:`SKIPPED_DIRECTORIES`: version control, virtual environments, caches, ``node_modules``)
are not descended into. Results are text for the model, paths relative to the ``cwd``.

Glob patterns are matched against the path relative to the search directory, ``/``-separated:
``*``, ``?`` and ``[...]`` match within one segment, ``**`` matches any number of segments
(``**/*.py``: every Python file; ``src/**/test_*.py``). A pattern without ``/`` matches file
names at any depth (``*.py`` is ``**/*.py``).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from typing import Final

from ._paths import Roots, ToolError

__all__ = (
    "MAX_ENTRIES",
    "MAX_GREP_FILE_BYTES",
    "MAX_LINE_CHARS",
    "MAX_MATCHES",
    "SKIPPED_DIRECTORIES",
    "find_files",
    "glob_match",
    "grep",
    "list_directory",
)

MAX_ENTRIES: Final = 500
"""Entries a listing or ``find_files`` returns; a note says how many more there were."""

MAX_MATCHES: Final = 200
"""Matching lines ``grep`` returns; enough to locate things, small enough for a context window."""

MAX_GREP_FILE_BYTES: Final = 2 * 1024 * 1024
"""Files larger than this are not searched (generated files, data, logs)."""

MAX_LINE_CHARS: Final = 300
"""A matching line longer than this is cut (minified code would flood the context)."""

SKIPPED_DIRECTORIES: Final = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".idea",
        "dist",
        "build",
        "target",
    }
)
"""Directory names that searches do not descend into (listing one explicitly still works)."""


def _directory(roots: Roots, path: str) -> str:
    directory = roots.resolve(path)
    if not os.path.isdir(directory):
        raise ToolError(f"{path!r} is not a directory")
    return directory


def list_directory(roots: Roots, path: str = ".") -> str:
    """List one directory: sub-directories first (with a trailing ``/``), then files.

    Raises:
        ToolError: the path is outside the roots or not a directory.
    """
    directory = _directory(roots, path)
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: (not e.is_dir(), e.name))
    except OSError as exc:
        raise ToolError(f"cannot list {path!r}: {exc.strerror}") from exc
    names = [f"{e.name}/" if e.is_dir() else e.name for e in entries]
    shown = roots.display(directory)
    if not names:
        return f"{shown} is empty"
    return _bounded(names, MAX_ENTRIES, f"{shown}:")


def _walk(directory: str) -> Iterator[tuple[str, str]]:
    """Yield ``(absolute path, path relative to directory)`` of every file, sorted, pruned."""
    for current, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRECTORIES)
        for name in sorted(files):
            absolute = os.path.join(current, name)
            yield absolute, os.path.relpath(absolute, directory).replace(os.sep, "/")


def glob_match(pattern: str, relative: str) -> bool:
    """Whether ``relative`` (``/``-separated) matches ``pattern`` (see the module docstring)."""
    if "/" not in pattern:
        return fnmatch.fnmatchcase(relative.rsplit("/", 1)[-1], pattern)
    return _match_segments(pattern.strip("/").split("/"), relative.split("/"))


def _match_segments(pattern: list[str], parts: list[str]) -> bool:
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match_segments(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and _match_segments(rest, parts[1:])


def find_files(roots: Roots, pattern: str, path: str = ".") -> str:
    """Find files under ``path`` whose relative path matches the glob ``pattern``.

    Raises:
        ToolError: the path is outside the roots or not a directory, or the pattern is empty.
    """
    if not pattern.strip():
        raise ToolError("the pattern is empty")
    directory = _directory(roots, path)
    found = [roots.display(a) for a, rel in _walk(directory) if glob_match(pattern, rel)]
    if not found:
        return f"no files match {pattern!r} in {roots.display(directory)}"
    return _bounded(found, MAX_ENTRIES, f"{len(found)} file(s) match {pattern!r}:")


def grep(
    roots: Roots,
    pattern: str,
    path: str = ".",
    *,
    include: str | None = None,
    ignore_case: bool = False,
) -> str:
    """Search text files under ``path`` (or the file ``path``) for the regular expression.

    Args:
        roots: The session's roots.
        pattern: A Python regular expression.
        path: A directory to search recursively, or one file.
        include: Only files whose relative path matches this glob (e.g. ``*.py``).
        ignore_case: Match case-insensitively.

    Raises:
        ToolError: the path is outside the roots or missing, or the pattern is not a valid
            regular expression.
    """
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from exc
    target = roots.resolve(path)
    if os.path.isfile(target):
        files: Iterator[tuple[str, str]] = iter([(target, os.path.basename(target))])
    elif os.path.isdir(target):
        files = _walk(target)
    else:
        raise ToolError(f"{path!r} does not exist")
    matches: list[str] = []
    more = 0
    for absolute, relative in files:
        if include is not None and not glob_match(include, relative):
            continue
        for number, line in _text_lines(absolute):
            if regex.search(line) is None:
                continue
            if len(matches) >= MAX_MATCHES:
                more += 1
                continue
            text = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " …"
            matches.append(f"{roots.display(absolute)}:{number}: {text}")
    if not matches:
        return f"no matches for {pattern!r}"
    suffix = f"\n… and {more} more match(es); narrow the search" if more else ""
    return "\n".join(matches) + suffix


def _text_lines(path: str) -> Iterator[tuple[int, str]]:
    """Yield the numbered lines of a text file; nothing for large, binary or unreadable ones."""
    try:
        if os.path.getsize(path) > MAX_GREP_FILE_BYTES:
            return
        with open(path, "rb") as file:
            data = file.read()
    except OSError:
        return
    if b"\0" in data[:8192]:
        return
    text = data.decode("utf-8", errors="replace")
    yield from enumerate(text.splitlines(), start=1)


def _bounded(items: list[str], limit: int, header: str) -> str:
    shown = items[:limit]
    lines = [header, *shown]
    if len(items) > limit:
        lines.append(f"… and {len(items) - limit} more")
    return "\n".join(lines)

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
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Protocol, cast

from ._paths import Roots, ToolError
from ._reading import Unreadable, open_confined, read_confined

__all__ = (
    "MAX_ENTRIES",
    "MAX_GREP_FILE_BYTES",
    "MAX_LINE_CHARS",
    "MAX_MATCHES",
    "MAX_PATTERN_CHARS",
    "MAX_PATTERN_MEMORY",
    "MAX_SEARCH_SECONDS",
    "SKIPPED_DIRECTORIES",
    "Pattern",
    "compile_pattern",
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

MAX_SEARCH_SECONDS: Final = 20.0
"""A walk (``grep``, ``find_files``) stops after this long and says its results are partial."""

MAX_PATTERN_CHARS: Final = 10_000
"""The longest regular expression ``grep`` accepts."""

MAX_PATTERN_MEMORY: Final = 8 * 1024 * 1024
"""Memory RE2 may use for one compiled pattern (a larger one is refused as too large)."""

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
    directory = roots.resolve(path)
    shown = roots.display(directory)
    # Opened on descriptors inside the roots: a directory swapped for a link meanwhile is
    # either refused or still the one inside (never a listing of somewhere else).
    try:
        found = open_confined(directory, roots.all, "directory", shown=shown)
    except Unreadable as refused:
        raise ToolError(f"{path!r} is not a directory ({refused.message})") from None
    try:
        if found.fd is None:
            raise ToolError(f"{path!r} is not a directory (it does not exist)")
        with os.scandir(found.fd) as scan:
            entries = sorted(scan, key=lambda e: (not e.is_dir(), e.name))
            names = [f"{e.name}/" if e.is_dir() else e.name for e in entries]
    except OSError as exc:
        raise ToolError(f"cannot list {path!r}: {exc.strerror}") from exc
    finally:
        found.close()
    if not names:
        return f"{shown} is empty"
    return _bounded(names, MAX_ENTRIES, f"{shown}:")


@dataclass(slots=True)
class _Walk:
    """One walk's bound and what it left out (links leading out, special files, its end)."""

    deadline: float
    stop: threading.Event | None = None
    links_out: int = 0
    special: int = 0
    large: int = 0
    stopped: str | None = None

    def should_stop(self) -> bool:
        if self.stop is not None and self.stop.is_set():
            self.stopped = "cancelled"
        elif time.monotonic() > self.deadline:
            self.stopped = "timed out"
        return self.stopped is not None

    def note(self) -> str:
        """What the model should know about what was not searched (empty: nothing)."""
        parts: list[str] = []
        if self.links_out:
            parts.append(f"{self.links_out} link(s) leading out of the workspace")
        if self.special:
            parts.append(f"{self.special} special file(s) (FIFOs, devices, sockets)")
        if self.large:
            parts.append(f"{self.large} file(s) over {MAX_GREP_FILE_BYTES // 1024 // 1024} MiB")
        notes = [f"[skipped {' and '.join(parts)}]"] if parts else []
        if self.stopped == "timed out":
            notes.append(f"[stopped after {MAX_SEARCH_SECONDS:g} s; results are partial]")
        elif self.stopped == "cancelled":
            notes.append("[cancelled; results are partial]")
        return "\n".join(notes)


def _walk(roots: Roots, directory: str, walk: _Walk) -> Iterator[tuple[str, str]]:
    """Yield ``(absolute path, path relative to directory)`` of every file, sorted, pruned.

    Never leaves the roots: a symbolic link to a file is yielded only when its target is a
    regular file inside the roots; links to directories are not descended (so no loops), nor
    are :data:`SKIPPED_DIRECTORIES`; FIFOs, devices and sockets are skipped (and counted).
    """
    pending = [directory]
    while pending and not walk.should_stop():
        current = pending.pop()
        try:
            with os.scandir(current) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            continue
        subdirectories: list[str] = []
        for entry in entries:
            try:
                if entry.is_symlink():
                    if not roots.holds(entry.path):
                        walk.links_out += 1
                        continue
                    if entry.is_dir():
                        continue
                    if not entry.is_file():
                        walk.special += 1
                        continue
                elif entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRECTORIES:
                        subdirectories.append(entry.path)
                    continue
                elif not entry.is_file(follow_symlinks=False):
                    walk.special += 1
                    continue
            except OSError:
                continue
            yield entry.path, os.path.relpath(entry.path, directory).replace(os.sep, "/")
        pending.extend(reversed(subdirectories))


def glob_match(pattern: str, relative: str) -> bool:
    """Whether ``relative`` (``/``-separated) matches ``pattern`` (see the module docstring)."""
    if "/" not in pattern:
        return fnmatch.fnmatchcase(relative.rsplit("/", 1)[-1], pattern)
    return _match_segments(pattern.strip("/").split("/"), relative.split("/"))


def _match_segments(pattern: list[str], parts: list[str]) -> bool:
    """Segment matching in ``O(len(pattern) * len(parts))`` (many ``**`` cannot blow it up)."""
    # matched[j]: the pattern segments seen so far match parts[:j].
    matched = [True] + [False] * len(parts)
    for head in pattern:
        if head == "**":
            for j in range(1, len(parts) + 1):
                matched[j] = matched[j] or matched[j - 1]
        else:
            for j in range(len(parts), 0, -1):
                matched[j] = matched[j - 1] and fnmatch.fnmatchcase(parts[j - 1], head)
            matched[0] = False
    return matched[len(parts)]


def find_files(
    roots: Roots, pattern: str, path: str = ".", *, stop: threading.Event | None = None
) -> str:
    """Find files under ``path`` whose relative path matches the glob ``pattern``.

    Args:
        roots: The session's roots.
        pattern: The glob (module docstring).
        path: The directory to search.
        stop: Set from another thread to end the walk early (a cancelled turn).

    Raises:
        ToolError: the path is outside the roots or not a directory, or the pattern is empty.
    """
    if not pattern.strip():
        raise ToolError("the pattern is empty")
    directory = _directory(roots, path)
    walk = _Walk(time.monotonic() + MAX_SEARCH_SECONDS, stop)
    walked = _walk(roots, directory, walk)
    found = [roots.display(a) for a, rel in walked if glob_match(pattern, rel)]
    note = walk.note()
    if not found:
        text = f"no files match {pattern!r} in {roots.display(directory)}"
    else:
        text = _bounded(found, MAX_ENTRIES, f"{len(found)} file(s) match {pattern!r}:")
    return f"{text}\n{note}" if note else text


class Pattern(Protocol):
    """A compiled regular expression: what ``grep`` uses of RE2's."""

    def search(self, text: str) -> object | None:
        """The first match in ``text``, or ``None``."""
        ...


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Pattern:
    """Compile a model's regular expression with RE2 (linear time: no pattern can stall a search).

    Raises:
        ToolError: the pattern is not valid, or uses what RE2 does not support (look-around,
            back-references), or is too large; the message says which.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(
            f"the pattern is {len(pattern):,} characters long; at most {MAX_PATTERN_CHARS:,}"
        )
    import re2  # pyright: ignore[reportMissingTypeStubs]  (the coder extra's dependency)

    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    options.max_mem = MAX_PATTERN_MEMORY
    compile_re2 = cast(Callable[[str, object], Pattern], re2.compile)  # pyright: ignore[reportUnknownMemberType]
    error = cast(type[Exception], re2.error)  # pyright: ignore[reportUnknownMemberType]
    try:
        return compile_re2(pattern, options)
    except error as exc:
        reason: object = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", errors="replace")
        raise ToolError(
            f"invalid regular expression {_quoted(pattern)}: {reason} (grep uses RE2 syntax: "
            "like Python's re, without look-around or back-references)"
        ) from exc


def grep(
    roots: Roots,
    pattern: str,
    path: str = ".",
    *,
    include: str | None = None,
    ignore_case: bool = False,
    stop: threading.Event | None = None,
) -> str:
    """Search text files under ``path`` (or the file ``path``) for the regular expression.

    Args:
        roots: The session's roots.
        pattern: A regular expression in RE2 syntax (:func:`compile_pattern`).
        path: A directory to search recursively, or one file.
        include: Only files whose relative path matches this glob (e.g. ``*.py``).
        ignore_case: Match case-insensitively.
        stop: Set from another thread to end the search early (a cancelled turn).

    Raises:
        ToolError: the path is outside the roots or missing, or the pattern is not a valid
            regular expression.
    """
    regex = compile_pattern(pattern, ignore_case=ignore_case)
    target = roots.resolve(path)
    walk = _Walk(time.monotonic() + MAX_SEARCH_SECONDS, stop)
    if os.path.isdir(target):
        files = ((a, rel, _text_lines(a, roots, walk)) for a, rel in _walk(roots, target, walk))
    else:
        # One file, named by the model: it hears why it is not searched.
        data = read_confined(
            target, roots.all, limit=MAX_GREP_FILE_BYTES, shown=roots.display(target)
        )
        if data is None:
            raise ToolError(f"{path!r} does not exist")
        files = iter([(target, os.path.basename(target), _lines_of(data))])
    matches: list[str] = []
    more = 0
    for absolute, relative, lines in files:
        if include is not None and not glob_match(include, relative):
            continue
        for number, line in lines:
            if number % 1024 == 0 and walk.should_stop():
                break
            if regex.search(line) is None:
                continue
            if len(matches) >= MAX_MATCHES:
                more += 1
                continue
            text = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " …"
            matches.append(f"{roots.display(absolute)}:{number}: {text}")
    note = walk.note()
    if not matches:
        text = f"no matches for {_quoted(pattern)}"
    else:
        suffix = f"\n… and {more} more match(es); narrow the search" if more else ""
        text = "\n".join(matches) + suffix
    return f"{text}\n{note}" if note else text


def _quoted(pattern: str) -> str:
    shown = pattern if len(pattern) <= MAX_LINE_CHARS else pattern[:MAX_LINE_CHARS] + "…"
    return repr(shown)


def _text_lines(path: str, roots: Roots, walk: _Walk) -> Iterator[tuple[int, str]]:
    """Yield the numbered lines of a text file; nothing for large, binary or unreadable ones.

    The file is opened on descriptors inside the roots (:func:`read_confined`): whatever the
    walk saw, a link or directory swapped in since cannot make it read a file outside.
    """
    try:
        if os.path.getsize(path) > MAX_GREP_FILE_BYTES:
            walk.large += 1
            return
        data = read_confined(path, roots.all, limit=MAX_GREP_FILE_BYTES)
    except (OSError, ToolError):
        return
    if data is not None:
        yield from _lines_of(data)


def _lines_of(data: bytes) -> Iterator[tuple[int, str]]:
    if b"\0" in data[:8192]:  # binary
        return
    text = data.decode("utf-8", errors="replace")
    yield from enumerate(text.splitlines(), start=1)


def _bounded(items: list[str], limit: int, header: str) -> str:
    shown = items[:limit]
    lines = [header, *shown]
    if len(items) > limit:
        lines.append(f"… and {len(items) - limit} more")
    return "\n".join(lines)

"""Reading, writing and editing files: through the editor when it offers, else on disk.

A :class:`Workspace` is one session's view of its files. When the client advertised
``fs.readTextFile`` (``fs.writeTextFile``) it reads (writes) through the client, so the model
sees the editor's unsaved buffers and the editor sees the change as the user's own edit;
otherwise it reads and writes the disk itself. Either way every path is confined to the
session's roots first (:meth:`Roots.resolve`); on disk it is then resolved and opened on
directory descriptors (:mod:`accord.confined`, the client's walker too), so a directory
swapped for a symlink between the check and the use cannot move a read or write outside.

The three operations return what the tools need: :func:`read_file` the text for the model
(bounded by :data:`MAX_READ_CHARS`, with a note on how to read on); :func:`write_file` and
:func:`edit_file` a :class:`FileChange` holding the whole old and new text, which the tool
reports as a diff (and its first changed line as the location). :func:`plan_write` and
:func:`plan_edit` work the change out without making it: what the user is shown before being
asked to allow it, the same diff the completed call shows.

An edit replaces an exact piece of text that must occur once (or, with ``replace_all``, at
least once): the model says what it replaces, so a stale view of the file
fails loudly instead of editing the wrong place.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Final, Literal, overload

import anyio.to_thread

from ..engines import TextFileReader, TextFileWriter
from ..errors import RequestError
from ._paths import Roots, ToolError
from ._reading import describe_mode, open_confined, read_confined

__all__ = (
    "MAX_READ_CHARS",
    "MAX_READ_FILE_BYTES",
    "FileChange",
    "Workspace",
    "edit_file",
    "first_changed_line",
    "plan_edit",
    "plan_write",
    "read_file",
    "write_file",
)

MAX_READ_CHARS: Final = 100_000
"""Characters of a file one read returns (about 25k tokens); the model reads on with ``offset``."""

MAX_READ_FILE_BYTES: Final = 16 * 1024 * 1024
"""Files larger than this are not read from disk (the model is told to use grep or a command)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    """A file written by a tool.

    Attributes:
        path: The absolute path.
        old_text: The content before (``None``: the file is new).
        new_text: The content after.
        summary: One line for the model (what was done).
    """

    path: str
    old_text: str | None
    new_text: str
    summary: str

    @property
    def first_line(self) -> int:
        """The 1-based line of the first change (1 for a new file)."""
        return first_changed_line(self.old_text, self.new_text)


def first_changed_line(old_text: str | None, new_text: str) -> int:
    """The 1-based line where ``new_text`` first differs from ``old_text`` (1 when new).

    Lines appended after the old text's last line start on the line after it; an unchanged
    text is "changed" at line 1.
    """
    if old_text is None or old_text == new_text:
        return 1
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    for index, (before, after) in enumerate(zip(old_lines, new_lines, strict=False)):
        if before != after:
            return index + 1
    return min(len(old_lines), len(new_lines)) + 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Workspace:
    """One session's files: its roots, and the client's file services when offered.

    Attributes:
        roots: Where the session may read and write.
        reader: Reads through the client (``None``: from disk).
        writer: Writes through the client (``None``: to disk).
    """

    roots: Roots
    reader: TextFileReader | None = None
    writer: TextFileWriter | None = None

    async def read_text(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        """The text of the file at absolute ``path`` (already confined), or part of it.

        Raises:
            ToolError: the file cannot be read.
        """
        if self.reader is not None:
            try:
                return await self.reader.read_text_file(path, line=line, limit=limit)
            except RequestError as exc:
                raise ToolError(f"cannot read {self.roots.display(path)}: {exc.message}") from exc
        text = await anyio.to_thread.run_sync(_read_disk, path, self.roots)
        if line is None and limit is None:
            return text
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        end = len(lines) if limit is None else start + max(limit, 0)
        return "".join(lines[start:end])

    async def current_text(self, path: str) -> str | None:
        """The current text of ``path`` (the editor's buffer when it reads), ``None`` if absent.

        Raises:
            ToolError: it exists but cannot be read.
        """
        if self.reader is None:
            return await anyio.to_thread.run_sync(_read_disk, path, self.roots, True)
        if not await anyio.to_thread.run_sync(os.path.lexists, path):
            return None
        return await self.read_text(path)

    async def write_text(self, path: str, content: str) -> None:
        """Write ``content`` to absolute ``path`` (already confined).

        Raises:
            ToolError: the file cannot be written.
        """
        if self.writer is not None:
            try:
                await self.writer.write_text_file(path, content)
            except RequestError as exc:
                raise ToolError(f"cannot write {self.roots.display(path)}: {exc.message}") from exc
            return
        await anyio.to_thread.run_sync(_write_disk, path, content, self.roots)


@overload
def _read_disk(path: str, roots: Roots, missing_ok: Literal[False] = False) -> str: ...
@overload
def _read_disk(path: str, roots: Roots, missing_ok: bool) -> str | None: ...
def _read_disk(path: str, roots: Roots, missing_ok: bool = False) -> str | None:
    """Read a text file on descriptors inside the roots (:func:`read_confined`: no race)."""
    shown = roots.display(path)
    if os.path.isdir(path):
        raise ToolError(f"{shown} is a directory; use list_directory")
    data = read_confined(path, roots.all, limit=MAX_READ_FILE_BYTES, shown=shown)
    if data is None:
        if missing_ok:
            return None
        raise ToolError(f"{shown} does not exist")
    if b"\0" in data[:8192]:
        raise ToolError(f"{roots.display(path)} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{roots.display(path)} is not UTF-8 text") from None


_WRITE_FLAGS: Final = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_TRUNC
    | os.O_NONBLOCK
    | os.O_NOCTTY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _write_disk(path: str, content: str, roots: Roots) -> None:
    """Write a regular file; never waits on a FIFO (no reader: refused), never writes a device.

    The missing parents are created, and the file opened, relative to descriptors of
    directories inside the roots (:func:`open_confined`): a directory on the way swapped for
    a link meanwhile cannot make the write, or a directory it creates, land outside.
    """
    shown = roots.display(path)
    found = open_confined(path, roots.all, "stat", shown=shown, create_parents=True)
    try:
        if found.existing is not None and not stat.S_ISREG(found.existing.st_mode):
            kind = describe_mode(found.existing.st_mode)
            raise ToolError(f"{shown} is {kind}; only regular files are written")
        fd = os.open(found.name, _WRITE_FLAGS, 0o666, dir_fd=found.parent_fd)
        with open(fd, "w", encoding="utf-8", newline="", closefd=True) as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                kind = describe_mode(os.fstat(fd).st_mode)
                raise ToolError(f"{shown} is {kind}; only regular files are written")
            file.write(content)
    except OSError as exc:
        raise ToolError(f"cannot write {shown}: {exc.strerror}") from exc
    finally:
        found.close()


async def read_file(
    workspace: Workspace, path: str, *, offset: int | None = None, limit: int | None = None
) -> str:
    """Read a file for the model: from 1-based line ``offset``, at most ``limit`` lines.

    Raises:
        ToolError: outside the roots, missing, binary, or unreadable.
    """
    absolute = workspace.roots.resolve(path)
    if offset is not None and offset < 1:
        raise ToolError("offset is a 1-based line number")
    if limit is not None and limit < 1:
        raise ToolError("limit must be at least 1")
    text = await workspace.read_text(absolute, line=offset, limit=limit)
    if len(text) <= MAX_READ_CHARS:
        return text
    shown = text[:MAX_READ_CHARS]
    cut = shown.rfind("\n") + 1 or len(shown)
    shown = shown[:cut]
    next_line = (offset or 1) + shown.count("\n")
    return f"{shown}\n[… {len(text) - cut:,} more characters; read on with offset={next_line}]"


async def write_file(workspace: Workspace, path: str, content: str) -> FileChange:
    """Create or overwrite a file with ``content``.

    Raises:
        ToolError: outside the roots, or the file cannot be read or written.
    """
    change = await plan_write(workspace, path, content)
    await workspace.write_text(change.path, content)
    return change


async def plan_write(workspace: Workspace, path: str, content: str) -> FileChange:
    """What :func:`write_file` would change, without writing.

    Raises:
        ToolError: outside the roots, or the file exists but cannot be read.
    """
    absolute = workspace.roots.resolve(path)
    old = await workspace.current_text(absolute)
    shown = workspace.roots.display(absolute)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "Created" if old is None else "Overwrote"
    return FileChange(
        path=absolute, old_text=old, new_text=content, summary=f"{verb} {shown} ({lines} lines)"
    )


async def edit_file(
    workspace: Workspace, path: str, old_text: str, new_text: str, *, replace_all: bool = False
) -> FileChange:
    """Replace ``old_text`` by ``new_text`` in a file (once, or everywhere with ``replace_all``).

    Raises:
        ToolError: outside the roots, missing, ``old_text`` empty, not found, or (without
            ``replace_all``) found more than once.
    """
    change = await plan_edit(workspace, path, old_text, new_text, replace_all=replace_all)
    await workspace.write_text(change.path, change.new_text)
    return change


async def plan_edit(
    workspace: Workspace, path: str, old_text: str, new_text: str, *, replace_all: bool = False
) -> FileChange:
    """What :func:`edit_file` would change, without writing.

    Raises:
        ToolError: as :func:`edit_file`, but never for writing.
    """
    absolute = workspace.roots.resolve(path)
    shown = workspace.roots.display(absolute)
    if not old_text:
        raise ToolError("old_text is empty; use write_file to create a file")
    if old_text == new_text:
        raise ToolError("old_text and new_text are the same; nothing to change")
    current = await workspace.current_text(absolute)
    if current is None:
        raise ToolError(f"{shown} does not exist; use write_file to create it")
    count = current.count(old_text)
    if count == 0:
        raise ToolError(
            f"old_text was not found in {shown}; read the file again and copy the text exactly"
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_text occurs {count} times in {shown}; include more context to make it "
            "unique, or set replace_all"
        )
    updated = (
        current.replace(old_text, new_text)
        if replace_all
        else current.replace(old_text, new_text, 1)
    )
    what = f"{count} occurrences" if count > 1 else "1 occurrence"
    summary = f"Edited {shown}: replaced {what}"
    return FileChange(path=absolute, old_text=current, new_text=updated, summary=summary)

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from accord.coder import _files
from accord.coder._files import Workspace, edit_file, read_file, write_file
from accord.coder._paths import Roots, ToolError
from accord.errors import ResourceNotFound

# No model code here: both backends, over the asyncio-only default of tests/coder.
both_backends = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])


@dataclass
class EditorFiles:
    """The client's fs: open buffers that differ from the disk, and recorded writes."""

    buffers: dict[str, str] = field(default_factory=dict[str, str])
    writes: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    reads: list[tuple[str, int | None, int | None]] = field(
        default_factory=list[tuple[str, int | None, int | None]]
    )

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        self.reads.append((path, line, limit))
        if path not in self.buffers:
            raise ResourceNotFound(f"no such file: {path}")
        lines = self.buffers[path].splitlines(keepends=True)
        start = (line or 1) - 1
        return "".join(lines[start : None if limit is None else start + limit])

    async def write_text_file(self, path: str, content: str) -> None:
        self.writes.append((path, content))
        self.buffers[path] = content


@pytest.fixture
def disk(project: Path) -> Workspace:
    return Workspace(roots=Roots.of(str(project)))


@pytest.mark.anyio
@both_backends
async def test_read_from_disk_with_offset_and_limit(disk: Workspace, project: Path) -> None:
    (project / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert await read_file(disk, "n.txt", offset=3, limit=2) == "line 3\nline 4\n"
    assert (await read_file(disk, "n.txt", offset=9)) == "line 9\nline 10\n"
    with pytest.raises(ToolError, match="1-based"):
        await read_file(disk, "n.txt", offset=0)
    with pytest.raises(ToolError, match="at least 1"):
        await read_file(disk, "n.txt", limit=0)


@pytest.mark.anyio
@both_backends
async def test_read_errors_on_disk(disk: Workspace, project: Path) -> None:
    (project / "b.bin").write_bytes(b"\0\0\0")
    (project / "l1.txt").write_bytes("é".encode("latin-1"))
    with pytest.raises(ToolError, match="does not exist"):
        await read_file(disk, "missing.py")
    with pytest.raises(ToolError, match="is a directory"):
        await read_file(disk, "pkg")
    with pytest.raises(ToolError, match="binary"):
        await read_file(disk, "b.bin")
    with pytest.raises(ToolError, match="not UTF-8"):
        await read_file(disk, "l1.txt")
    with pytest.raises(ToolError, match="outside"):
        await read_file(disk, "../elsewhere.txt")


@pytest.mark.anyio
@both_backends
async def test_long_files_are_cut_with_a_way_to_read_on(
    disk: Workspace, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_files, "MAX_READ_CHARS", 20)
    (project / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 10)))
    text = await read_file(disk, "long.txt")
    assert text == "line 1\nline 2\n\n[… 49 more characters; read on with offset=3]"


@pytest.mark.anyio
@both_backends
async def test_write_creates_directories_and_reports_both_texts(
    disk: Workspace, project: Path
) -> None:
    change = await write_file(disk, "new/dir/m.py", "x = 1\n")
    assert (project / "new" / "dir" / "m.py").read_text() == "x = 1\n"
    assert change.old_text is None
    assert change.summary == "Created new/dir/m.py (1 lines)"
    change = await write_file(disk, "new/dir/m.py", "x = 2\ny = 3")
    assert change.old_text == "x = 1\n"
    assert change.new_text == "x = 2\ny = 3"
    assert change.summary == "Overwrote new/dir/m.py (2 lines)"


@pytest.mark.anyio
@both_backends
async def test_edit_replaces_exactly_one_occurrence(disk: Workspace, project: Path) -> None:
    change = await edit_file(disk, "pkg/__init__.py", "a - b", "a + b")
    assert (project / "pkg" / "__init__.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert change.old_text == "def add(a, b):\n    return a - b\n"
    assert change.path == str(project / "pkg" / "__init__.py")
    assert change.summary == "Edited pkg/__init__.py: replaced 1 occurrence"


@pytest.mark.anyio
@both_backends
async def test_edit_refuses_what_it_cannot_do_exactly(disk: Workspace, project: Path) -> None:
    (project / "twice.py").write_text("x\nx\n")
    with pytest.raises(ToolError, match="occurs 2 times"):
        await edit_file(disk, "twice.py", "x", "y")
    with pytest.raises(ToolError, match="not found"):
        await edit_file(disk, "twice.py", "z", "y")
    with pytest.raises(ToolError, match="does not exist"):
        await edit_file(disk, "nope.py", "z", "y")
    with pytest.raises(ToolError, match="empty"):
        await edit_file(disk, "twice.py", "", "y")
    with pytest.raises(ToolError, match="the same"):
        await edit_file(disk, "twice.py", "x", "x")
    change = await edit_file(disk, "twice.py", "x", "y", replace_all=True)
    assert (project / "twice.py").read_text() == "y\ny\n"
    assert change.summary.endswith("replaced 2 occurrences")


@pytest.mark.anyio
@both_backends
async def test_the_editor_is_used_when_it_offers(project: Path) -> None:
    path = str(project / "pkg" / "__init__.py")
    editor = EditorFiles(buffers={path: "def add(a, b):\n    return b - a  # unsaved\n"})
    workspace = Workspace(roots=Roots.of(str(project)), reader=editor, writer=editor)
    assert "unsaved" in await read_file(workspace, "pkg/__init__.py")
    assert await read_file(workspace, "pkg/__init__.py", offset=2, limit=1) == (
        "    return b - a  # unsaved\n"
    )
    assert editor.reads[-1] == (path, 2, 1)
    change = await edit_file(workspace, "pkg/__init__.py", "b - a", "a + b")
    assert change.old_text == "def add(a, b):\n    return b - a  # unsaved\n"
    assert editor.writes == [(path, "def add(a, b):\n    return a + b  # unsaved\n")]
    assert "a - b" in (project / "pkg" / "__init__.py").read_text()  # the disk is the editor's


@pytest.mark.anyio
@both_backends
async def test_editor_errors_become_tool_errors(project: Path) -> None:
    class Refusing(EditorFiles):
        async def write_text_file(self, path: str, content: str) -> None:
            raise ResourceNotFound("read-only buffer")

    editor = Refusing()
    workspace = Workspace(roots=Roots.of(str(project)), reader=editor, writer=editor)
    with pytest.raises(ToolError, match=r"cannot read README\.md: no such file"):
        await read_file(workspace, "README.md")
    with pytest.raises(ToolError, match=r"cannot write new\.py: read-only buffer"):
        await write_file(workspace, "new.py", "x")


@pytest.mark.anyio
@both_backends
async def test_a_planned_change_reads_the_editor_s_buffer_and_writes_nothing(
    project: Path,
) -> None:
    path = str(project / "pkg" / "__init__.py")
    editor = EditorFiles(buffers={path: "def add(a, b):\n    return b - a  # unsaved\n"})
    workspace = Workspace(roots=Roots.of(str(project)), reader=editor, writer=editor)
    planned = await _files.plan_edit(workspace, "pkg/__init__.py", "b - a", "a + b")
    assert planned.new_text == "def add(a, b):\n    return a + b  # unsaved\n"
    assert planned.first_line == 2
    new = await _files.plan_write(workspace, "pkg/new.py", "x = 1\n")
    assert (new.old_text, new.first_line) == (None, 1)
    assert editor.writes == []
    assert not (project / "pkg" / "new.py").exists()
    made = await edit_file(workspace, "pkg/__init__.py", "b - a", "a + b")
    assert (made.old_text, made.new_text) == (planned.old_text, planned.new_text)
    with pytest.raises(ToolError, match="not found"):
        await _files.plan_edit(workspace, "pkg/__init__.py", "b - a", "a + b")


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        (None, "new\n", 1),
        ("a\nb\nc\n", "a\nB\nc\n", 2),
        ("a\nb\n", "a\nb\nc\n", 3),  # appended: the line after the last
        ("a\nb", "a\nb\n", 2),  # a newline added to the last line
        ("a\nb\nc\n", "a\n", 2),  # lines removed from the end
        ("x\n", "x\n", 1),  # nothing changed
        ("", "text", 1),
    ],
)
def test_the_first_changed_line_is_1_based(old: str | None, new: str, line: int) -> None:
    assert _files.first_changed_line(old, new) == line

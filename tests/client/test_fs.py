"""FileSystemHost against real files: confinement, line/limit, encodings, atomic writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from accord.client import FileSystemHost
from accord.client._fs import resolve_within
from accord.errors import InvalidParams, ResourceNotFound
from accord.schema import ReadTextFileRequest, WriteTextFileRequest

pytestmark = pytest.mark.anyio

SESSION = "sess-1"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


@pytest.fixture
def host() -> FileSystemHost:
    return FileSystemHost()


async def read(
    host: FileSystemHost,
    path: Path | str,
    roots: list[Path],
    line: int | None = None,
    limit: int | None = None,
) -> str:
    request = ReadTextFileRequest(session_id=SESSION, path=str(path), line=line, limit=limit)
    return (await host.read_text_file(request, roots)).content


async def write(host: FileSystemHost, path: Path | str, content: str, roots: list[Path]) -> None:
    request = WriteTextFileRequest(session_id=SESSION, path=str(path), content=content)
    await host.write_text_file(request, roots)


# --- confinement -------------------------------------------------------------------------


async def test_relative_path_is_refused(host: FileSystemHost, root: Path) -> None:
    (root / "a.txt").write_text("x")
    with pytest.raises(InvalidParams, match=r"must be absolute: 'a\.txt'") as info:
        await read(host, "a.txt", [root])
    assert info.value.data == {"path": "a.txt"}
    with pytest.raises(InvalidParams, match="must be absolute"):
        await write(host, "b.txt", "x", [root])
    assert not (root / "b.txt").exists()


async def test_dotdot_out_of_the_root_is_refused(
    host: FileSystemHost, root: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    escape = f"{root}/../secret.txt"
    with pytest.raises(InvalidParams, match="outside the session's directories") as info:
        await read(host, escape, [root])
    assert "resolves to" in info.value.message
    with pytest.raises(InvalidParams, match="outside"):
        await write(host, escape, "overwritten", [root])
    assert (tmp_path / "secret.txt").read_text() == "secret"


async def test_dotdot_that_stays_inside_is_allowed(host: FileSystemHost, root: Path) -> None:
    (root / "sub").mkdir()
    (root / "a.txt").write_text("inside")
    assert await read(host, f"{root}/sub/../a.txt", [root]) == "inside"


async def test_symlink_out_of_the_root_is_refused(
    host: FileSystemHost, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dirlink").symlink_to(outside)
    with pytest.raises(InvalidParams, match="outside"):
        await read(host, root / "link.txt", [root])
    with pytest.raises(InvalidParams, match="outside"):
        await read(host, root / "dirlink" / "secret.txt", [root])
    with pytest.raises(InvalidParams, match="outside"):
        await write(host, root / "link.txt", "x", [root])
    with pytest.raises(InvalidParams, match="outside"):
        await write(host, root / "dirlink" / "new.txt", "x", [root])
    assert (outside / "secret.txt").read_text() == "secret"
    assert not (outside / "new.txt").exists()


async def test_dangling_symlink_pointing_out_is_refused_for_writes(
    host: FileSystemHost, root: Path, tmp_path: Path
) -> None:
    (root / "dangling").symlink_to(tmp_path / "not-yet")
    with pytest.raises(InvalidParams, match="outside"):
        await write(host, root / "dangling", "x", [root])
    assert not (tmp_path / "not-yet").exists()


async def test_symlink_loop_is_refused(host: FileSystemHost, root: Path) -> None:
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(InvalidParams, match="symlink loop"):
        await read(host, root / "loop", [root])
    with pytest.raises(InvalidParams, match="symlink loop"):
        await write(host, root / "loop", "x", [root])
    with pytest.raises(InvalidParams, match="symlink loop"):
        await write(host, root / "loop" / "x.txt", "x", [root])


async def test_symlink_inside_the_root_is_followed(host: FileSystemHost, root: Path) -> None:
    (root / "real.txt").write_text("old\n")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert await read(host, root / "alias.txt", [root]) == "old\n"
    await write(host, root / "alias.txt", "new\n", [root])
    assert (root / "alias.txt").is_symlink()
    assert (root / "real.txt").read_text() == "new\n"


async def test_root_reached_through_a_symlink_is_fine(
    host: FileSystemHost, root: Path, tmp_path: Path
) -> None:
    (root / "a.txt").write_text("via link")
    (tmp_path / "project-link").symlink_to(root)
    linked_root = tmp_path / "project-link"
    assert await read(host, linked_root / "a.txt", [linked_root]) == "via link"
    assert await read(host, root / "a.txt", [linked_root]) == "via link"


async def test_additional_directory_is_a_root(
    host: FileSystemHost, root: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "lib.py").write_text("print('hi')\n")
    assert await read(host, extra / "lib.py", [root, extra]) == "print('hi')\n"
    await write(host, extra / "new.py", "x = 1\n", [root, extra])
    assert (extra / "new.py").read_text() == "x = 1\n"
    with pytest.raises(InvalidParams, match="outside"):
        await read(host, extra / "lib.py", [root])


async def test_sibling_with_a_common_prefix_is_outside(
    host: FileSystemHost, root: Path, tmp_path: Path
) -> None:
    sibling = tmp_path / "project-other"
    sibling.mkdir()
    (sibling / "a.txt").write_text("x")
    with pytest.raises(InvalidParams, match="outside"):
        await read(host, sibling / "a.txt", [root])


async def test_no_roots_refuses_everything(host: FileSystemHost, root: Path) -> None:
    (root / "a.txt").write_text("x")
    with pytest.raises(InvalidParams, match=r"allowed: \(none\)"):
        await read(host, root / "a.txt", [])


def test_resolve_within_rejects_nul(root: Path) -> None:
    with pytest.raises(InvalidParams, match="NUL"):
        resolve_within(f"{root}/a\0b", [root])


# --- reading -------------------------------------------------------------------------------


async def test_missing_file_is_resource_not_found(host: FileSystemHost, root: Path) -> None:
    missing = root / "dir with space" / "nope.txt"
    with pytest.raises(ResourceNotFound, match="file not found") as info:
        await read(host, missing, [root])
    assert info.value.code == -32002
    assert info.value.data == {"uri": missing.as_uri()}
    assert "%20" in info.value.data["uri"]


async def test_directory_is_refused(host: FileSystemHost, root: Path) -> None:
    (root / "sub").mkdir()
    with pytest.raises(InvalidParams, match="is a directory"):
        await read(host, root / "sub", [root])
    with pytest.raises(InvalidParams, match="is a directory"):
        await read(host, root, [root])
    with pytest.raises(InvalidParams, match="is a directory"):
        await write(host, root / "sub", "x", [root])


async def test_fifo_is_refused_without_blocking(host: FileSystemHost, root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(InvalidParams, match="not a regular file"):
        await read(host, root / "pipe", [root])
    with pytest.raises(InvalidParams, match="not a regular file"):
        await write(host, root / "pipe", "x", [root])


async def test_non_utf8_is_refused(host: FileSystemHost, root: Path) -> None:
    (root / "latin1.txt").write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(InvalidParams, match="not UTF-8 text"):
        await read(host, root / "latin1.txt", [root])
    # Only the requested lines are decoded: the valid first line reads fine.
    assert await read(host, root / "latin1.txt", [root], line=1, limit=1) == "ok\n"


async def test_whole_file(host: FileSystemHost, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    assert await read(host, root / "a.txt", [root]) == "one\ntwo\nthree\n"


@pytest.mark.parametrize(
    ("line", "limit", "expected"),
    [
        (None, None, "1\n2\n3\n4\n5"),
        (1, None, "1\n2\n3\n4\n5"),
        (2, None, "2\n3\n4\n5"),
        (2, 2, "2\n3\n"),
        (None, 1, "1\n"),
        (5, 1, "5"),  # last line, no trailing newline
        (5, 10, "5"),
        (6, None, ""),  # past the end
        (100, 3, ""),
        (3, 0, ""),  # limit 0: no lines
    ],
)
async def test_line_and_limit(
    host: FileSystemHost, root: Path, line: int | None, limit: int | None, expected: str
) -> None:
    (root / "n.txt").write_text("1\n2\n3\n4\n5")
    assert await read(host, root / "n.txt", [root], line=line, limit=limit) == expected


async def test_line_zero_is_refused(host: FileSystemHost, root: Path) -> None:
    (root / "a.txt").write_text("x\n")
    with pytest.raises(InvalidParams, match="1-based, got 0"):
        await read(host, root / "a.txt", [root], line=0)


async def test_trailing_newline_makes_no_extra_line(host: FileSystemHost, root: Path) -> None:
    (root / "a.txt").write_text("a\nb\n")
    assert await read(host, root / "a.txt", [root], line=2) == "b\n"
    assert await read(host, root / "a.txt", [root], line=3) == ""


async def test_empty_file(host: FileSystemHost, root: Path) -> None:
    (root / "empty.txt").write_bytes(b"")
    assert await read(host, root / "empty.txt", [root]) == ""
    assert await read(host, root / "empty.txt", [root], line=1, limit=5) == ""


async def test_crlf_is_kept_and_lines_end_at_lf(host: FileSystemHost, root: Path) -> None:
    (root / "dos.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    assert await read(host, root / "dos.txt", [root]) == "a\r\nb\r\nc\r\n"
    assert await read(host, root / "dos.txt", [root], line=2, limit=1) == "b\r\n"
    # A lone CR is not a line break (as for sed, wc -l and git).
    (root / "cr.txt").write_bytes(b"x\ry\nz")
    assert await read(host, root / "cr.txt", [root], line=2) == "z"


async def test_unicode(host: FileSystemHost, root: Path) -> None:
    text = "héllo wörld\n日本語\n😀 emoji\n"
    (root / "u.txt").write_text(text, encoding="utf-8")
    assert await read(host, root / "u.txt", [root]) == text
    assert await read(host, root / "u.txt", [root], line=2, limit=1) == "日本語\n"
    (root / "bom.txt").write_bytes("\ufeffbom\n".encode())
    assert await read(host, root / "bom.txt", [root]) == "\ufeffbom\n"


async def test_lines_far_into_a_large_file(host: FileSystemHost, root: Path) -> None:
    # Spans many skip chunks; one long line in the middle must not derail the count.
    lines = [f"line {i}\n" for i in range(1, 200_001)]
    lines[1000] = "x" * 1_000_000 + "\n"
    (root / "big.txt").write_text("".join(lines))
    got = await read(host, root / "big.txt", [root], line=150_000, limit=3)
    assert got == "line 150000\nline 150001\nline 150002\n"
    assert await read(host, root / "big.txt", [root], line=200_000) == "line 200000\n"


async def test_text_over_the_read_cap_is_refused(root: Path) -> None:
    host = FileSystemHost(max_read_bytes=100)
    (root / "big.txt").write_text("x" * 60 + "\n" + "y" * 60 + "\n")
    assert await read(host, root / "big.txt", [root], limit=1) == "x" * 60 + "\n"
    assert await read(host, root / "big.txt", [root], line=2) == "y" * 60 + "\n"
    with pytest.raises(InvalidParams, match="larger than 100 bytes"):
        await read(host, root / "big.txt", [root])
    with pytest.raises(InvalidParams, match="larger than 100 bytes"):
        await read(host, root / "big.txt", [root], limit=2)


async def test_unreadable_file_is_refused(host: FileSystemHost, root: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    (root / "locked.txt").write_text("x")
    (root / "locked.txt").chmod(0)
    with pytest.raises(InvalidParams, match="permission denied"):
        await read(host, root / "locked.txt", [root])


# --- open buffers --------------------------------------------------------------------------


async def test_open_buffer_wins_over_the_disk(root: Path) -> None:
    (root / "a.txt").write_text("on disk\n")
    (root / "b.txt").write_text("b on disk\n")
    asked: list[Path] = []

    def open_buffer(path: Path) -> str | None:
        asked.append(path)
        return "unsaved 1\nunsaved 2\nunsaved 3" if path.name == "a.txt" else None

    host = FileSystemHost(open_buffer=open_buffer)
    assert await read(host, root / "a.txt", [root]) == "unsaved 1\nunsaved 2\nunsaved 3"
    assert await read(host, root / "a.txt", [root], line=2, limit=1) == "unsaved 2\n"
    assert await read(host, root / "a.txt", [root], line=3, limit=5) == "unsaved 3"
    assert await read(host, root / "a.txt", [root], line=4) == ""
    assert await read(host, root / "b.txt", [root]) == "b on disk\n"
    assert asked[0] == (root / "a.txt").resolve()


async def test_open_buffer_is_confined_too(root: Path, tmp_path: Path) -> None:
    host = FileSystemHost(open_buffer=lambda path: "buffer")
    with pytest.raises(InvalidParams, match="outside"):
        await read(host, tmp_path / "elsewhere.txt", [root])
    assert await read(host, root / "not-on-disk.txt", [root]) == "buffer"


# --- writing -------------------------------------------------------------------------------


async def test_write_creates_a_new_file(host: FileSystemHost, root: Path) -> None:
    await write(host, root / "new.txt", "hello\n", [root])
    path = root / "new.txt"
    assert path.read_text() == "hello\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert os.listdir(root) == ["new.txt"]  # no temporary file left behind


async def test_write_creates_missing_parent_directories(host: FileSystemHost, root: Path) -> None:
    await write(host, root / "a" / "b" / "c.txt", "deep", [root])
    assert (root / "a" / "b" / "c.txt").read_text() == "deep"


async def test_write_under_a_file_is_refused(host: FileSystemHost, root: Path) -> None:
    (root / "file.txt").write_text("x")
    with pytest.raises(InvalidParams, match="parent is not a directory"):
        await write(host, root / "file.txt" / "child.txt", "x", [root])
    with pytest.raises(InvalidParams, match="parent is not a directory"):
        await write(host, root / "file.txt" / "sub" / "child.txt", "x", [root])


async def test_write_replaces_and_keeps_permissions(host: FileSystemHost, root: Path) -> None:
    path = root / "script.sh"
    path.write_text("#!/bin/sh\necho old\n")
    path.chmod(0o751)
    inode = path.stat().st_ino
    await write(host, path, "#!/bin/sh\necho new\n", [root])
    assert path.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert os.listdir(root) == ["script.sh"]


async def test_write_is_atomic_for_an_open_reader(host: FileSystemHost, root: Path) -> None:
    path = root / "a.txt"
    path.write_text("old content")
    with path.open() as reader:
        await write(host, path, "new content", [root])
        assert reader.read() == "old content"  # the old file is untouched, never half-written
    assert path.read_text() == "new content"


async def test_write_is_verbatim(host: FileSystemHost, root: Path) -> None:
    content = "crlf\r\nunicode é 日本 😀\nno trailing newline"
    await write(host, root / "v.txt", content, [root])
    assert (root / "v.txt").read_bytes() == content.encode()
    assert await read(host, root / "v.txt", [root]) == content
    await write(host, root / "empty.txt", "", [root])
    assert (root / "empty.txt").read_bytes() == b""


async def test_write_refuses_lone_surrogates(host: FileSystemHost, root: Path) -> None:
    with pytest.raises(InvalidParams, match="not valid Unicode"):
        await write(host, root / "bad.txt", "a\ud800b", [root])
    assert not (root / "bad.txt").exists()


async def test_write_into_a_read_only_directory_is_refused(
    host: FileSystemHost, root: Path
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes everywhere")
    locked = root / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(InvalidParams, match="permission denied"):
            await write(host, locked / "a.txt", "x", [root])
    finally:
        locked.chmod(0o755)

"""The file-system host against a peer that swaps the tree while it works (no escape, ever).

A separate process exchanges a directory of the project with a symlink to a directory outside
it (``renameat2(RENAME_EXCHANGE)``, atomically, as fast as it can) while the host reads and
writes through that directory. Each request must either work inside the roots or fail with a
clear ACP error: never return the outside file's content, never write there, never leave a
temporary file there, never raise a bare ``OSError``.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from accord.client import FileSystemHost
from accord.errors import RequestError
from accord.schema import ReadTextFileRequest, WriteTextFileRequest

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="renameat2(RENAME_EXCHANGE) is Linux's"
    ),
]

#: Requests made while the tree is being swapped; a lost race showed in one read of four.
ROUNDS = 400

SWAPPER = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
print("ready", flush=True)
while True:
    if libc.renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
        raise SystemExit(f"renameat2 failed: errno {ctypes.get_errno()}")
"""


def _has_rename_exchange(directory: Path) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    (directory / "x").mkdir()
    (directory / "y").mkdir()
    ok = libc.renameat2(-100, str(directory / "x").encode(), -100, str(directory / "y").encode(), 2)
    (directory / "x").rmdir()
    (directory / "y").rmdir()
    return ok == 0


@pytest.fixture(params=["absolute", "relative"])
def tree(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Path, Path, Callable[[], None]]]:
    """(root, outside, stop): ``root/d`` swaps places with a symlink to ``outside`` until stop."""
    root = tmp_path / "project"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    if not _has_rename_exchange(root):
        pytest.skip("this file system cannot exchange names atomically")
    (root / "d").mkdir()
    (root / "d" / "f.txt").write_text("inside")
    (outside / "f.txt").write_text("outside")
    target = outside if request.param == "absolute" else Path("..") / "outside"
    (root / "swap").symlink_to(target)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(root / "d"), str(root / "swap")],
        stdout=subprocess.PIPE,
        text=True,
    )

    def stop() -> None:
        if swapper.poll() is None:
            swapper.kill()
        assert swapper.wait() == -9, "the swapper stopped on its own (renameat2 failed)"

    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
        yield root, outside, stop
    finally:
        stop()


async def test_reads_never_escape_while_a_directory_is_swapped(
    tree: tuple[Path, Path, Callable[[], None]],
) -> None:
    root, _, _ = tree
    host = FileSystemHost()
    outcomes: dict[str, int] = {}
    for _ in range(ROUNDS):
        request = ReadTextFileRequest(session_id="s", path=str(root / "d" / "f.txt"))
        try:
            content = (await host.read_text_file(request, [root])).content
        except RequestError as error:  # anything else (a bare OSError) fails the test
            content = f"refused {error.code}"
        outcomes[content] = outcomes.get(content, 0) + 1
    assert "outside" not in outcomes, outcomes
    assert outcomes.get("inside", 0) > 0, outcomes
    assert any(key.startswith("refused") for key in outcomes), f"no race happened: {outcomes}"


async def test_writes_never_escape_while_a_directory_is_swapped(
    tree: tuple[Path, Path, Callable[[], None]],
) -> None:
    root, outside, stop = tree
    host = FileSystemHost()
    written = refused = 0
    for index in range(ROUNDS):
        request = WriteTextFileRequest(
            session_id="s", path=str(root / "d" / "sub" / f"new-{index}.txt"), content="x"
        )
        try:
            await host.write_text_file(request, [root])
            written += 1
        except RequestError:
            refused += 1
    stop()
    leaked = sorted(path.name for path in outside.rglob("*"))
    assert leaked == ["f.txt"], f"{len(leaked) - 1} files landed outside the root: {leaked[:5]}"
    assert written > 0 and refused > 0, (written, refused)
    inside = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert not [p for p in inside if p.name.endswith(".accord-tmp")], "temporary files left"
    assert len([p for p in inside if p.name.startswith("new-")]) == written

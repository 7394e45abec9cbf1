"""The file-system host against a peer that swaps the tree while it works (no escape, ever).

A separate process exchanges a directory of the project with a symlink to a directory outside
it (``renameat2(RENAME_EXCHANGE)``, atomically, as fast as it can) while the host reads and
writes through that directory. Each request must either work inside the roots or fail with a
clear ACP error: never return the outside file's content, never write there, never leave a
temporary file there, never raise a bare ``OSError``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.swapping import swapping_tree

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


@pytest.fixture(params=["absolute", "relative"])
def tree(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Path, Path, Callable[[], None]]]:
    """(root, outside, stop): ``root/d`` swaps places with a symlink to ``outside`` until stop."""
    with swapping_tree(tmp_path, relative=request.param == "relative") as swapped:
        yield swapped


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

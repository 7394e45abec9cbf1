"""The coder's own file tools against a peer that swaps the tree while they work.

When the client offers no file system, the coder reads, writes, edits, lists and greps the
disk itself. A separate process exchanges a directory of the project with a symlink to a
directory outside it (``renameat2(RENAME_EXCHANGE)``, as fast as it can) while the tools work
through that directory. Each call must work inside the roots or fail with a
:class:`~accord.coder._paths.ToolError` the model reads: never return the outside file's
content or listing, never write there, never raise a bare ``OSError``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.swapping import swapping_tree

from accord.coder._files import Workspace, edit_file, read_file, write_file
from accord.coder._paths import Roots, ToolError
from accord.coder._search import grep, list_directory

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="renameat2(RENAME_EXCHANGE) is Linux's"
)

#: Calls made while the tree is being swapped (a lost race showed in about one read of four).
ROUNDS = 300
#: At most this many calls, until both a call that worked inside and one that was refused were
#: seen: on a busy machine the swapper may win every race for a while (300 refusals seen).
MAX_ROUNDS = 5000

Tree = tuple[Path, Path, Callable[[], None]]


@pytest.fixture(params=["absolute", "relative"])
def tree(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tree]:
    """(root, outside, stop): ``root/d`` swaps places with a symlink to ``outside`` until stop."""
    with swapping_tree(tmp_path, relative=request.param == "relative") as swapped:
        (swapped[1] / "only-outside.txt").write_text("outside")
        yield swapped


def _tally(outcomes: dict[str, int], outcome: str) -> None:
    outcomes[outcome] = outcomes.get(outcome, 0) + 1


@pytest.mark.anyio
async def test_read_file_never_escapes_while_a_directory_is_swapped(tree: Tree) -> None:
    root, _, _ = tree
    disk = Workspace(roots=Roots.of(str(root)))
    outcomes: dict[str, int] = {}
    for index in range(MAX_ROUNDS):
        try:
            _tally(outcomes, await read_file(disk, "d/f.txt"))
        except ToolError:  # anything else (a bare OSError) fails the test
            _tally(outcomes, "refused")
        if index >= ROUNDS and "inside" in outcomes and "refused" in outcomes:
            break
    assert "outside" not in outcomes, outcomes
    assert outcomes.get("inside", 0) > 0, outcomes
    assert outcomes.get("refused", 0) > 0, f"no race happened: {outcomes}"


@pytest.mark.anyio
async def test_write_and_edit_never_escape_while_a_directory_is_swapped(tree: Tree) -> None:
    root, outside, stop = tree
    disk = Workspace(roots=Roots.of(str(root)))
    written = refused = 0
    edit_refusals: set[str] = set()
    for index in range(MAX_ROUNDS):
        if index >= ROUNDS and written and refused:
            break
        try:
            await write_file(disk, f"d/sub/new-{index}.txt", "x")
            written += 1
        except ToolError:
            refused += 1
        try:
            await edit_file(disk, "d/f.txt", "inside", "inside")
        except ToolError:
            pass  # the same text: refused, but only after the read (which must stay inside)
        try:
            await edit_file(disk, "d/f.txt", "outside", "changed")
        except ToolError as error:
            edit_refusals.add(error.message)
    stop()
    assert sorted(p.name for p in outside.rglob("*")) == ["f.txt", "only-outside.txt"], (
        "files landed outside the root"
    )
    assert (outside / "f.txt").read_text() == "outside"
    assert not [m for m in edit_refusals if "occurs" in m], "an edit saw the outside file"
    assert written > 0 and refused > 0, (written, refused)
    made = [p for p in root.rglob("new-*") if p.is_file() and not p.is_symlink()]
    assert len(made) == written


def test_list_directory_and_grep_never_escape_while_a_directory_is_swapped(tree: Tree) -> None:
    root, _, _ = tree
    roots = Roots.of(str(root))
    listings: dict[str, int] = {}
    found: dict[str, int] = {}
    for index in range(MAX_ROUNDS):
        listed = any("f.txt" in listing for listing in listings)
        if index >= ROUNDS and listed and any(":1: inside" in text for text in found):
            break
        try:
            _tally(listings, list_directory(roots, "d"))
        except ToolError:
            _tally(listings, "refused")
        try:
            _tally(found, grep(roots, "side", "d/f.txt"))
        except ToolError:
            _tally(found, "refused")
    assert not [listing for listing in listings if "only-outside" in listing], listings
    assert not [text for text in found if "outside" in text], found
    assert any("f.txt" in listing for listing in listings), listings
    assert any(":1: inside" in text for text in found), found

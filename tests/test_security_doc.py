"""SECURITY.md's promises point at tests that exist.

Each promise of ``SECURITY.md`` names the test that proves it, as a path
(``tests/remote/test_remote_flood.py``) or a path and a test (``file.py::test_name``). Every
path named must be a file of the repository, and every test named must be defined in it
(``def`` or ``async def``), so a renamed or deleted test cannot leave a promise unproved
without this failing.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_REFERENCE = re.compile(r"(?P<path>tests/[\w/]+\.py)(?:::(?P<test>\w+))?")


def references(text: str) -> list[tuple[str, str | None]]:
    """The (path, test or None) references of a page, in order."""
    return [(m["path"], m["test"]) for m in _REFERENCE.finditer(text)]


def missing(text: str, root: Path) -> list[str]:
    """Every reference of ``text`` whose file, or whose test in it, does not exist."""
    problems: list[str] = []
    for path, test in references(text):
        source = root / path
        if not source.is_file():
            problems.append(f"{path}: no such file")
            continue
        if test is not None:
            defined = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(test)}\(", re.MULTILINE)
            if not defined.search(source.read_text(encoding="utf-8")):
                problems.append(f"{path}::{test}: no such test")
    return problems


def test_every_test_security_md_names_exists() -> None:
    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    assert len(references(text)) >= 15  # the page does point at its tests
    assert any(test for _, test in references(text))
    assert missing(text, ROOT) == []


def test_a_missing_file_or_test_is_reported(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("async def test_real() -> None:\n    pass\n")
    page = (
        "Held (`tests/test_a.py::test_real`), also `tests/test_a.py`; "
        "gone: `tests/test_a.py::test_gone`, `tests/test_b.py`."
    )
    assert missing(page, tmp_path) == [
        "tests/test_a.py::test_gone: no such test",
        "tests/test_b.py: no such file",
    ]

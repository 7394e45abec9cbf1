"""Small projects for a coding agent to work on in a test.

:func:`buggy_project` is a Python package with a bug and a test that finds it, the project of
the coder's tests and the end-to-end ``accord serve`` tests.
"""

from __future__ import annotations

from pathlib import Path


def buggy_project(parent: Path, *, readme: bool = False) -> Path:
    """``parent/project``: ``pkg.add`` subtracts and ``tests/test_add.py`` says so; with a
    ``README.md`` if ``readme``."""
    root = parent / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_add.py").write_text(
        "from pkg import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    if readme:
        (root / "README.md").write_text("# demo\n")
    return root

"""The test tree follows the naming rules of ``tests/README.md``.

Every Python file under ``tests/`` is a test module (``test_*.py``), a ``conftest.py``, a helper
of its directory named after it (``_<dir>_<what>.py``) or a shared helper in ``tests/helpers``;
basenames are unique (the test directories are not packages, so two equal names would collide
in ``sys.modules``); only ``tests/helpers`` has an ``__init__.py``; no test waits on a bound of
its own (``fail_after``, ``move_on_after`` and ``.wait`` take a name from
``helpers.timeouts``).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
#: Data and non-Python fixtures: not part of the naming rules.
_SKIPPED = {"golden", "__snapshots__"}
#: ``fail_after(5)``, ``move_on_after(0.5)``, ``process.wait(10)``: a literal bound.
_LITERAL_BOUND = re.compile(r"(?:\bfail_after|\bmove_on_after|\.wait)\(\s*[0-9.]+\s*\)")


def python_files(root: Path) -> list[Path]:
    """Every ``.py`` file below ``root``, data directories left out."""
    return sorted(
        path
        for path in root.rglob("*.py")
        if not _SKIPPED & set(path.relative_to(root).parts) and "__pycache__" not in path.parts
    )


def layout_problems(root: Path) -> list[str]:
    """Every way the tree at ``root`` breaks the naming rules (see the module doc)."""
    problems: list[str] = []
    files = python_files(root)
    for name, count in Counter(path.name for path in files).items():
        if count > 1 and name not in ("conftest.py", "__init__.py"):
            problems.append(f"{name} is the basename of {count} files")
    for path in files:
        relative = path.relative_to(root)
        top = relative.parts[0] if len(relative.parts) > 1 else ""
        name = path.name
        if name == "__init__.py":
            if relative.parts != ("helpers", "__init__.py"):
                problems.append(f"{relative}: test directories are not packages")
        elif name.startswith("test_") or name == "conftest.py" or top == "helpers":
            pass
        elif not top:
            problems.append(f"{relative}: a helper at the top belongs in helpers/")
        elif not name.startswith(f"_{path.parent.name}_"):
            problems.append(f"{relative}: a helper of {path.parent.name}/ is _{path.parent.name}_*")
        if path != Path(__file__).resolve() and _LITERAL_BOUND.search(path.read_text("utf-8")):
            problems.append(f"{relative}: a literal wait bound; use helpers.timeouts")
    return problems


def test_the_test_tree_follows_its_naming_rules() -> None:
    assert layout_problems(TESTS) == []


@pytest.mark.parametrize(
    ("relative", "text", "problem"),
    [
        ("agent/_support.py", "", "agent/_support.py: a helper of agent/ is _agent_*"),
        ("tool.py", "", "tool.py: a helper at the top belongs in helpers/"),
        ("agent/__init__.py", "", "agent/__init__.py: test directories are not packages"),
        ("cli/test_agent.py", "", "test_agent.py is the basename of 2 files"),
        (
            "cli/test_wait.py",
            "with anyio.fail_after(5):\n",
            "cli/test_wait.py: a literal wait bound; use helpers.timeouts",
        ),
        (
            "cli/test_exit.py",
            "assert process.wait(10) == 0\n",
            "cli/test_exit.py: a literal wait bound; use helpers.timeouts",
        ),
    ],
)
def test_a_file_against_the_rules_is_reported(
    tmp_path: Path, relative: str, text: str, problem: str
) -> None:
    """A synthetic tree that follows the rules, then one file that does not."""
    for good in (
        "conftest.py",
        "agent/conftest.py",
        "agent/test_agent.py",
        "agent/_agent_support.py",
        "helpers/__init__.py",
        "helpers/timeouts.py",
        "golden/v1/anything.py",
    ):
        (tmp_path / good).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / good).write_text("with anyio.fail_after(TIMEOUT):\n", encoding="utf-8")
    assert layout_problems(tmp_path) == []
    (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / relative).write_text(text, encoding="utf-8")
    assert layout_problems(tmp_path) == [problem]

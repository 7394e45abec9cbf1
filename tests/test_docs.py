"""The documentation's examples run, and its links lead somewhere.

Every fenced ``python`` block of ``README.md`` and ``docs/*.md`` runs offline as it stands,
from the repository's root, in a fresh interpreter (a block written ``python no-run`` needs
what a test machine has not: a model key, an editor on the other end). Every relative link of
those pages names a file of the repository.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.timeouts import TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```python\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#[^)]*)?\)")


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """The runnable ``python`` blocks of ``page``: (line, code)."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m["code"]) for m in _BLOCK.finditer(text)]


BLOCKS = [
    pytest.param(code, id=f"{page.relative_to(ROOT)}:{line}")
    for page in PAGES
    for line, code in python_blocks(page)
]


def test_the_pages_have_examples_to_run() -> None:
    ids = {str(p.id).split(":")[0] for p in BLOCKS}
    assert {"README.md", "docs/python.md"} <= ids


@pytest.mark.subprocess
@pytest.mark.parametrize("code", BLOCKS)
def test_a_python_example_runs_as_written(code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file(page: Path) -> None:
    missing = [
        m["target"]
        for m in _LINK.finditer(page.read_text(encoding="utf-8"))
        if "://" not in m["target"] and not (page.parent / m["target"]).exists()
    ]
    assert missing == []


def test_a_failing_example_and_a_broken_link_are_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "See [nowhere](missing.md).\n\n```python\nraise SystemExit(3)\n```\n\n"
        "```python no-run\nimport a_model_key\n```\n"
    )
    [(line, code)] = python_blocks(page)
    assert line == 3
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 3
    assert [m["target"] for m in _LINK.finditer(page.read_text())] == ["missing.md"]

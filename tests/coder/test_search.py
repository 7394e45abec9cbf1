from __future__ import annotations

import threading
from pathlib import Path

import pytest

from accord.coder import _search
from accord.coder._paths import Roots, ToolError
from accord.coder._search import find_files, glob_match, grep, list_directory


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in [
        "src/app/main.py",
        "src/app/util.py",
        "src/app/data.json",
        "tests/test_main.py",
        "node_modules/x/index.js",
        ".git/config",
        "README.md",
    ]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\nTODO fix {Path(name).stem}\n")
    (tmp_path / "blob.bin").write_bytes(b"\0\1TODO")
    return tmp_path


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a/b/c.py", True),
        ("*.py", "c.txt", False),
        ("**/*.py", "c.py", True),
        ("**/*.py", "a/b/c.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("src/**/test_*.py", "lib/test_a.py", False),
        ("src/*.py", "src/a/b.py", False),
        ("src/*.py", "src/b.py", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_list_directory_puts_directories_first(tree: Path) -> None:
    listing = list_directory(Roots.of(str(tree)), ".")
    lines = listing.splitlines()
    assert lines[0] == ".:"
    assert lines.index("src/") < lines.index("README.md")
    assert ".git/" in lines  # listing one directory shows everything in it


def test_list_directory_refuses_files_and_outside(tree: Path) -> None:
    roots = Roots.of(str(tree / "src"))
    with pytest.raises(ToolError, match="not a directory"):
        list_directory(roots, "app/main.py")
    with pytest.raises(ToolError, match="outside"):
        list_directory(roots, "..")


def test_find_files_skips_vendored_directories(tree: Path) -> None:
    found = find_files(Roots.of(str(tree)), "*")
    assert "src/app/main.py" in found
    assert "node_modules" not in found
    assert ".git" not in found
    assert find_files(Roots.of(str(tree)), "**/*.py", "src").splitlines()[1:] == [
        "src/app/main.py",
        "src/app/util.py",
    ]
    assert "no files match" in find_files(Roots.of(str(tree)), "*.rs")
    with pytest.raises(ToolError, match="empty"):
        find_files(Roots.of(str(tree)), " ")


def test_grep_reports_path_line_and_text(tree: Path) -> None:
    found = grep(Roots.of(str(tree)), r"TODO fix (main|util)", include="*.py")
    assert found.splitlines() == [
        "src/app/main.py:2: TODO fix main",
        "src/app/util.py:2: TODO fix util",
    ]
    assert "blob.bin" not in grep(Roots.of(str(tree)), "TODO")
    assert grep(Roots.of(str(tree)), "todo FIX", "README.md", ignore_case=True) == (
        "README.md:2: TODO fix README"
    )
    assert grep(Roots.of(str(tree)), "nothing-like-this").startswith("no matches")


def test_grep_errors(tree: Path) -> None:
    roots = Roots.of(str(tree))
    with pytest.raises(ToolError, match="invalid regular expression"):
        grep(roots, "(")
    with pytest.raises(ToolError, match="does not exist"):
        grep(roots, "x", "missing")


def test_results_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_search, "MAX_MATCHES", 3)
    monkeypatch.setattr(_search, "MAX_ENTRIES", 2)
    monkeypatch.setattr(_search, "MAX_LINE_CHARS", 10)
    (tmp_path / "a.txt").write_text("hit " * 20 + "\n" + "hit\n" * 5)
    roots = Roots.of(str(tmp_path))
    found = grep(roots, "hit").splitlines()
    assert found[0] == "a.txt:1: " + ("hit " * 20)[:10] + " …"
    assert len(found) == 4
    assert found[-1] == "… and 3 more match(es); narrow the search"
    for name in "bcd":
        (tmp_path / f"{name}.txt").write_text("")
    assert list_directory(roots).splitlines()[-1] == "… and 2 more"


def test_large_files_are_not_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_search, "MAX_GREP_FILE_BYTES", 10)
    (tmp_path / "big.txt").write_text("needle " * 10)
    assert grep(Roots.of(str(tmp_path)), "needle").startswith("no matches")


def test_an_empty_directory_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert list_directory(Roots.of(str(tmp_path)), "empty") == "empty is empty"


def test_links_inside_the_workspace_are_searched_and_links_out_are_not(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "src").mkdir(parents=True)
    outside.mkdir()
    (project / "src" / "real.py").write_text("needle = 1\n")
    (outside / "secret.py").write_text("needle = 'secret'\n")
    (project / "alias.py").symlink_to(project / "src" / "real.py")
    (project / "escape.py").symlink_to(outside / "secret.py")
    (project / "src" / "up").symlink_to(project, target_is_directory=True)  # a loop
    found = grep(Roots.of(str(project)), "needle")
    assert found.splitlines() == [
        "alias.py:1: needle = 1",
        "src/real.py:1: needle = 1",
        "[skipped 1 link(s) leading out of the workspace]",
    ]
    # The outside directory as an additional root: the link now stays inside the workspace.
    both = grep(Roots.of(str(project), [str(outside)]), "needle")
    assert "escape.py:1: needle = 'secret'" in both
    assert "skipped" not in both


def test_a_search_stops_when_asked(tree: Path) -> None:
    stop = threading.Event()
    stop.set()
    found = grep(Roots.of(str(tree)), "TODO", stop=stop)
    assert found.splitlines() == ["no matches for 'TODO'", "[cancelled; results are partial]"]

from __future__ import annotations

import os
from pathlib import Path

import pytest

from accord.coder._paths import Roots, ToolError


def test_relative_paths_are_taken_from_the_cwd(tmp_path: Path) -> None:
    roots = Roots.of(str(tmp_path))
    assert roots.resolve("a/b.py") == str(tmp_path / "a" / "b.py")
    assert roots.resolve("./a/../c") == str(tmp_path / "c")
    assert roots.resolve(str(tmp_path)) == str(tmp_path)


@pytest.mark.parametrize("path", ["..", "../x", "/etc/passwd", "a/../../x"])
def test_paths_outside_the_roots_are_refused(tmp_path: Path, path: str) -> None:
    roots = Roots.of(str(tmp_path / "project"))
    with pytest.raises(ToolError, match="outside the workspace"):
        roots.resolve(path)


def test_a_sibling_with_a_common_prefix_is_outside(tmp_path: Path) -> None:
    roots = Roots.of(str(tmp_path / "project"))
    with pytest.raises(ToolError):
        roots.resolve(str(tmp_path / "project2" / "x"))


def test_additional_directories_are_roots_too(tmp_path: Path) -> None:
    other = tmp_path / "lib"
    roots = Roots.of(str(tmp_path / "project"), [str(other)])
    assert roots.resolve(str(other / "x.py")) == str(other / "x.py")
    assert roots.all == (str(tmp_path / "project"), str(other))


def test_a_symlink_pointing_out_of_the_roots_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    secret = tmp_path / "secret"
    secret.mkdir()
    os.symlink(secret, project / "link")
    roots = Roots.of(str(project))
    with pytest.raises(ToolError, match="outside"):
        roots.resolve("link/key")


def test_a_symlink_inside_the_roots_keeps_the_path_as_given(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "real").mkdir(parents=True)
    os.symlink(project / "real", project / "alias")
    roots = Roots.of(str(project))
    assert roots.resolve("alias/f.py") == str(project / "alias" / "f.py")


def test_empty_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="empty"):
        Roots.of(str(tmp_path)).resolve("  ")


def test_display_is_relative_inside_the_cwd(tmp_path: Path) -> None:
    roots = Roots.of(str(tmp_path / "p"), [str(tmp_path / "q")])
    assert roots.display(str(tmp_path / "p" / "a.py")) == "a.py"
    assert roots.display(str(tmp_path / "q" / "b.py")) == str(tmp_path / "q" / "b.py")
    assert str(tmp_path / "q") in roots.describe()

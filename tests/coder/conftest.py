"""Fixtures for the coding agent's tests.

pydantic-ai runs on asyncio only, so async tests here default to asyncio; modules without model
code (files, processes) run on trio as well by overriding ``anyio_backend``. Every message on
the wire is schema-checked by the suite-wide ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """pydantic-ai runs on asyncio only."""
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A tiny Python project: a package with a bug, and a test that finds it."""
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_add.py").write_text(
        "from pkg import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (root / "README.md").write_text("# demo\n")
    return root


@pytest.fixture(autouse=True)
def _private_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user data dir (the prompt-capabilities cache, ...) is the test's own, never the
    real one (children spawned by the test inherit it)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))

"""Fixtures for the coding agent's tests.

pydantic-ai runs on asyncio only, so async tests here default to asyncio; modules without model
code (files, processes) run on trio as well by overriding ``anyio_backend``. Every message on
the wire is schema-checked by the suite-wide ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.projects import buggy_project


@pytest.fixture
def anyio_backend() -> str:
    """pydantic-ai runs on asyncio only."""
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A tiny Python project: a package with a bug, and a test that finds it."""
    return buggy_project(tmp_path, readme=True)


@pytest.fixture(autouse=True)
def _private_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user data dir (the prompt-capabilities cache, ...) is the test's own, never the
    real one (children spawned by the test inherit it)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))

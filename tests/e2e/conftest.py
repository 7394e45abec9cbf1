"""Fixtures for the end-to-end tests: ``accord serve`` as a real subprocess, the fake model
server on loopback in this process, and a small project to work on.

pydantic-ai is not in this process's path at all here (the agent is another process), but the
client runs on asyncio to match how editors drive agents; every message on the wire is
schema-checked by the suite-wide ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.projects import buggy_project


@pytest.fixture
def anyio_backend() -> str:
    """The client side of these tests runs on asyncio."""
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A tiny Python package with a bug, and a test that finds it."""
    return buggy_project(tmp_path)


@pytest.fixture(autouse=True)
def _private_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user data dir (the prompt-capabilities cache, ...) is the test's own, never the
    real one (children spawned by the test inherit it)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))

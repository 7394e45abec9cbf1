"""The TUI's tests run on asyncio only: Textual drives its own asyncio loop."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"

"""``connect(read_only=True)``: an agent that never asks permission changes nothing.

The agent (``tests/helpers/blunt_agent.py``) sends ``fs/write_text_file`` and
``terminal/create`` whatever the client advertised; a read-only client advertises reading
only and refuses both (-32601), while it still serves reads.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.client import connect

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

BLUNT = [sys.executable, str(Path(__file__).resolve().parents[1] / "helpers" / "blunt_agent.py")]


async def test_a_read_only_client_refuses_writes_and_terminals(tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(BLUNT, cwd=tmp_path, fs=True, read_only=True) as connection:
            session = await connection.new_session(tmp_path)
            result = await session.prompt("go")
    lines = result.text.splitlines()
    assert lines[0] == "advertised write=False terminal=False"
    assert lines[1].startswith("write: refused -32601")
    assert lines[2].startswith("terminal: refused -32601")
    assert not (tmp_path / "written.txt").exists()
    assert not (tmp_path / "ran.txt").exists()


async def test_a_read_only_client_hosts_no_terminals() -> None:
    with pytest.raises(ValueError, match="read-only client hosts no terminals"):
        async with connect(BLUNT, fs=True, terminals=True, read_only=True):
            pass

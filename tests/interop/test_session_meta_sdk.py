"""The unstable session methods (``session/set_title``, ``session/status``,
``session/archive``, ``session/unarchive``, ``session/list``'s ``archived``) with the official
TypeScript SDK as the client.

Only 2.4.0 speaks them (its unstable schema and method table, ``methods.agent.session``;
1.9.0 has none of them), so ``session_meta_sdk/session_meta_client.mjs`` runs on 2.x only,
sends them by name through the SDK's ``client()`` and runs every answer through the SDK's own
validator. Install the SDK with ``scripts/fetch_interop_agents.sh``; without it this skips.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine
from accord.transports import spawn_agent

pytestmark = [pytest.mark.interop, pytest.mark.subprocess, pytest.mark.anyio]


async def test_the_sdk_client_retitles_checks_archives_and_unarchives_a_session(
    sdk2_program: Callable[[str], list[str]], tmp_path: Path
) -> None:
    result = tmp_path / "result.json"
    runtime = AgentRuntime(ScriptedEngine([[Say("hi")]]), store=MemorySessionStore())
    try:
        with anyio.fail_after(TIMEOUT * 2):
            command = sdk2_program("session_meta_sdk/session_meta_client.mjs")
            async with spawn_agent([*command, str(result)], cwd=tmp_path) as pipes:
                await runtime.serve(pipes)
    finally:
        await runtime.aclose()
    answer = json.loads(result.read_text())
    assert answer["mismatched"] == []
    assert {"title", "status", "archive", "list"} <= set(answer["sessionCapabilities"])
    session_id = answer["sessionId"]
    assert answer["title"] == "From the SDK"
    assert answer["titles"][-1] == "From the SDK"  # the session_info_update it was sent
    assert answer["statuses"] == ["open", "saved"]
    assert answer["listed"] == {"default": [], "only": [[session_id, True]]}
    assert answer["refused"] == {
        "code": -32602,
        "data": {"sessionId": session_id, "reason": "archived"},
    }
    assert answer["back"] == [[session_id, False, "From the SDK"]]

"""``mcpServers`` is skip-invalid-items (issue 26): one malformed server is skipped, the
others are used, and the response names what was skipped under
``_meta.accord.skippedMcpServers``."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _agent_support import CWD, scripted, serve
from helpers.timeouts import TIMEOUT

pytestmark = pytest.mark.anyio


_unchecked = pytest.mark.wire_unchecked("the malformed mcpServers items are the point")

_GOOD: dict[str, Any] = {"name": "good", "command": "/bin/true", "args": [], "env": []}
_BAD: list[tuple[dict[str, Any], str]] = [
    ({"type": "websocket", "name": "ws", "url": "ws://x"}, "unknown type 'websocket'"),
    (
        {"name": "envobj", "command": "/bin/true", "args": [], "env": {"A": "1"}},
        "env: Input should be a valid list",
    ),
    ({"name": "noargs", "command": "/bin/true"}, "args: Field required"),
    ({"type": "http", "name": "nohead", "url": "https://h.example"}, "headers: Field required"),
]


@_unchecked
@pytest.mark.parametrize(("bad", "reason"), _BAD)
async def test_a_malformed_server_is_skipped_and_named(bad: dict[str, Any], reason: str) -> None:
    async with serve(scripted()) as h:
        params: dict[str, Any] = {"cwd": CWD, "mcpServers": [bad, _GOOD]}
        with anyio.fail_after(TIMEOUT):
            answer = await h.conn.connection.request("session/new", params)
        session_id = answer["sessionId"]
        assert answer["_meta"]["accord"]["skippedMcpServers"] == [
            {"index": 0, "name": bad["name"], "reason": reason}
        ]
        kept = h.engine.session(session_id).context.mcp_servers
    assert [server.name for server in kept] == ["good"]


async def test_a_well_formed_list_says_nothing_skipped() -> None:
    async with serve(scripted()) as h:
        params: dict[str, Any] = {"cwd": CWD, "mcpServers": [_GOOD]}
        with anyio.fail_after(TIMEOUT):
            answer = await h.conn.connection.request("session/new", params)
        meta: dict[str, Any] = answer.get("_meta") or {}
        assert "skippedMcpServers" not in meta.get("accord", {})
        kept = h.engine.session(answer["sessionId"]).context.mcp_servers
    assert [server.name for server in kept] == ["good"]

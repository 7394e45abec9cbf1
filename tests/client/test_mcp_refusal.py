"""The client runtime does not send MCP servers of a transport the agent did not advertise.

``new_session`` / ``load_session`` / ``resume_session`` / ``fork_session`` raise
:class:`~accord.errors.LocalProtocolError` naming the servers and what the agent takes, and
nothing goes on the wire: the agent's next message is whatever the client sends next.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _client_agents import WireAgent
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.errors import LocalProtocolError
from accord.schema import HttpMcpServer, McpServerStdio, SseMcpServer

pytestmark = pytest.mark.anyio

HTTP = HttpMcpServer(name="remote", url="https://mcp.example/mcp", headers=[])
SSE = SseMcpServer(name="legacy", url="https://mcp.example/sse", headers=[])
STDIO = McpServerStdio(name="local", command="/bin/true", args=[], env=[])


async def test_unadvertised_transports_are_refused_before_sending(wire: WireAgent) -> None:
    received: list[dict[str, Any]] = []

    async def agent_side() -> None:
        initialize = await wire.expect("initialize")
        await wire.reply(
            initialize,
            {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": True, "mcpCapabilities": {"http": True}},
            },
        )
        new = await wire.expect("session/new")
        received.append(new)
        await wire.reply(new, {"sessionId": "s1"})

    refusals: list[str] = []
    async with wire.playing(agent_side):
        with anyio.fail_after(TIMEOUT):
            async with connect(wire.client_end) as conn:
                with pytest.raises(LocalProtocolError) as caught:
                    await conn.new_session("/", mcp_servers=[STDIO, SSE])
                refusals.append(str(caught.value))
                with pytest.raises(LocalProtocolError) as caught:
                    await conn.load_session("s0", "/", mcp_servers=[SSE, HTTP])
                refusals.append(str(caught.value))
                session = await conn.new_session("/", mcp_servers=[STDIO, HTTP])
    assert session.session_id == "s1"
    # The refused requests never went out: the agent's first session/new is the good one.
    (new,) = received
    assert [s["name"] for s in new["params"]["mcpServers"]] == ["local", "remote"]
    assert (
        refusals
        == [
            "MCP server 'legacy' (sse): this agent does not support the transport"
            " (mcpCapabilities does not advertise it); it takes stdio, http servers"
        ]
        * 2
    )

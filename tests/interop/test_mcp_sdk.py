"""MCP over ACP against the official TypeScript SDK (``@agentclientprotocol/sdk`` 2.4.0).

2.4.0 ships the binding's helpers in its unstable module: ``McpOverAcpCaller`` (the agent's
side) and ``McpOverAcpProvider`` (the client's). Over real stdio pipes:

* accord's client hosts an MCP server of the ``mcp`` package (``connect(mcp_servers=...)``)
  for ``mcp_sdk/mcp_agent.mjs``, an agent calling it with ``McpOverAcpCaller``: tools/list,
  tools/call with progress, and an unknown ``serverId`` (-33001);
* ``mcp_sdk/mcp_client.mjs``, a client hosting a tool with ``McpOverAcpProvider``, drives the
  coder (served here on the script's pipes, its model the fake OpenAI server), whose model
  calls the tool.

Both run through accord's connection in this process, so every message is schema-checked by
the suite's wire fixture.
Install the SDK with ``scripts/fetch_interop_agents.sh``; without it these tests skip.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT
from mcp.server.mcpserver import Context, MCPServer

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, RecordedRequest, ScriptedReply, ScriptedToolCall
from accord.transports import spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.interop, pytest.mark.subprocess]

Program = Callable[[str], list[str]]


def tool_names(request: RecordedRequest) -> list[str]:
    """The tools a model request offered."""
    tools: list[dict[str, Any]] = request.body.get("tools") or []
    return [tool["function"]["name"] for tool in tools]


def editor_tools() -> MCPServer:
    """The tools accord's client hosts: ``shout`` (upper-cases, reports progress)."""
    server = MCPServer("editor tools")

    @server.tool()
    async def shout(text: str, ctx: Context) -> str:
        """Upper-case the text."""
        await ctx.report_progress(1, 2, "halfway")
        return text.upper()

    return server


async def test_the_sdk_agent_calls_the_tools_accord_hosts(sdk2_program: Program) -> None:
    command = sdk2_program("mcp_sdk/mcp_agent.mjs")
    with anyio.fail_after(TIMEOUT), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        async with connect(command, mcp_servers=[editor_tools()]) as agent:
            session = await agent.new_session("/")
            result = await session.prompt("use the editor's tools")
            record = json.loads(session.view.agent_text())
    assert result.stop_reason == "end_turn"
    assert record["server"]["type"] == "acp"
    assert record["server"]["name"] == "editor tools"
    assert record["tools"] == ["shout"]
    assert record["called"]["structuredContent"] == {"result": "HI"}
    (progress,) = record["progress"]
    assert progress["method"] == "notifications/progress"
    assert progress["params"] == {
        "progressToken": "p1",
        "progress": 1,
        "total": 2,
        "message": "halfway",
    }
    assert record["unknown"]["code"] == -33001
    assert "no-such-server" in record["unknown"]["message"]


@pytest.mark.asyncio_only("the coder (pydantic-ai, FastMCP) runs on asyncio only")
async def test_the_coder_uses_the_tools_an_sdk_client_hosts(
    sdk2_program: Program, tmp_path: Path
) -> None:
    command = sdk2_program("mcp_sdk/mcp_client.mjs")
    result = tmp_path / "result.json"
    script = [
        ScriptedReply(
            tool_calls=[ScriptedToolCall(name="editor_tools_shout", arguments={"text": "hi"})]
        ),
        ScriptedReply(text=["Shouted."]),
    ]
    with FakeOpenAIServer(script) as model:
        config = CoderConfig(models=("openai:fake-model",), base_url=model.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            with anyio.fail_after(TIMEOUT):
                # The SDK client on the other end of the pipes; the coder served on them here.
                async with spawn_agent([*command, str(result), str(tmp_path), "shout hi"]) as pipes:
                    await runtime.serve(pipes)
        finally:
            await runtime.aclose()
        first, second = model.requests
    answer = json.loads(result.read_text())
    assert answer["stopReason"] == "end_turn"
    assert answer["text"] == "Shouted."
    assert answer["agentCapabilities"]["mcpCapabilities"]["acp"] is True
    methods = [call["method"] for call in answer["calls"]]
    assert methods == ["server/discover", "tools/list", "tools/call"]
    assert {call["protocolVersion"] for call in answer["calls"]} == {"2026-07-28"}
    assert answer["calls"][-1]["params"]["arguments"] == {"text": "hi"}
    assert "editor_tools_shout" in tool_names(first)
    assert second.messages[-1]["content"] == "HI"

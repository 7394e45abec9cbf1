"""``connect(mcp_servers=[...])`` hosts MCP servers of the ``mcp`` package over ACP.

An in-process agent that advertises ``mcpCapabilities.acp`` gets the servers as ``acp`` MCP
servers in ``session/new`` and calls them with ``mcp/message`` (every message schema-checked
by the suite's wire fixture); the server's notifications for a request come back as
``mcp/message`` notifications; bad input gets the binding's outer errors or the server's
inner MCP errors.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from helpers.timeouts import TIMEOUT
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer

from accord.client import connect
from accord.errors import InvalidParams, LocalProtocolError, RequestError
from accord.roles import Agent
from accord.schema import (
    AcpMcpServer,
    McpCapabilities,
    MessageMcpNotification,
    MessageMcpRequest,
    MessageMcpResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
)

pytestmark = pytest.mark.anyio

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def tools_server(
    release: anyio.Event | None = None,
    ended: anyio.Event | None = None,
    started: anyio.Event | None = None,
) -> MCPServer:
    """An MCP server with ``add`` (reports progress) and ``wait`` (until ``release``; sets
    ``started`` when it begins, ``ended`` when it ends, however it ends)."""
    server = MCPServer("project-tools")

    @server.tool()
    async def add(a: int, b: int, ctx: Context) -> int:
        """Add two numbers."""
        await ctx.report_progress(1, 2, "halfway")
        return a + b

    @server.tool()
    async def wait() -> str:
        """Wait until the test releases it."""
        if started is not None:
            started.set()
        try:
            assert release is not None
            await release.wait()
            return "released"
        finally:
            if ended is not None:
                ended.set()

    return server


class McpAgent(Agent):
    """Advertises ``acp`` MCP servers, records the servers of each session and the
    ``mcp/message`` notifications it receives."""

    def __init__(self, *, acp: bool = True) -> None:
        self.acp = acp
        self.servers: list[Any] = []
        self.notifications: list[MessageMcpNotification] = []

    def mcp_capabilities(self) -> McpCapabilities | None:
        """``acp`` when asked to."""
        return McpCapabilities(acp=True) if self.acp else None

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        """Record the servers."""
        self.servers.extend(request.mcp_servers)
        return NewSessionResponse(session_id=f"s{len(self.servers)}")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        """Not used."""
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, notification: Any) -> None:
        """Not used."""

    async def mcp_notification(self, notification: MessageMcpNotification) -> None:
        """Record it."""
        self.notifications.append(notification)

    async def call(
        self, server_id: str, request_id: str, method: str, params: dict[str, Any] | None = None
    ) -> MessageMcpResponse:
        """One ``mcp/message`` with the 2026-07-28 envelope."""
        with_envelope = {**(params or {}), "_meta": {**ENVELOPE, **(params or {}).get("_meta", {})}}
        return await self.client.mcp_message(
            MessageMcpRequest(
                server_id=server_id, request_id=request_id, method=method, params=with_envelope
            )
        )


async def test_the_agent_lists_and_calls_the_hosted_tools_over_acp() -> None:
    agent = McpAgent()
    with anyio.fail_after(TIMEOUT), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        async with connect(agent, mcp_servers=[tools_server()]) as conn:
            await conn.new_session("/")
            await conn.new_session("/", mcp_servers=[])
            (declared, again) = agent.servers
            assert isinstance(declared, AcpMcpServer)
            assert declared.name == "project-tools"
            assert again == declared  # every session names the hosted servers, same id
            server_id = declared.server_id
            listing = await agent.call(server_id, "1", "tools/list")
            names = [tool["name"] for tool in listing.result["tools"]]
            called = await agent.call(
                server_id,
                "2",
                "tools/call",
                {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": {"progressToken": "p"}},
            )
    assert names == ["add", "wait"]
    assert called.result["structuredContent"] == {"result": 5}
    assert called.error is None
    (progress,) = agent.notifications
    assert (progress.server_id, progress.request_id) == (server_id, "2")
    assert progress.method == "notifications/progress"
    assert progress.params == {
        "progressToken": "p",
        "progress": 1.0,
        "total": 2.0,
        "message": "halfway",
    }


async def test_bad_requests_get_the_bindings_errors_or_the_servers() -> None:
    release, started = anyio.Event(), anyio.Event()
    agent = McpAgent()
    with anyio.fail_after(TIMEOUT):
        async with connect(agent, mcp_servers=[tools_server(release, started=started)]) as conn:
            await conn.new_session("/")
            server_id = agent.servers[0].server_id
            with pytest.raises(RequestError) as unknown:
                await agent.call("no-such-server", "1", "tools/list")
            no_envelope = await agent.client.mcp_message(
                MessageMcpRequest(server_id=server_id, request_id="2", method="tools/list")
            )
            no_method = await agent.call(server_id, "3", "tools/frobnicate")
            bad_arguments = await agent.call(
                server_id, "4", "tools/call", {"name": "add", "arguments": {"a": "two"}}
            )
            duplicate: list[RequestError] = []

            async def second_with_the_same_id() -> None:
                with pytest.raises(InvalidParams) as caught:
                    await agent.call(server_id, "5", "tools/call", {"name": "wait"})
                duplicate.append(caught.value)
                release.set()

            async with anyio.create_task_group() as group:

                async def first() -> None:
                    answer = await agent.call(server_id, "5", "tools/call", {"name": "wait"})
                    assert answer.result["content"][0]["text"] == "released"

                group.start_soon(first)
                await started.wait()  # the first is active before the second is sent
                group.start_soon(second_with_the_same_id)
            # Answered, the id may be used again.
            reused = await agent.call(server_id, "5", "tools/list")
    assert unknown.value.code == -33001
    assert "no-such-server" in unknown.value.message
    assert no_envelope.error is not None
    assert no_envelope.error.code == -32602
    assert "io.modelcontextprotocol/protocolVersion" in no_envelope.error.message
    assert no_method.error is not None
    assert no_method.error.code == -32601
    assert bad_arguments.result["isError"] is True
    (refused,) = duplicate
    assert "'5' is already active" in refused.message
    assert reused.error is None


async def test_the_agent_cancelling_a_call_cancels_the_tool() -> None:
    ended, started = anyio.Event(), anyio.Event()
    agent = McpAgent()
    with anyio.fail_after(TIMEOUT):
        server = tools_server(anyio.Event(), ended, started)
        async with connect(agent, mcp_servers=[server]) as conn:
            await conn.new_session("/")
            server_id = agent.servers[0].server_id
            async with anyio.create_task_group() as group:
                group.start_soon(agent.call, server_id, "1", "tools/call", {"name": "wait"})
                await started.wait()
                group.cancel_scope.cancel()
            # $/cancel_request reaches the client, and the tool's handler unwinds.
            await ended.wait()


async def test_hosted_servers_need_an_agent_that_takes_them() -> None:
    with anyio.fail_after(TIMEOUT), pytest.raises(LocalProtocolError) as caught:
        async with connect(McpAgent(acp=False), mcp_servers=[tools_server()]):
            pass
    assert "did not advertise mcpCapabilities.acp" in str(caught.value)


async def test_only_mcp_servers_can_be_hosted() -> None:
    with pytest.raises(TypeError) as caught:
        async with connect(McpAgent(), mcp_servers=[object()]):
            pass
    assert "not object" in str(caught.value)


async def test_a_low_level_server_runs_in_its_lifespan_for_the_connection() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Server[dict[str, str]]) -> AsyncIterator[dict[str, str]]:
        events.append("up")
        yield {"greeting": "hello"}
        events.append("down")

    async def call_tool(
        ctx: ServerRequestContext[dict[str, str]], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        text = f"{ctx.lifespan_context['greeting']}, {params.arguments or {}}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server = Server("low-level", lifespan=lifespan, on_call_tool=call_tool)
    agent = McpAgent()
    with anyio.fail_after(TIMEOUT):
        async with connect(agent, mcp_servers=[server]) as conn:
            assert events == ["up"]
            await conn.new_session("/")
            (declared,) = agent.servers
            called = await agent.call(
                declared.server_id, "1", "tools/call", {"name": "greet", "arguments": {"to": 1}}
            )
    assert events == ["up", "down"]
    assert declared.name == "low-level"
    assert called.result["content"] == [{"type": "text", "text": "hello, {'to': 1}"}]


@pytest.mark.wire_unchecked("an mcp/message that breaks the schema on purpose")
async def test_a_malformed_mcp_message_is_refused_by_the_client() -> None:
    agent = McpAgent()
    with anyio.fail_after(TIMEOUT):
        async with connect(agent, mcp_servers=[tools_server()]) as conn:
            await conn.new_session("/")
            with pytest.raises(InvalidParams) as caught:
                # No requestId, and a serverId that is not a string.
                await agent.client.connection.request(
                    "mcp/message", {"serverId": 7, "method": "tools/list"}
                )
    assert caught.value.code == -32602
    assert "requestId" in str(caught.value.data)

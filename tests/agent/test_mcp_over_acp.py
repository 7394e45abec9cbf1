"""The runtime's side of MCP over ACP: ``acp`` servers, ``mcp/message`` out, notifications in.

An engine that declares ``mcp_acp`` makes the runtime advertise ``mcpCapabilities.acp`` and
take ``acp`` MCP servers; the engine reaches them through ``SessionContext.mcp_over_acp``,
whose requests go to the declaring client as ``mcp/message`` and whose notifications (the
client's ``mcp/message`` notifications) reach the request they name, and only it. The client
here is a recording client that answers ``mcp/message`` itself; every message is
schema-checked by the suite's wire fixture.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _agent_support import CWD, RecordingClient, serve
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client._mcp_host import McpHost
from accord.engines import EngineCapabilities, McpOverAcp
from accord.errors import ConnectionClosed, LocalProtocolError, RequestError
from accord.roles import AgentSideConnection, ClientSideConnection
from accord.schema import (
    McpError,
    MessageMcpNotification,
    MessageMcpRequest,
    MessageMcpResponse,
    NewSessionRequest,
    ResumeSessionRequest,
)
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio

DECLARED = {"type": "acp", "name": "in-client", "serverId": "srv-1"}


class HostingClient(RecordingClient):
    """Answers ``mcp/message``: notifies first (for another request too), then answers."""

    def __init__(self) -> None:
        super().__init__()
        self.conn: ClientSideConnection | None = None
        self.requests: list[MessageMcpRequest] = []
        self.release = anyio.Event()

    async def mcp_message(self, request: MessageMcpRequest) -> MessageMcpResponse:
        self.requests.append(request)
        self._touch()
        assert self.conn is not None
        if request.method == "hold":
            await self.release.wait()
        for request_id in ("elsewhere", request.request_id):
            await self.conn.mcp_notification(
                MessageMcpNotification(
                    server_id=request.server_id,
                    request_id=request_id,
                    method="notifications/progress",
                    params={"progressToken": request_id, "progress": 1},
                )
            )
        if request.method == "fail":
            return MessageMcpResponse(error=McpError(code=-32601, message="no such method"))
        return MessageMcpResponse(result={"echo": request.params})


def engine() -> ScriptedEngine:
    return ScriptedEngine(capabilities=EngineCapabilities(mcp_acp=True))


async def test_the_engine_reaches_the_declaring_clients_servers() -> None:
    client = HostingClient()
    scripted = engine()
    async with serve(scripted, client=client) as h:
        client.conn = h.conn
        advertised = h.conn.agent_capabilities
        await h.new_session(mcpServers=[DECLARED])
        (session,) = scripted.sessions
        channel = session.context.mcp_over_acp
        assert channel is not None
        seen: list[tuple[str, Any]] = []

        async def note(method: str, params: dict[str, Any] | None) -> None:
            seen.append((method, params))

        with anyio.fail_after(TIMEOUT):
            answer = await channel.request(
                "srv-1", "r1", "tools/list", {"cursor": "c"}, on_notification=note
            )
            failed = await channel.request("srv-1", "r2", "fail")
            with pytest.raises(LocalProtocolError) as unnamed:
                await channel.request("srv-2", "r3", "tools/list")
    assert advertised is not None
    assert advertised["mcpCapabilities"] == {"http": False, "sse": False, "acp": True}
    assert session.context.mcp_servers[0].to_wire() == DECLARED
    assert [(r.server_id, r.request_id, r.method, r.params) for r in client.requests[:2]] == [
        ("srv-1", "r1", "tools/list", {"cursor": "c"}),
        ("srv-1", "r2", "fail", None),
    ]
    assert answer.result == {"echo": {"cursor": "c"}}
    # Only the notification of the request's own id reached it.
    assert seen == [("notifications/progress", {"progressToken": "r1", "progress": 1})]
    assert failed.error is not None
    assert failed.error.code == -32601
    # A server the session does not name is refused before anything is sent.
    assert "the session names no acp MCP server 'srv-2' (it has 'srv-1')" in str(unnamed.value)
    assert len(client.requests) == 2


async def test_an_active_request_id_cannot_be_reused() -> None:
    client = HostingClient()
    scripted = engine()
    async with serve(scripted, client=client) as h:
        client.conn = h.conn
        await h.new_session(mcpServers=[DECLARED])
        channel = scripted.sessions[0].context.mcp_over_acp
        assert channel is not None
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:
                group.start_soon(channel.request, "srv-1", "same", "hold")
                await client.wait_until(lambda: len(client.requests) == 1)
                with pytest.raises(LocalProtocolError) as refused:
                    await channel.request("srv-1", "same", "tools/list")
                client.release.set()
            again = await channel.request("srv-1", "same", "tools/list")
    assert "'same' is already active on server 'srv-1'" in str(refused.value)
    assert again.error is None


async def test_a_gone_client_fails_the_request_with_the_server_named() -> None:
    client = HostingClient()
    scripted = engine()
    runtime = AgentRuntime(scripted, store=MemorySessionStore())
    agent_end, client_end = memory_transport_pair()
    outcome: list[BaseException] = []

    async def held(channel: McpOverAcp) -> None:
        with pytest.raises(ConnectionClosed) as gone:
            await channel.request("srv-1", "r1", "hold")
        outcome.append(gone.value)

    with anyio.fail_after(TIMEOUT):
        async with AgentSideConnection(runtime, agent_end), anyio.create_task_group() as group:
            async with ClientSideConnection(client, client_end) as conn:
                client.conn = conn
                await conn.initialize()
                await conn.new_session(
                    NewSessionRequest.model_validate({"cwd": CWD, "mcpServers": [DECLARED]})
                )
                channel = scripted.sessions[0].context.mcp_over_acp
                assert channel is not None
                group.start_soon(held, channel)
                await client.wait_until(lambda: len(client.requests) == 1)
            await client_end.aclose()  # the client is gone, the request in flight
        with pytest.raises(ConnectionClosed) as after:
            await channel.request("srv-1", "r2", "tools/list")
    await runtime.aclose()
    (during,) = outcome
    assert "MCP server 'srv-1' disconnected during hold" in str(during)
    assert "MCP server 'srv-1' has disconnected" in str(after.value)


async def test_a_client_back_on_a_new_connection_serves_its_servers_again() -> None:
    scripted = engine()
    # Served with a grace period, as over the network: the session outlives the first link.
    runtime = AgentRuntime(scripted, store=MemorySessionStore(), grace=TIMEOUT)
    first, second = HostingClient(), HostingClient()
    with anyio.fail_after(TIMEOUT):
        agent_end, client_end = memory_transport_pair()
        async with AgentSideConnection(runtime, agent_end):
            async with ClientSideConnection(first, client_end) as conn:
                first.conn = conn
                await conn.initialize()
                opened = await conn.new_session(
                    NewSessionRequest.model_validate({"cwd": CWD, "mcpServers": [DECLARED]})
                )
            await client_end.aclose()
        channel = scripted.sessions[0].context.mcp_over_acp
        assert channel is not None
        with pytest.raises(ConnectionClosed):
            await channel.request("srv-1", "while-away", "tools/list")
        agent_end, client_end = memory_transport_pair()
        async with (
            AgentSideConnection(runtime, agent_end),
            ClientSideConnection(second, client_end) as conn,
        ):
            second.conn = conn
            await conn.initialize()
            # Resumed without naming servers: the stored ones, the same serverId.
            await conn.resume_session(ResumeSessionRequest(session_id=opened.session_id, cwd=CWD))
            answer = await channel.request("srv-1", "back", "tools/list")
    await runtime.aclose()
    assert len(scripted.sessions) == 1  # the live session was joined, not reopened
    assert [r.request_id for r in second.requests] == ["back"]
    assert first.requests == []
    assert answer.error is None


async def test_an_engine_without_it_refuses_acp_servers() -> None:
    async with serve(ScriptedEngine()) as h:
        with anyio.fail_after(TIMEOUT), pytest.raises(RequestError) as refused:
            await h.new_session(mcpServers=[DECLARED])
    assert refused.value.code == -32602
    assert "'in-client' (acp)" in refused.value.message


class RewritingHost(RecordingClient):
    """Hosts a real MCP server, but answers ``tools/list`` with a result that is no object."""

    def __init__(self, host: McpHost) -> None:
        super().__init__()
        self.host = host

    async def mcp_message(self, request: MessageMcpRequest) -> MessageMcpResponse:
        if request.method == "tools/list":
            return MessageMcpResponse(result=["not", "an", "object"])
        return await self.host.handle(request)


@pytest.mark.asyncio_only("FastMCP and pydantic-ai's MCP client run on asyncio")
async def test_the_coders_transport_fails_a_call_whose_outcome_is_no_mcp_result() -> None:
    from fastmcp import Client as FastMCPClient
    from mcp.server.mcpserver import MCPServer
    from mcp.shared.exceptions import MCPError

    from accord.coder._acp_mcp import AcpMcpTransport

    tools = MCPServer("in-client")
    scripted = engine()
    async with McpHost([tools]) as host:
        client = RewritingHost(host)
        async with serve(scripted, client=client) as h:
            host.attach(h.conn.mcp_notification)
            (declared,) = host.declarations
            await h.new_session(mcpServers=[declared.to_wire()])
            channel = scripted.sessions[0].context.mcp_over_acp
            assert channel is not None
            transport = AcpMcpTransport(channel, declared.server_id, "in-client")
            with anyio.fail_after(TIMEOUT):
                async with FastMCPClient(transport) as mcp:
                    prompts = await mcp.list_prompts()  # server/discover, the rest pass through
                    with pytest.raises(MCPError) as listing:
                        await mcp.list_tools()
    assert prompts == []
    assert listing.value.code == -33002
    assert listing.value.message == (
        "MCP server 'in-client' answered tools/list with a result that is not an object"
    )

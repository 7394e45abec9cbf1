"""MCP over ACP between two clients of one server: each client's ``acp`` servers are its own.

One runtime behind ``serve_remote`` on loopback; client A hosts a real MCP server
(``connect(mcp_servers=...)``), client B, holding the same token, knows its ``serverId`` (the
worst case) and tries to reach it: by naming it in a session of its own, and by forging the
server's notifications for a call of A's in flight. The engine is the scripted one, so the
test sends the engine's inner MCP requests itself.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT
from mcp.server.mcpserver import Context, MCPServer

from accord.agent import AgentRuntime
from accord.client import connect
from accord.engines import EngineCapabilities
from accord.errors import RequestError
from accord.remote import AccessPolicy, serve_remote
from accord.schema import AcpMcpServer, MessageMcpNotification
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine
from accord.transports import Transport

pytestmark = pytest.mark.anyio

TOKEN = "test-token-0123456789abcdef"
ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def tools(calls: list[str], release: anyio.Event) -> MCPServer:
    """A's tools: ``shout`` (recorded) and ``hold`` (reports progress, waits for ``release``)."""
    server = MCPServer("editor tools")

    @server.tool()
    async def shout(text: str) -> str:
        """Upper-case the text."""
        calls.append(text)
        return text.upper()

    @server.tool()
    async def hold(ctx: Context) -> str:
        """Report progress, then wait until released."""
        calls.append("hold")
        await ctx.report_progress(1, 2)
        await release.wait()
        return "released"

    return server


def call(name: str, arguments: dict[str, Any], token: str) -> dict[str, Any]:
    """A ``tools/call`` with the stateless MCP envelope and a progress token."""
    meta = {**ENVELOPE, "progressToken": token}
    return {"name": name, "arguments": arguments, "_meta": meta}


def forged(server_id: str, request_id: str, progress: int) -> MessageMcpNotification:
    """A progress notification of server ``server_id`` for its request ``request_id``."""
    return MessageMcpNotification(
        server_id=server_id,
        request_id=request_id,
        method="notifications/progress",
        params={"progressToken": "a1", "progress": progress, "total": 3},
    )


async def test_another_client_cannot_reach_or_drive_a_clients_acp_mcp_server() -> None:
    engine = ScriptedEngine(capabilities=EngineCapabilities(mcp_acp=True))
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=0)

    async def handler(transport: Transport) -> None:
        await runtime.serve(transport)

    calls: list[str] = []
    seen: list[tuple[str, Any]] = []
    release = anyio.Event()
    policy = AccessPolicy.build(TOKEN, loopback=True)
    with anyio.fail_after(TIMEOUT), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        async with anyio.create_task_group() as tg:
            port = await tg.start(
                functools.partial(serve_remote, handler, host="127.0.0.1", port=0, policy=policy)
            )
            url = f"ws://127.0.0.1:{port}/acp"
            async with (
                connect(
                    url, token=TOKEN, reconnect=False, mcp_servers=[tools(calls, release)]
                ) as a,
                connect(f"http://127.0.0.1:{port}/acp", token=TOKEN, reconnect=False) as b,
            ):
                await a.new_session()
                (declared,) = engine.sessions[0].context.mcp_servers
                assert isinstance(declared, AcpMcpServer)
                server_id = declared.server_id

                # B names A's server in a session of its own: the engine's requests for it go
                # to B's connection, which hosts nothing, and never to A's.
                await b.new_session(mcp_servers=[declared])
                b_channel = engine.sessions[1].context.mcp_over_acp
                assert b_channel is not None
                with pytest.raises(RequestError):
                    await b_channel.request(
                        server_id, "b1", "tools/call", call("shout", {"text": "from B"}, "b1")
                    )
                assert calls == []

                # A's own call is in flight; B forges the server's notifications for it.
                a_channel = engine.sessions[0].context.mcp_over_acp
                assert a_channel is not None
                active = anyio.Event()

                async def note(method: str, params: dict[str, Any] | None) -> None:
                    seen.append((method, params))
                    active.set()

                outcome: list[Any] = []

                async def a_call() -> None:
                    outcome.append(
                        await a_channel.request(
                            server_id,
                            "a1",
                            "tools/call",
                            call("hold", {}, "a1"),
                            on_notification=note,
                        )
                    )

                async with anyio.create_task_group() as calling:
                    calling.start_soon(a_call)
                    await active.wait()  # A's server reported its progress: the call is active
                    for request_id in ("a1", "b1"):
                        await b.calls.mcp_notification(forged(server_id, request_id, 2))
                    await b.list_sessions()  # B's notifications were read before this answer
                    # The same notification from A itself does reach the call (so B's was
                    # dropped for coming from B, not for its shape).
                    await a.calls.mcp_notification(forged(server_id, "a1", 3))
                    await a.list_sessions()
                    release.set()
                (answered,) = outcome
                assert answered.error is None
                assert answered.result["content"][0]["text"] == "released"
            await runtime.aclose()
            tg.cancel_scope.cancel()
    assert calls == ["hold"]
    # Only A's server's own notification reached A's call; B's forgeries were dropped.
    assert [(method, params["progress"]) for method, params in seen] == [
        ("notifications/progress", 1.0),
        ("notifications/progress", 3),
    ]

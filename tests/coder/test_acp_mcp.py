"""MCP over ACP end to end: the coder uses the MCP servers its client hosts (``acp`` servers).

accord's client hosts an MCP server of the ``mcp`` package (``connect(mcp_servers=...)``), the
coder (served in process, its model the fake OpenAI server) connects it at ``session/new``
over the same ACP connection and offers its tools to the model; the model's tool call travels
as ``mcp/message``. Every message is schema-checked by the suite's wire fixture.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from _coder_support import tool_names, wait_for_requests
from helpers.timeouts import TIMEOUT
from mcp.server.mcpserver import Context, MCPServer

from accord.client import AllowAll, DenyAll, PermissionContext, PermissionDecision, connect
from accord.coder import CoderConfig, CoderRuntime
from accord.errors import ConnectionClosed
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio


def editor_tools(started: anyio.Event | None = None, ended: anyio.Event | None = None) -> MCPServer:
    """The client's own tools: ``shout`` (reports progress) and ``hang`` (never returns; sets
    ``started`` when called, ``ended`` when it unwinds)."""
    server = MCPServer("editor tools")

    @server.tool()
    async def shout(text: str, ctx: Context) -> str:
        """Upper-case the text."""
        await ctx.report_progress(1, 1)
        return text.upper()

    @server.tool()
    async def hang() -> str:
        """Never answer."""
        if started is not None:
            started.set()
        try:
            await anyio.sleep_forever()
        finally:
            if ended is not None:
                ended.set()
        return ""

    return server


def tool_call(name: str, arguments: dict[str, Any]) -> list[ScriptedReply]:
    return [
        ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments=arguments)]),
        ScriptedReply(text=["done"]),
    ]


def last_message(request: Any) -> str:
    return str(request.messages[-1]["content"])


async def test_the_coder_calls_a_tool_its_client_hosts(project: Path) -> None:
    with FakeOpenAIServer(tool_call("editor_tools_shout", {"text": "hi"})) as model:
        config = CoderConfig(models=("openai:fake-model",), base_url=model.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            with anyio.fail_after(TIMEOUT), warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                async with connect(
                    runtime,
                    cwd=project,
                    mcp_servers=[editor_tools()],
                    permission_policy=AllowAll(),
                ) as connection:
                    assert connection.supports("mcpCapabilities", "acp")
                    session = await connection.new_session(project)
                    result = await session.prompt("shout hi")
        finally:
            await runtime.aclose()
        first, second = model.requests
    assert result.stop_reason == "end_turn"
    assert {"editor_tools_shout", "editor_tools_hang"} <= set(tool_names(first))
    assert last_message(second) == "HI"


async def test_a_client_that_dies_mid_call_fails_the_call_not_the_agent(project: Path) -> None:
    started = anyio.Event()
    script = [*tool_call("editor_tools_hang", {})[:1], ScriptedReply(text=["gone"])]
    with FakeOpenAIServer(script) as model:
        config = CoderConfig(models=("openai:fake-model",), base_url=model.base_url)
        # Served with a grace period, as over the network: the turn outlives its client.
        runtime = CoderRuntime(config, store=MemorySessionStore(), grace=TIMEOUT)
        client_end, agent_end = memory_transport_pair()
        try:
            with anyio.fail_after(TIMEOUT):
                async with anyio.create_task_group() as serving:
                    serving.start_soon(runtime.serve, agent_end)
                    async with connect(
                        client_end,
                        cwd=project,
                        mcp_servers=[editor_tools(started)],
                        permission_policy=AllowAll(),
                    ) as connection:
                        session = await connection.new_session(project)

                        async def prompt() -> None:
                            with pytest.raises(ConnectionClosed):
                                await session.prompt("hang")

                        async with anyio.create_task_group() as group:
                            group.start_soon(prompt)
                            await started.wait()
                            await client_end.aclose()  # the client is gone, the call in flight
                    # The turn goes on without it, and the model is told why the tool failed.
                    _, after = await wait_for_requests(model, 2)
                    serving.cancel_scope.cancel()
        finally:
            await runtime.aclose()
    told = str(after.messages[-1]["content"])
    assert "MCP server 'editor tools'" in told
    assert "disconnected during tools/call" in told


async def test_cancelling_the_turn_cancels_the_clients_tool(project: Path) -> None:
    started, ended = anyio.Event(), anyio.Event()
    with FakeOpenAIServer(tool_call("editor_tools_hang", {})[:1]) as model:
        config = CoderConfig(models=("openai:fake-model",), base_url=model.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            with anyio.fail_after(TIMEOUT):
                async with connect(
                    runtime,
                    cwd=project,
                    mcp_servers=[editor_tools(started, ended)],
                    permission_policy=AllowAll(),
                ) as connection:
                    session = await connection.new_session(project)
                    async with anyio.create_task_group() as group:

                        async def prompt() -> None:
                            stopped.append((await session.prompt("hang")).stop_reason)

                        stopped: list[str] = []
                        group.start_soon(prompt)
                        await started.wait()
                        await session.cancel()
                        # The cancel reaches the tool in the client's process: it unwinds.
                        await ended.wait()
        finally:
            await runtime.aclose()
    assert stopped == ["cancelled"]


class RecordingPolicy:
    """Answers every permission question by ``allow``, recording the titles asked about."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.asked: list[str] = []

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        self.asked.append(context.title)
        return await (AllowAll() if self.allow else DenyAll()).decide(context)


def counted_tools(calls: list[str]) -> MCPServer:
    """The client's tool ``shout``, recording each call that reaches it."""
    server = MCPServer("editor tools")

    @server.tool()
    async def shout(text: str) -> str:
        """Upper-case the text."""
        calls.append(text)
        return text.upper()

    return server


@pytest.mark.parametrize(
    ("mode", "allow", "offered", "asked", "ran"),
    [
        ("ask", True, False, False, False),  # not offered, and refused when called anyway
        ("code", False, True, True, False),  # asked first; refused: the client's tool never runs
        ("code", True, True, True, True),
        ("auto", False, True, False, True),  # auto never asks
    ],
)
async def test_tools_the_client_hosts_ask_permission_like_other_tools(
    project: Path, mode: str, allow: bool, offered: bool, asked: bool, ran: bool
) -> None:
    calls: list[str] = []
    policy = RecordingPolicy(allow)
    with FakeOpenAIServer(tool_call("editor_tools_shout", {"text": "hi"})) as model:
        config = CoderConfig(models=("openai:fake-model",), base_url=model.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            with anyio.fail_after(TIMEOUT), warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                async with connect(
                    runtime,
                    cwd=project,
                    mcp_servers=[counted_tools(calls)],
                    permission_policy=policy,
                ) as connection:
                    session = await connection.new_session(project)
                    if mode != "code":
                        await session.set_mode(mode)
                    result = await session.prompt("shout hi")
        finally:
            await runtime.aclose()
        first, second = model.requests
    assert result.stop_reason == "end_turn"
    assert ("editor_tools_shout" in tool_names(first)) is offered
    assert bool(policy.asked) is asked
    if asked:
        assert len(policy.asked) == 1 and "shout" in policy.asked[0]
    assert calls == (["hi"] if ran else [])
    assert (last_message(second) == "HI") is ran

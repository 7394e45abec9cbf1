"""MCP servers of a transport the agent did not advertise are refused by the runtime (-32602).

``mcpCapabilities`` come from the engine (:class:`~accord.engines.EngineCapabilities`); every
session method that takes MCP servers (new, load, resume, fork) refuses the others before
anything happens, naming them and the transports the agent takes. Stdio is always taken.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from _agent_support import CWD, serve
from helpers.timeouts import TIMEOUT

from accord.engines import EngineCapabilities
from accord.errors import RequestError
from accord.schema import (
    ForkSessionRequest,
    LoadSessionRequest,
    ResumeSessionRequest,
)
from accord.testing import ScriptedEngine

pytestmark = pytest.mark.anyio

HTTP = {"type": "http", "name": "remote", "url": "https://mcp.example/mcp", "headers": []}
SSE = {"type": "sse", "name": "legacy", "url": "https://mcp.example/sse", "headers": []}
STDIO = {"name": "local", "command": "/bin/true", "args": [], "env": []}


async def test_every_session_method_refuses_an_unadvertised_transport() -> None:
    async with serve(ScriptedEngine()) as h:  # advertises no mcpCapabilities at all
        session_id = await h.new_session(mcpServers=[STDIO])
        refusals: list[RequestError] = []
        calls: list[Callable[[], Awaitable[Any]]] = [
            lambda: h.new_session(mcpServers=[STDIO, HTTP]),
            lambda: h.conn.load_session(
                LoadSessionRequest.model_validate(
                    {"sessionId": session_id, "cwd": CWD, "mcpServers": [HTTP]}
                )
            ),
            lambda: h.conn.resume_session(
                ResumeSessionRequest.model_validate(
                    {"sessionId": session_id, "cwd": CWD, "mcpServers": [SSE]}
                )
            ),
            lambda: h.conn.fork_session(
                ForkSessionRequest.model_validate(
                    {"sessionId": session_id, "cwd": CWD, "mcpServers": [HTTP, SSE]}
                )
            ),
        ]
        for call in calls:
            with anyio.fail_after(TIMEOUT), pytest.raises(RequestError) as caught:
                await call()
            refusals.append(caught.value)
        live = h.runtime.statistics().live_sessions
    assert [r.code for r in refusals] == [-32602] * 4
    assert [[s["name"] for s in (r.data or {})["mcpServers"]] for r in refusals] == [
        ["remote"],
        ["remote"],
        ["legacy"],
        ["remote", "legacy"],
    ]
    assert all((r.data or {})["supported"] == ["stdio"] for r in refusals)
    assert "MCP server 'remote' (http): this agent does not support" in refusals[0].message
    assert "MCP servers 'remote' (http), 'legacy' (sse)" in refusals[3].message
    assert live == 1  # no session was made by the refused requests


async def test_an_advertised_transport_is_taken() -> None:
    engine = ScriptedEngine(capabilities=EngineCapabilities(mcp_http=True))
    async with serve(engine) as h:
        session_id = await h.new_session(mcpServers=[HTTP, STDIO])
    assert session_id
    (opened,) = engine.sessions
    assert [s.name for s in opened.context.mcp_servers] == ["remote", "local"]

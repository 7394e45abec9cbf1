"""Which MCP servers a session request may name: the agent's ``mcpCapabilities`` decide.

Every agent takes stdio servers; ``http``, ``sse`` and (unstable) ``acp`` servers only when
it advertised ``mcpCapabilities.http`` / ``.sse`` / ``.acp``. Both runtimes use
:func:`unadvertised_mcp_servers` on ``session/new``, ``load``, ``resume`` and ``fork``: the
agent runtime refuses such a request (-32602, :func:`mcp_refusal`), the client runtime
refuses to send it (:class:`~accord.errors.LocalProtocolError`), each naming the servers and
what the agent takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..schema import AcpMcpServer, HttpMcpServer, McpServer, SseMcpServer
from ._capabilities import is_advertised

__all__ = ("mcp_refusal", "mcp_transport", "supported_mcp_transports", "unadvertised_mcp_servers")

_GATED = ("http", "sse", "acp")


def mcp_transport(server: McpServer) -> str:
    """The server's transport: ``stdio``, ``http``, ``sse`` or ``acp``."""
    if isinstance(server, HttpMcpServer):
        return "http"
    if isinstance(server, SseMcpServer):
        return "sse"
    if isinstance(server, AcpMcpServer):
        return "acp"
    return "stdio"


def supported_mcp_transports(agent_capabilities: Mapping[str, Any] | None) -> list[str]:
    """The transports an agent takes, given its ``agentCapabilities`` (wire form)."""
    return ["stdio"] + [
        name for name in _GATED if is_advertised(agent_capabilities, ("mcpCapabilities", name))
    ]


def unadvertised_mcp_servers(
    servers: Iterable[McpServer], agent_capabilities: Mapping[str, Any] | None
) -> list[tuple[str, str]]:
    """``(name, transport)`` of each server whose transport the agent did not advertise."""
    supported = supported_mcp_transports(agent_capabilities)
    return [
        (server.name, transport)
        for server in servers
        if (transport := mcp_transport(server)) not in supported
    ]


def mcp_refusal(
    refused: list[tuple[str, str]], agent_capabilities: Mapping[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """The message and ``data`` refusing ``refused`` (see :func:`unadvertised_mcp_servers`)."""
    supported = supported_mcp_transports(agent_capabilities)
    named = ", ".join(f"{name!r} ({transport})" for name, transport in refused)
    message = (
        f"MCP server{'s' if len(refused) > 1 else ''} {named}: this agent does not support "
        f"the transport (mcpCapabilities does not advertise it); it takes "
        f"{', '.join(supported)} servers"
    )
    data: dict[str, Any] = {
        "reason": "mcp_transport_not_supported",
        "mcpServers": [{"name": name, "type": transport} for name, transport in refused],
        "supported": supported,
    }
    return message, data

"""The session's MCP servers: connected when the session opens, their tools offered.

``session/new`` (and ``load``, ``resume``, ``fork``) may name MCP servers. :class:`McpServers`
turns each into a pydantic-ai ``MCPToolset`` (on the FastMCP client) and connects them all,
concurrently, each within :func:`connect_timeout` seconds (``ACCORD_MCP_CONNECT_TIMEOUT``,
default :data:`CONNECT_TIMEOUT_SECONDS`; the same bound is pydantic-ai's ``init_timeout``, whose
own default of 5 s a server started on a busy machine missed):

* stdio servers (always supported): the command with its arguments and environment, started
  in the session's ``cwd``;
* HTTP servers (advertised as ``mcpCapabilities.http``): streamable HTTP with the given headers;
* ACP servers (advertised as ``mcpCapabilities.acp``, unstable ACP): hosted by the client that
  opened the session and reached over its ACP connection (``mcp/message``,
  :mod:`._acp_mcp`), no process or socket of their own.

SSE servers are not advertised, so the runtime refuses a session request that names one
(-32602, :func:`accord.roles.unadvertised_mcp_servers`); given one directly (or an ``acp``
server with no connection to reach it), :class:`McpServers` skips it with a warning. A server
that fails to start or answer is skipped too: the session opens without its tools rather than
not at all (the log says why; header and environment values are never logged). Each server's
tools
are offered under the server's name as a prefix (``github_create_issue``), sanitised to what
model APIs accept. They count as *external* tools for the modes: hidden in ``ask``, asking
permission in ``code``.

The connections live as long as the engine session (closed by :meth:`McpServers.aclose`).
FastMCP is imported only when a session actually has servers (it takes over a second).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import anyio
from pydantic_ai.toolsets import AbstractToolset

from ..engines import McpOverAcp
from ..schema import AcpMcpServer, HttpMcpServer, McpServer, McpServerStdio

__all__ = (
    "CLOSE_TIMEOUT_SECONDS",
    "CONNECT_TIMEOUT_ENV",
    "CONNECT_TIMEOUT_SECONDS",
    "McpServers",
    "connect_timeout",
    "tool_prefix",
)

_log = logging.getLogger("accord.coder")

CONNECT_TIMEOUT_SECONDS: Final = 30.0
"""How long one server may take to start and list its tools (``npx`` may download first)."""

CONNECT_TIMEOUT_ENV: Final = "ACCORD_MCP_CONNECT_TIMEOUT"
"""The environment variable that sets the bound on starting one server, in seconds."""

CLOSE_TIMEOUT_SECONDS: Final = 5.0
"""Bound on closing one server's connection (shielded)."""

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]+")


def connect_timeout(environ: Mapping[str, str] | None = None) -> float:
    """Seconds one server may take to start and list its tools: ``ACCORD_MCP_CONNECT_TIMEOUT``
    (a positive number) if set, else :data:`CONNECT_TIMEOUT_SECONDS`.

    Raises:
        ValueError: the variable is set but is not a positive number.
    """
    raw = (os.environ if environ is None else environ).get(CONNECT_TIMEOUT_ENV, "").strip()
    if not raw:
        return CONNECT_TIMEOUT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{CONNECT_TIMEOUT_ENV} must be a positive number of seconds, not {raw!r}")
    return seconds


def tool_prefix(name: str, taken: set[str]) -> str:
    """A tool-name prefix for server ``name``: safe for model APIs, unique among ``taken``."""
    base = _UNSAFE.sub("_", name).strip("_") or "mcp"
    prefix, number = base, 2
    while prefix in taken:
        prefix = f"{base}_{number}"
        number += 1
    taken.add(prefix)
    return prefix


def _toolset(server: McpServer, cwd: str, channel: McpOverAcp | None, timeout: float) -> Any | None:
    from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
    from pydantic_ai.mcp import MCPToolset

    if isinstance(server, McpServerStdio):
        transport: Any = StdioTransport(
            command=server.command,
            args=list(server.args),
            env={variable.name: variable.value for variable in server.env} or None,
            cwd=cwd,
        )
    elif isinstance(server, HttpMcpServer):
        headers = {header.name: header.value for header in server.headers}
        transport = StreamableHttpTransport(server.url, headers=headers or None)
    elif isinstance(server, AcpMcpServer) and channel is not None:
        from ._acp_mcp import AcpMcpTransport

        transport = AcpMcpTransport(channel, server.server_id, server.name)
    else:
        _log.warning(
            "MCP server %r: transport %r is not supported; skipped",
            server.name,
            getattr(server, "type", "?"),
        )
        return None
    return MCPToolset(transport, id=server.name, init_timeout=timeout)


class McpServers:
    """The MCP servers of one engine session (module docstring).

    Args:
        servers: The servers the client named.
        cwd: The session's working directory (stdio servers start there).
        channel: Reaches the ``acp`` servers (their client's connection); ``None`` skips them.
    """

    def __init__(
        self, servers: Sequence[McpServer], cwd: str, channel: McpOverAcp | None = None
    ) -> None:
        """Remember the servers; :meth:`open` connects them."""
        self._servers = tuple(servers)
        self._cwd = cwd
        #: Seconds each server may take to start and list its tools (:func:`connect_timeout`).
        self.connect_timeout = connect_timeout()
        self._channel = channel
        self._open: list[tuple[str, Any]] = []
        self.toolsets: list[AbstractToolset[Any]] = []
        """The connected servers' toolsets, prefixed, for the agent."""
        self.failed: dict[str, str] = {}
        """Servers that could not be used, by name, with the reason."""

    async def open(self) -> None:
        """Connect every server, concurrently; failures are logged and skipped."""
        if not self._servers:
            return
        taken: set[str] = set()
        pending: list[tuple[str, str, Any]] = []
        for server in self._servers:
            toolset = _toolset(server, self._cwd, self._channel, self.connect_timeout)
            if toolset is None:
                self.failed[server.name] = "unsupported transport"
                continue
            pending.append((server.name, tool_prefix(server.name, taken), toolset))
        connected: list[tuple[str, str, Any] | None] = [None] * len(pending)

        async def connect(index: int) -> None:
            name, prefix, toolset = pending[index]
            try:
                with anyio.fail_after(self.connect_timeout):
                    await toolset.__aenter__()
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                self.failed[name] = reason
                _log.warning("MCP server %r could not be connected (%s); skipped", name, reason)
                return
            connected[index] = (name, prefix, toolset)

        async with anyio.create_task_group() as group:
            for index in range(len(pending)):
                group.start_soon(connect, index)
        for entry in connected:
            if entry is not None:
                name, prefix, toolset = entry
                self._open.append((name, toolset))
                self.toolsets.append(toolset.prefixed(prefix))

    async def aclose(self) -> None:
        """Close every connection (shielded, each bounded)."""
        opened, self._open = self._open, []
        self.toolsets = []
        for name, toolset in reversed(opened):
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_SECONDS):
                try:
                    await toolset.__aexit__(None, None, None)
                except Exception:
                    _log.warning("closing MCP server %r failed", name, exc_info=True)

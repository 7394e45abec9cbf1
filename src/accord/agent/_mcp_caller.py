"""MCP over ACP from the agent: inner MCP requests to the ``acp`` servers a client hosts.

A client may name MCP servers it hosts itself (``{"type": "acp", "name", "serverId"}``) in
``session/new`` (``load``, ``resume``, ``fork``) once the agent advertised
``mcpCapabilities.acp``. Each connection's :class:`~._links.ClientLink` has one
:class:`AcpMcpCaller` (its requests in flight, and the ``serverId`` values its client named);
the engine gets an :class:`AcpMcpRouter` as :attr:`SessionContext.mcp_over_acp
<accord.engines.SessionContext.mcp_over_acp>`, which sends each request on the connection of an
attached client that named the server (the one whose prompt runs the turn first, then the
others in the order they attached): the servers are that client's, another client attached to
the session does not host them. A client that reconnects and resumes the session (naming the
servers again, or leaving the stored ones) is that client again: the engine's servers work on
over the new connection.

Each inner request is one ``mcp/message`` request (``serverId``, ``requestId``, ``method``,
``params``; the pinned schema's binding); the client's ``mcp/message`` notifications for an
active ``(serverId, requestId)`` reach the handler the request registered and are dropped once
it is answered (or for a pair never active). Cancelling the caller sends ``$/cancel_request``
(the JSON-RPC layer does). With no such client attached, or when it goes during a call, the
call fails with :class:`~accord.errors.ConnectionClosed` naming the server.

Below: :mod:`accord.roles` (the connection). Above: the runtime (which routes the incoming
notifications here) and the engine (through the engine protocol's :class:`McpOverAcp`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import ConnectionClosed, LocalProtocolError
from ..schema import (
    AcpMcpServer,
    McpServer,
    MessageMcpNotification,
    MessageMcpRequest,
    MessageMcpResponse,
)

if TYPE_CHECKING:
    from ..engines import McpNotificationHandler
    from ..roles import AgentSideConnection

__all__ = ("AcpMcpCaller", "AcpMcpRouter")

logger = logging.getLogger("accord.agent")


async def _ignore(method: str, params: dict[str, Any] | None) -> None:
    """The handler of a request that registered none."""


class AcpMcpCaller:
    """Sends inner MCP requests to one client's ``acp`` servers (module docstring).

    Args:
        connection: The client's connection.
    """

    __slots__ = ("_active", "_connection", "declared")

    def __init__(self, connection: AgentSideConnection) -> None:
        """Bind to ``connection``."""
        self._connection = connection
        self._active: dict[tuple[str, str], McpNotificationHandler] = {}
        #: The ``serverId`` of every ``acp`` server this client named for a session.
        self.declared: set[str] = set()

    @property
    def closed(self) -> bool:
        """Whether the client is gone."""
        return self._connection.closed

    def declare(self, servers: Iterable[McpServer]) -> None:
        """Record the ``acp`` servers among ``servers`` as this client's."""
        self.declared.update(s.server_id for s in servers if isinstance(s, AcpMcpServer))

    async def request(
        self,
        server_id: str,
        request_id: str,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        on_notification: McpNotificationHandler | None = None,
    ) -> MessageMcpResponse:
        """Send one inner request and return its outcome (see ``McpOverAcp.request``).

        Raises:
            ConnectionClosed: the client is gone (before or during the call).
            RequestError: the client failed the binding (-33001: no such server).
            LocalProtocolError: ``(server_id, request_id)`` is already active.
        """
        if self._connection.closed:
            raise ConnectionClosed(
                f"the client that hosts MCP server {server_id!r} has disconnected"
            )
        key = (server_id, request_id)
        if key in self._active:
            raise LocalProtocolError(
                f"MCP request {request_id!r} is already active on server {server_id!r}"
            )
        self._active[key] = on_notification or _ignore
        try:
            return await self._connection.mcp_message(
                MessageMcpRequest(
                    server_id=server_id, request_id=request_id, method=method, params=params
                )
            )
        except ConnectionClosed as exc:
            raise ConnectionClosed(
                f"the client that hosts MCP server {server_id!r} disconnected during {method}"
            ) from exc
        finally:
            del self._active[key]

    async def deliver(self, notification: MessageMcpNotification) -> None:
        """Hand a client's ``mcp/message`` notification to its active request, if any."""
        handler = self._active.get((notification.server_id, notification.request_id))
        if handler is None:
            logger.debug(
                "mcp/message notification %s for no active request (%r, %r) dropped",
                notification.method,
                notification.server_id,
                notification.request_id,
            )
            return
        await handler(notification.method, notification.params)


class AcpMcpRouter:
    """One session's way to its ``acp`` servers: the caller of a client that named them.

    Args:
        servers: The session's MCP servers (its ``acp`` ones are the only ones it reaches).
        callers: Returns the callers of the session's clients in order of preference (the
            prompting client first, then the attached ones in the order they attached).
    """

    __slots__ = ("_callers", "_servers")

    def __init__(
        self, servers: Iterable[McpServer], callers: Callable[[], Iterable[AcpMcpCaller]]
    ) -> None:
        """Create the router; see the class docstring for the arguments."""
        self._servers = frozenset(s.server_id for s in servers if isinstance(s, AcpMcpServer))
        self._callers = callers

    async def request(
        self,
        server_id: str,
        request_id: str,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        on_notification: McpNotificationHandler | None = None,
    ) -> MessageMcpResponse:
        """Send the request through the first attached client that named ``server_id``.

        Raises:
            LocalProtocolError: the session names no ``acp`` server ``server_id`` (nothing
                is sent), or ``(server_id, request_id)`` is already active.
            ConnectionClosed: no client that named the server is attached (or it went during
                the call).
            RequestError: the client failed the binding (-33001: it hosts no such server).
        """
        if server_id not in self._servers:
            raise LocalProtocolError(
                f"the session names no acp MCP server {server_id!r}"
                f" (it has {', '.join(map(repr, sorted(self._servers))) or 'none'})"
            )
        for caller in self._callers():
            if server_id in caller.declared and not caller.closed:
                return await caller.request(
                    server_id, request_id, method, params, on_notification=on_notification
                )
        raise ConnectionClosed(f"the client that hosts MCP server {server_id!r} has disconnected")

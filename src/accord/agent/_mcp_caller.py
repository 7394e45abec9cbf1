"""MCP over ACP from the agent: inner MCP requests to the ``acp`` servers a client hosts.

A client may name MCP servers it hosts itself (``{"type": "acp", "name", "serverId"}``) in
``session/new`` (``load``, ``resume``, ``fork``) once the agent advertised
``mcpCapabilities.acp``. The runtime gives each connection's :class:`~._links.ClientLink` one
:class:`AcpMcpCaller`, handed to the engine as :attr:`SessionContext.mcp_over_acp
<accord.engines.SessionContext.mcp_over_acp>` of the sessions that client opens: the servers
are the declaring client's, so their requests go on its connection and nowhere else (another
client attached to the session does not host them).

Each inner request is one ``mcp/message`` request (``serverId``, ``requestId``, ``method``,
``params``; the pinned schema's binding); the client's ``mcp/message`` notifications for an
active ``(serverId, requestId)`` reach the handler the request registered and are dropped once
it is answered (or for a pair never active). Cancelling the caller sends ``$/cancel_request``
(the JSON-RPC layer does). A client that is gone, before or during a call, fails it with
:class:`~accord.errors.ConnectionClosed` naming the server.

Below: :mod:`accord.roles` (the connection). Above: the runtime (which routes the incoming
notifications here) and the engine (through the engine protocol's :class:`McpOverAcp`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import ConnectionClosed, LocalProtocolError
from ..schema import MessageMcpNotification, MessageMcpRequest, MessageMcpResponse

if TYPE_CHECKING:
    from ..engines import McpNotificationHandler
    from ..roles import AgentSideConnection

__all__ = ("AcpMcpCaller",)

logger = logging.getLogger("accord.agent")


async def _ignore(method: str, params: dict[str, Any] | None) -> None:
    """The handler of a request that registered none."""


class AcpMcpCaller:
    """Sends inner MCP requests to one client's ``acp`` servers (module docstring).

    Args:
        connection: The client's connection.
    """

    __slots__ = ("_active", "_connection")

    def __init__(self, connection: AgentSideConnection) -> None:
        """Bind to ``connection``."""
        self._connection = connection
        self._active: dict[tuple[str, str], McpNotificationHandler] = {}

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

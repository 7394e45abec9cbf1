"""MCP servers hosted by the client and offered to the agent over ACP (``mcp/message``).

``connect(agent, mcp_servers=[...])`` takes servers of the official MCP Python SDK (the ``mcp``
package: a high-level ``mcp.server.mcpserver.MCPServer`` or a low-level
``mcp.server.lowlevel.Server``). :class:`McpHost` gives each an opaque ``serverId``, declares it
to the agent as an ``acp`` MCP server (:attr:`McpHost.declarations`, added to every session this
connection opens) and answers the agent's ``mcp/message`` requests with it, in process: no
subprocess, no socket.

The binding is the one of the pinned schema (``@agentclientprotocol/sdk`` 2.4.0): each
``mcp/message`` carries one inner MCP request (``serverId``, ``requestId``, ``method``,
``params``) of the stateless MCP revision 2026-07-28 (every request carries its protocol
version and client capabilities in ``params._meta``; no ``initialize``), and its answer is the
inner outcome, ``{"result": ...}`` or ``{"error": {...}}``. Notifications the server sends
while it handles a request (progress, log messages) go to the agent as ``mcp/message``
notifications naming the same ``serverId`` and ``requestId``; none are sent once the request is
answered. Outer ACP errors are kept for failures of the binding itself, with the codes the
TypeScript SDK uses: -32602 for a duplicate active ``(serverId, requestId)``, -33001 for a
``serverId`` this connection does not host. A malformed inner request (no envelope, an
unsupported protocol version, unknown method, bad params) is the server's to refuse: it gets an
inner MCP error, as it would over HTTP. The agent cancelling the request
(``$/cancel_request``) cancels the handler.

Each server's lifespan is entered when the connection opens and left when it closes.

Above: :func:`accord.client.connect` and the client class (:mod:`._handlers`). Below: the
``mcp`` package's per-request kernel (``mcp.server.runner.serve_one``).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self, cast

import anyio

from ..errors import InvalidParams, RequestError
from ..schema import (
    AcpMcpServer,
    McpError,
    MessageMcpNotification,
    MessageMcpRequest,
    MessageMcpResponse,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.shared.dispatcher import CallOptions
    from mcp.shared.message import MessageMetadata
    from mcp.shared.transport_context import TransportContext

__all__ = ("SERVER_UNAVAILABLE", "McpHost")

SERVER_UNAVAILABLE: Final = -33001
"""Outer error code: no server of this ``serverId`` is hosted on the connection."""

Notify = Callable[[MessageMcpNotification], Awaitable[None]]
"""Sends one ``mcp/message`` notification to the agent."""


def _lowlevel(server: object) -> Server[Any]:
    """The low-level ``Server`` behind ``server`` (an ``MCPServer`` keeps one inside)."""
    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer

    if isinstance(server, Server):
        return cast("Server[Any]", server)
    if isinstance(server, MCPServer):
        # The SDK has no public accessor; its own transports and FastMCP read this attribute.
        inner = getattr(server, "_lowlevel_server")  # noqa: B009  # pyright: ignore[reportUnknownArgumentType]
        return cast("Server[Any]", inner)
    raise TypeError(
        "mcp_servers takes MCP servers of the mcp package (mcp.server.mcpserver.MCPServer or "
        f"mcp.server.lowlevel.Server), not {type(server).__name__}"
    )


@dataclass(frozen=True, slots=True)
class _Hosted:
    name: str
    server_id: str
    server: Server[Any]
    lifespan_state: Any = None


@dataclass(slots=True)
class _RequestContext:
    """The ``mcp`` kernel's ``DispatchContext`` for one ``mcp/message`` request.

    There is no back channel (the 2026-07-28 revision has no server-to-client requests);
    notifications go to the agent as ``mcp/message`` notifications while the request is active.
    """

    transport: TransportContext
    request_id: str
    server_id: str
    send: Notify
    progress_token: str | int | None = None
    message_metadata: MessageMetadata = None
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    active: bool = True

    @property
    def can_send_request(self) -> bool:
        """Never: the server cannot ask the agent anything."""
        return False

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        """Refused: the 2026-07-28 revision has no server-to-client requests."""
        from mcp.shared.exceptions import NoBackChannelError

        raise NoBackChannelError(method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        """Send ``method`` to the agent, scoped to this request (dropped once answered)."""
        if not self.active:
            return
        await self.send(
            MessageMcpNotification(
                server_id=self.server_id,
                request_id=self.request_id,
                method=method,
                params=dict(params) if params is not None else None,
            )
        )

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress, when the agent's request carried a progress token."""
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)


class McpHost:
    """The MCP servers one client connection hosts (module docstring).

    Args:
        servers: ``MCPServer`` or low-level ``Server`` objects of the ``mcp`` package.

    Raises:
        TypeError: a server is not an MCP server of the ``mcp`` package.
        ImportError: the ``mcp`` package is not installed (``pip install "accord[mcp]"``).
    """

    def __init__(self, servers: Sequence[object]) -> None:
        """Give each server its ``serverId``; entering the host starts their lifespans."""
        try:
            import mcp.server.runner  # noqa: F401  # pyright: ignore[reportUnusedImport]
        except ImportError as exc:  # pragma: no cover - the dev environment has it
            raise ImportError(
                'hosting MCP servers needs the mcp package: pip install "accord[mcp]"'
            ) from exc
        self._pending = [(_lowlevel(server), server) for server in servers]
        self._hosted: dict[str, _Hosted] = {}
        self._active: set[tuple[str, str]] = set()
        self._stack = AsyncExitStack()
        self._send: Notify | None = None

    def attach(self, send: Notify) -> None:
        """Send the servers' notifications with ``send`` (the connection's ``mcp/message``)."""
        self._send = send

    async def __aenter__(self) -> Self:
        """Enter every server's lifespan."""
        await self._stack.__aenter__()
        try:
            for lowlevel, _ in self._pending:
                state = await self._stack.enter_async_context(lowlevel.lifespan(lowlevel))
                name = lowlevel.name or "mcp"
                server_id = f"{name}-{uuid.uuid4().hex}"
                self._hosted[server_id] = _Hosted(name, server_id, lowlevel, state)
        except BaseException:
            await self._stack.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Leave the lifespans; the servers answer nothing after this."""
        self._hosted.clear()
        with anyio.CancelScope(shield=True):
            await self._stack.__aexit__(exc_type, exc, tb)

    @property
    def declarations(self) -> list[AcpMcpServer]:
        """The servers as ``session/new`` names them: ``{"type": "acp", name, serverId}``."""
        return [
            AcpMcpServer(name=hosted.name, server_id=hosted.server_id)
            for hosted in self._hosted.values()
        ]

    async def handle(self, request: MessageMcpRequest) -> MessageMcpResponse:
        """Answer one ``mcp/message`` request with the inner MCP outcome.

        Raises:
            RequestError: -33001, no hosted server has ``serverId``.
            InvalidParams: the ``(serverId, requestId)`` pair is already active.
        """
        hosted = self._hosted.get(request.server_id)
        if hosted is None:
            raise RequestError(
                f"no MCP server {request.server_id!r} is hosted on this connection",
                {"serverId": request.server_id, "reason": "mcp_server_unavailable"},
                code=SERVER_UNAVAILABLE,
            )
        key = (request.server_id, request.request_id)
        if key in self._active:
            raise InvalidParams(
                f"MCP request {request.request_id!r} is already active on server "
                f"{request.server_id!r}",
                {"serverId": request.server_id, "requestId": request.request_id},
            )
        assert self._send is not None, "attach() the connection first"
        self._active.add(key)
        try:
            return await _serve(hosted, request, self._send)
        finally:
            self._active.discard(key)


async def _serve(hosted: _Hosted, request: MessageMcpRequest, send: Notify) -> MessageMcpResponse:
    from mcp.server.connection import Connection
    from mcp.server.runner import modern_error_data, serve_one
    from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
    from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
    from mcp.shared.transport_context import TransportContext

    params = request.params
    route = classify_inbound_request({"method": request.method, "params": params})
    if isinstance(route, InboundLadderRejection):
        return _error(route.code, route.message, route.data)
    context = _RequestContext(
        transport=TransportContext(kind="acp", can_send_request=False),
        request_id=request.request_id,
        server_id=hosted.server_id,
        send=send,
        progress_token=progress_token_from_params(params),
    )
    connection = Connection.from_envelope(
        route.protocol_version, route.client_info, route.client_capabilities
    )
    try:
        result = await serve_one(
            hosted.server,
            context,
            request.method,
            params,
            connection=connection,
            lifespan_state=hosted.lifespan_state,
        )
    except Exception as exc:
        error = modern_error_data(exc)
        return _error(error.code, error.message, error.data)
    finally:
        context.active = False
    return MessageMcpResponse(result=result)


def _error(code: int, message: str, data: Any) -> MessageMcpResponse:
    error = (
        McpError(code=code, message=message)
        if data is None
        else McpError(code=code, message=message, data=data)
    )
    return MessageMcpResponse(error=error)

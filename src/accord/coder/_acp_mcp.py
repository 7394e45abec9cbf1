"""A FastMCP client transport that reaches an ``acp`` MCP server over the ACP connection.

The coder's MCP toolsets are pydantic-ai ``MCPToolset`` objects on the FastMCP client, which
speaks to a server through a *transport* yielding an ``mcp`` ``ClientSession``.
:class:`AcpMcpTransport` gives that session a pair of in-memory streams and relays what it
writes: each JSON-RPC request becomes one inner request on
:attr:`SessionContext.mcp_over_acp <accord.engines.SessionContext.mcp_over_acp>` (an
``mcp/message`` request to the client that hosts the server; ``requestId`` is the inner
request's id as a string), and its outcome comes back as the JSON-RPC response of the same id.
The client's ``mcp/message`` notifications for the request are written to the session as MCP
notifications (progress reaches its callback). The FastMCP client negotiates the stateless MCP
revision 2026-07-28 (``server/discover``) and puts the per-request envelope in every request's
``params._meta``, as the binding requires.

What does not cross: ``notifications/cancelled`` from the session cancels the outer request
instead (``$/cancel_request``); other client-to-server notifications have no form in the
binding and are dropped. A binding failure (the client hosts no such server, is gone, or
answers something that is neither a result object nor an error) is answered to the session as a
JSON-RPC error, so the tool call fails with that message rather than hanging.

Above: :mod:`._mcp` (the session's MCP servers). Below: the engine protocol's ``McpOverAcp``,
FastMCP and ``mcp``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any, Final, cast

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from fastmcp.client.transports.base import ClientTransport, SessionKwargs, TransportOptions
from mcp import ClientSession
from mcp.shared.message import SessionMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from typing_extensions import Unpack

from ..engines import McpOverAcp
from ..errors import RequestError, TransportError

__all__ = ("AcpMcpTransport",)

_log = logging.getLogger("accord.coder")

_BUFFER: Final = 64
"""Messages the session may have unread before a notification for it is dropped."""

_BINDING_FAILED: Final = -33002
"""Inner error code for an outcome the client answered without a valid MCP result or error
(the code the TypeScript SDK's binding uses for a failed backend)."""

_GONE: Final = -32000
"""Inner error code when the client hosting the server is gone."""


class AcpMcpTransport(ClientTransport):
    """Connects a FastMCP client to the ``acp`` server ``server_id`` (module docstring).

    Args:
        channel: The session's channel to its client's ``acp`` servers.
        server_id: The server's ``serverId``.
        name: The server's name (for messages).
    """

    def __init__(self, channel: McpOverAcp, server_id: str, name: str) -> None:
        """Remember where the server is; :meth:`connect_session` relays to it."""
        self._channel = channel
        self._server_id = server_id
        self._name = name

    def __repr__(self) -> str:
        return f"<AcpMcpTransport(server={self._name!r})>"

    @contextlib.asynccontextmanager
    async def connect_session(
        self,
        *,
        transport_options: TransportOptions | None = None,
        **session_kwargs: Unpack[SessionKwargs],
    ) -> AsyncGenerator[ClientSession]:
        """Yield a session whose requests travel as ``mcp/message`` (module docstring)."""
        options = transport_options or TransportOptions()
        to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](
            _BUFFER
        )
        session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](_BUFFER)
        async with (
            to_session,
            session_reads,
            session_writes,
            from_session,
            anyio.create_task_group() as group,
        ):
            relay = _Relay(self._channel, self._server_id, self._name, to_session, group)
            group.start_soon(relay.run, from_session)
            try:
                async with options.session_class(
                    read_stream=session_reads, write_stream=session_writes, **session_kwargs
                ) as session:
                    yield session
            finally:
                group.cancel_scope.cancel()


class _Relay:
    """Relays one session's messages to the channel and the answers back."""

    def __init__(
        self,
        channel: McpOverAcp,
        server_id: str,
        name: str,
        to_session: MemoryObjectSendStream[SessionMessage | Exception],
        group: TaskGroup,
    ) -> None:
        self._channel = channel
        self._server_id = server_id
        self._name = name
        self._to_session = to_session
        self._group = group
        self._calls: dict[str, anyio.CancelScope] = {}

    async def run(self, from_session: Any) -> None:
        """Read what the session writes until it closes."""
        async for item in from_session:
            message = item.message
            if isinstance(message, JSONRPCRequest):
                scope = anyio.CancelScope()
                self._calls[str(message.id)] = scope
                self._group.start_soon(self._forward, message, scope)
            elif isinstance(message, JSONRPCNotification):
                self._notified(message)
            else:  # an answer to a server request: the 2026-07-28 revision has none
                _log.debug("MCP server %r: %s from the session dropped", self._name, message)

    def _notified(self, message: JSONRPCNotification) -> None:
        if message.method == "notifications/cancelled":
            scope = self._calls.get(str((message.params or {}).get("requestId")))
            if scope is not None:
                scope.cancel()
            return
        _log.debug("MCP server %r: notification %s not sent", self._name, message.method)

    async def _forward(self, message: JSONRPCRequest, scope: anyio.CancelScope) -> None:
        request_id = str(message.id)
        try:
            with scope:
                reply = await self._call(message)
                await self._to_session.send(SessionMessage(reply))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session closed first
        finally:
            self._calls.pop(request_id, None)

    async def _call(self, message: JSONRPCRequest) -> JSONRPCResponse | JSONRPCError:
        try:
            outcome = await self._channel.request(
                self._server_id,
                str(message.id),
                message.method,
                message.params,
                on_notification=self._notification,
            )
        except RequestError as exc:
            return _error(message.id, exc.code, f"MCP server {self._name!r}: {exc.message}")
        except TransportError as exc:
            return _error(message.id, _GONE, f"MCP server {self._name!r}: {exc}")
        if "result" in outcome.model_fields_set:
            result: object = outcome.result
            if isinstance(result, dict):
                fields = cast("dict[str, Any]", result)
                return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=fields)
            return _error(
                message.id,
                _BINDING_FAILED,
                f"MCP server {self._name!r} answered {message.method} with a result that is "
                "not an object",
            )
        if outcome.error is not None:
            error = outcome.error
            return JSONRPCError(
                jsonrpc="2.0",
                id=message.id,
                error=ErrorData(code=error.code, message=error.message, data=error.data),
            )
        return _error(
            message.id,
            _BINDING_FAILED,
            f"MCP server {self._name!r} answered {message.method} with neither a result nor "
            "an error",
        )

    async def _notification(self, method: str, params: dict[str, Any] | None) -> None:
        notification = JSONRPCNotification(jsonrpc="2.0", method=method, params=params)
        try:
            self._to_session.send_nowait(SessionMessage(notification))
        except anyio.WouldBlock:
            _log.warning("MCP server %r: notification %s dropped (unread)", self._name, method)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


def _error(request_id: RequestId, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))

"""The typed connection shared by both roles.

``RoleConnection`` sits on a JSON-RPC :class:`~accord.jsonrpc.Connection` and speaks ACP: it
dispatches incoming methods to a role object's typed handlers through the generated tables,
turns outgoing typed calls into wire messages, and refuses (locally) to send a request or a
notification that the peer did not advertise. What comes in is read strictly (no coercion of
``"1"`` to an integer or ``"true"`` to a boolean): a value of the wrong type is an error, or
its default where the schema marks the field ``x-deserialize-default-on-error``. W3C trace
context in an incoming request's ``_meta`` is current while its handler runs and is carried
onto the requests it sends (:mod:`._trace`).
``AgentSideConnection`` and ``ClientSideConnection`` specialise it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator

from ..errors import InvalidParams, LocalProtocolError, MethodNotFound, RemoteProtocolError
from ..jsonrpc import AnswerHook, Connection, ConnectionStatistics, validation_error_data
from ..schema import McpServer, WireModel
from ..schema.methods import MethodSpec
from ._capabilities import is_advertised, required_capability
from ._trace import TraceContext, use_trace, with_trace

if TYPE_CHECKING:
    from ..transports import Transport

__all__ = ("RoleConnection",)

logger = logging.getLogger("accord.roles")

#: The requests whose ``mcpServers`` the schema marks ``x-deserialize-skip-invalid-items``.
_MCP_SERVER_LISTS = frozenset({"session/new", "session/load", "session/resume"})
_MCP_SERVER: TypeAdapter[McpServer] = TypeAdapter(McpServer)
_MCP_SERVER_TYPES = frozenset({"stdio", "http", "sse", "acp"})
#: Where a response names the ``mcpServers`` items that were skipped (under ``_meta``).
SKIPPED_MCP_SERVERS_KEY = "skippedMcpServers"

Handler = Callable[[Any, Any], Awaitable[Any]]


class RoleConnection:
    """Shared machinery of the agent-side and client-side connections."""

    #: Which table the local role answers, and which the peer answers (set by subclasses).
    _local_methods: Mapping[str, MethodSpec]
    _peer_methods: Mapping[str, MethodSpec]
    _request_handlers: Mapping[str, Handler]
    _notification_handlers: Mapping[str, Handler]
    _local_side: str

    def __init__(self, role: Any, transport: Transport, **connection_options: Any) -> None:
        self._role = role
        self._implemented: set[str] = set()
        self._peer_capabilities: dict[str, Any] | None = None
        self._connection = Connection(
            transport,
            on_request=self._on_request,
            on_notification=self._on_notification,
            name=f"{self._local_side} side",
            **connection_options,
        )

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        await self._connection.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._connection.__aexit__(exc_type, exc, tb)

    @property
    def connection(self) -> Connection:
        """The JSON-RPC connection underneath."""
        return self._connection

    @property
    def closed(self) -> bool:
        """Whether the peer has closed its side."""
        return self._connection.closed

    async def wait_closed(self) -> None:
        """Wait until the peer has closed and all work it started has finished."""
        await self._connection.wait_closed()

    def statistics(self) -> ConnectionStatistics:
        """Queue sizes of the underlying connection."""
        return self._connection.statistics()

    # ------------------------------------------------------------------ outgoing

    def _require_advertised(self, spec: MethodSpec, request: WireModel) -> None:
        path = required_capability(spec, request)
        if path is None:
            return
        if self._peer_capabilities is None:
            raise LocalProtocolError(
                f"cannot send {spec.method} before initialize: the peer's capabilities are "
                "not known yet"
            )
        if not is_advertised(self._peer_capabilities, path):
            raise LocalProtocolError(
                f"the peer did not advertise {'.'.join(path)}, so {spec.method} may not be sent"
            )

    async def _call(
        self, spec: MethodSpec, request: WireModel, on_answer: AnswerHook | None = None
    ) -> Any:
        self._require_advertised(spec, request)
        result = await self._connection.request(
            spec.method, with_trace(request.to_wire()), on_answer=on_answer
        )
        assert spec.result_type is not None
        try:
            return spec.result_type.model_validate({} if result is None else result, strict=True)
        except ValidationError as exc:
            raise RemoteProtocolError(
                f"the peer's answer to {spec.method} does not match the schema: "
                f"{validation_error_data(exc)}"
            ) from exc

    async def _notify(self, spec: MethodSpec, notification: WireModel) -> None:
        self._require_advertised(spec, notification)
        await self._connection.notify(spec.method, notification.to_wire())

    async def ext_request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send an extension request (its name must start with ``_``) and return the result.

        Raises:
            LocalProtocolError: the name does not start with ``_``.
            RequestError: the peer answered with an error (-32601 if it does not know it).
        """
        _check_extension_name(method)
        return await self._connection.request(method, params or {})

    async def ext_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send an extension notification (its name must start with ``_``)."""
        _check_extension_name(method)
        await self._connection.notify(method, params or {})

    # ------------------------------------------------------------------ incoming

    async def _on_request(self, method: str, params: Any) -> Any:
        spec = self._local_methods.get(method)
        if spec is None or spec.kind != "request":
            if method.startswith("_"):
                return await self._role.ext_method(method, _object_params(method, params))
            raise MethodNotFound(f"Method not found: {method}", {"method": method})
        if method not in self._implemented:
            raise MethodNotFound(
                f"Method not found: {method} is not offered by this {self._local_side}",
                {"method": method},
            )
        fields = _object_params(method, params)
        skipped: list[dict[str, Any]] = []
        if method in _MCP_SERVER_LISTS and isinstance(fields.get("mcpServers"), list):
            fields, skipped = _skip_invalid_mcp_servers(method, fields)
        request = spec.params_type.model_validate(fields, strict=True)
        # The handler, and the requests it sends, continue the caller's trace (if any).
        with use_trace(TraceContext.from_meta(fields.get("_meta"))):
            response = await self._request_handlers[method](self._role, request)
        result_type = spec.result_type
        assert result_type is not None  # every request has a result type
        if not isinstance(response, result_type):
            # A handler bug (a forgotten return, the wrong model): answer -32603 rather than
            # put a result of the wrong shape on the wire.
            raise TypeError(
                f"{spec.handler}() returned {type(response).__name__}, not {result_type.__name__}"
            )
        self._after_request(method, request, response)
        wire = response.to_wire()
        if skipped:
            meta = dict(wire.get("_meta") or {})
            accord = dict(meta.get("accord") or {})
            accord[SKIPPED_MCP_SERVERS_KEY] = skipped
            meta["accord"] = accord
            wire["_meta"] = meta
        return wire

    def _after_request(self, method: str, request: Any, response: Any) -> None:
        """Hook for subclasses (e.g. record capabilities exchanged in ``initialize``)."""

    async def _on_notification(self, method: str, params: Any) -> None:
        spec = self._local_methods.get(method)
        if spec is None or spec.kind != "notification":
            if method.startswith("_"):
                await self._role.ext_notification(
                    method, params if isinstance(params, dict) else {}
                )
            else:
                logger.debug("unknown notification %r ignored", method)
            return
        params_type = spec.params_type
        try:
            notification = params_type.model_validate(params or {}, strict=True)
        except ValidationError as exc:
            logger.warning(
                "notification %s with invalid params ignored: %s",
                method,
                validation_error_data(exc),
            )
            return
        # The model's validator is built now: from here on the connection validates and calls
        # the role's own bound method (named by the generated table) itself, the hot path of
        # session/update, without this method or model_validate's wrapper in between.
        validator = params_type.__pydantic_validator__
        if isinstance(validator, SchemaValidator):
            self._connection.add_notification_route(
                method,
                partial(validator.validate_python, strict=True),
                getattr(self._role, spec.handler),
            )
        await self._notification_handlers[method](self._role, notification)


def _skip_invalid_mcp_servers(
    method: str, fields: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``fields`` without its malformed ``mcpServers`` items, and what was skipped.

    The schema marks the list skip-invalid-items: one bad server (an unknown ``type``, stdio
    ``env`` as an object, a missing ``args``, ``env`` or ``headers``) must not fail the request,
    but the client must learn it was not used. Each skipped item is named by its ``index`` in
    the list, its ``name`` (when it has a string one) and the ``reason``; the response says them
    under ``_meta.accord.skippedMcpServers``.
    """
    kept: list[Any] = []
    skipped: list[dict[str, Any]] = []
    for index, item in enumerate(cast(list[Any], fields["mcpServers"])):
        try:
            _MCP_SERVER.validate_python(item, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"][1:]) or "(item)"
            reason = f"{where}: {first['msg']}"
            given = cast(dict[str, Any], item) if isinstance(item, dict) else {}
            tag = given.get("type")
            if isinstance(tag, str) and tag not in _MCP_SERVER_TYPES:
                reason = f"unknown type {tag[:40]!r}"
            entry: dict[str, Any] = {"index": index, "reason": reason}
            name: Any = given.get("name")
            if isinstance(name, str):
                entry["name"] = name
            skipped.append(entry)
            logger.info("%s: mcpServers[%d] skipped: %s", method, index, entry["reason"])
        else:
            kept.append(item)
    if not skipped:
        return fields, []
    return {**fields, "mcpServers": kept}, skipped


def _object_params(method: str, params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise InvalidParams(
            f"Invalid params for {method}: expected an object",
            {"errors": [{"field": "(params)", "problem": "expected an object"}]},
        )
    return cast(dict[str, Any], params)


def _check_extension_name(method: str) -> None:
    if not method.startswith("_"):
        raise LocalProtocolError(f"extension method names must start with '_': {method!r}")

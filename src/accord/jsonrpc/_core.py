"""The JSON-RPC 2.0 endpoint, with no I/O.

``Endpoint`` is the bookkeeping half of a connection: it allocates request ids, remembers which
requests are pending, classifies every incoming message into a typed event, and produces the
specification's error response for input that is not a valid JSON-RPC message. It never awaits,
reads no clock and knows nothing of ACP: methods are strings and params are plain JSON values.

The async ``Connection`` (``_connection.py``) pumps messages between a transport and this class.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from ..errors import InvalidRequest, RemoteProtocolError, RequestError
from ..transports import MalformedFrame

__all__ = (
    "Endpoint",
    "Incoming",
    "InvalidMessage",
    "NotificationReceived",
    "RequestId",
    "RequestReceived",
    "ResponseReceived",
    "StrayResponse",
    "describe_id",
    "is_request_id",
)

logger = logging.getLogger("accord.jsonrpc")

#: A JSON-RPC request id: an integer or a string (``null`` is tolerated on input).
RequestId: TypeAlias = int | str | None


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """The peer sent a request; it must be answered exactly once."""

    id: RequestId
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class NotificationReceived:
    """The peer sent a notification; it is never answered."""

    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """The peer answered one of our requests with a result (``error`` is None) or an error."""

    id: RequestId
    result: Any
    error: RequestError | None


@dataclass(frozen=True, slots=True)
class StrayResponse:
    """The peer sent a response for no pending request; it is logged, never answered."""

    message: Any


@dataclass(frozen=True, slots=True)
class InvalidMessage:
    """The peer sent something that is not a valid message; ``reply`` must be sent back."""

    reply: dict[str, Any]
    reason: str


Incoming: TypeAlias = (
    RequestReceived | NotificationReceived | ResponseReceived | StrayResponse | InvalidMessage
)


def _is_valid_id(value: Any) -> bool:
    return value is None or type(value) is str or type(value) is int


def is_request_id(value: Any) -> bool:
    """Whether ``value`` can name a request: an ``int`` or a ``str``, exactly.

    Anything else taken from the wire must not reach a dict or set keyed by request id: a
    list or an object does not hash, and ``true`` or ``1.0`` compare equal to the id ``1``.
    """
    return type(value) is int or type(value) is str


#: Most characters of a peer's id that a log line or an error message quotes.
ID_QUOTE_CHARS = 64


def describe_id(value: Any) -> str:
    """A short description of what the peer sent as an id, whatever its size.

    A peer chooses its ids: one may be a 1 MB string or an object nested 500 deep, so no
    log line or error message quotes one whole. Strings are quoted up to
    :data:`ID_QUOTE_CHARS` characters (with their length), containers are named, not shown.
    """
    if type(value) is str:
        if len(value) <= ID_QUOTE_CHARS:
            return repr(value)
        return f"{value[:ID_QUOTE_CHARS]!r}... ({len(value)} characters)"
    if isinstance(value, dict):
        return f"(an object of {len(cast(dict[Any, Any], value))} member(s))"
    if isinstance(value, list):
        return f"(an array of {len(cast(list[Any], value))} item(s))"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        # orjson reads a number with a fraction or an exponent, and an integer past 64 bits,
        # as a float: a JSON-RPC id that would not come back as the peer wrote it.
        return f"{value!r} (not an integer of at most 64 bits)"
    if value is None:
        return "null"
    return repr(value)[:ID_QUOTE_CHARS]


def error_response(id: RequestId, error: dict[str, Any]) -> dict[str, Any]:
    """Build a JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": id, "error": error}


class Endpoint:
    """One side of a JSON-RPC 2.0 conversation, as a plain state machine.

    Outgoing requests: :meth:`build_request` allocates an id and records it as pending.
    Incoming messages: :meth:`receive` classifies a parsed message (or a ``MalformedFrame``)
    and settles pending requests. Responses: :meth:`build_result` / :meth:`build_error`.
    """

    __slots__ = ("_abandoned", "_next_id", "_pending")

    #: How many abandoned request ids are remembered, so their late answers are expected.
    ABANDONED_MEMORY = 1024

    def __init__(self) -> None:
        self._next_id = 0
        self._pending: set[RequestId] = set()
        self._abandoned: dict[RequestId, None] = {}

    @property
    def pending_requests(self) -> int:
        """How many of our requests still await an answer."""
        return len(self._pending)

    def pending_ids(self) -> list[RequestId]:
        """The ids of our requests that still await an answer."""
        return list(self._pending)

    def build_request(self, method: str, params: Any = None) -> tuple[int, dict[str, Any]]:
        """Allocate an id for a request and return ``(id, message)``; the id becomes pending.

        Ids start at 0, which the specification allows and some agents rely on.
        """
        request_id = self._next_id
        self._next_id += 1
        self._pending.add(request_id)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        return request_id, message

    def forget(self, request_id: RequestId) -> None:
        """Stop waiting for ``request_id`` (it was cancelled locally or the send failed)."""
        if request_id in self._pending:
            self._pending.discard(request_id)
            self._abandoned[request_id] = None
            if len(self._abandoned) > self.ABANDONED_MEMORY:
                del self._abandoned[next(iter(self._abandoned))]

    @staticmethod
    def build_notification(method: str, params: Any = None) -> dict[str, Any]:
        """Return a notification message."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return message

    @staticmethod
    def build_result(request_id: RequestId, result: Any) -> dict[str, Any]:
        """Return a success response; a ``None`` result is sent as ``{}`` (ACP empty result)."""
        return {"jsonrpc": "2.0", "id": request_id, "result": {} if result is None else result}

    @staticmethod
    def build_error(request_id: RequestId, error: RequestError) -> dict[str, Any]:
        """Return an error response for ``error``."""
        return error_response(request_id, error.to_error_object())

    @staticmethod
    def notification_of(message: Any) -> tuple[str, dict[str, Any] | None] | None:
        """``(method, params)`` when ``message`` is a well-formed notification, else None.

        The fast path for the bulk of traffic (``session/update``): no event object is built.
        Anything it declines goes through :meth:`receive`, which classifies it fully.
        """
        if type(message) is dict and "id" not in message:
            fields = cast(dict[str, Any], message)
            method: Any = fields.get("method")
            params: Any = fields.get("params")
            if (
                type(method) is str
                and fields.get("jsonrpc") == "2.0"
                and (params is None or type(params) is dict)
            ):
                return method, cast("dict[str, Any] | None", params)
        return None

    def receive(self, message: Any) -> Incoming:
        """Classify one incoming message (already parsed) into an event."""
        notification = self.notification_of(message)
        if notification is not None:
            return NotificationReceived(*notification)
        if isinstance(message, MalformedFrame):
            return self._receive_malformed(message)
        if not isinstance(message, dict):
            kind = "a batch (JSON array)" if isinstance(message, list) else type(message).__name__
            return self._invalid(None, -32600, f"expected a JSON object, got {kind}")
        message = cast(dict[str, Any], message)
        has_id = "id" in message
        raw_id = message.get("id")
        is_call = "method" in message
        if message.get("jsonrpc") != "2.0":
            reason = 'missing or wrong "jsonrpc": "2.0" member'
            if not is_call and has_id and _is_valid_id(raw_id) and raw_id in self._pending:
                # A broken answer to one of our requests: settle it so the caller does not hang.
                logger.warning("malformed response to request %r: %s", raw_id, reason)
                self._pending.discard(raw_id)
                error = InvalidRequest(f"malformed response: {reason}")
                return ResponseReceived(raw_id, None, error)
            # Only a call's id is echoed: the id of a response (or of something that is
            # neither) names one of *our* requests, and echoing it would look to the peer like
            # an answer to its own request with the same id.
            reply_id = raw_id if is_call and has_id and _is_valid_id(raw_id) else None
            return self._invalid(reply_id, -32600, reason)
        if has_id and not _is_valid_id(raw_id):
            reason = f"invalid id {describe_id(raw_id)}: an id must be a string or an integer"
            return self._invalid(None, -32600, reason)
        if is_call:
            return self._classify_call(message, has_id, raw_id)
        if has_id and ("result" in message or "error" in message):
            return self._classify_response(message, raw_id)
        return self._invalid(None, -32600, "neither a request, a notification nor a response")

    def _classify_call(self, message: dict[str, Any], has_id: bool, raw_id: RequestId) -> Incoming:
        method = message["method"]
        if not isinstance(method, str):
            return self._invalid(raw_id, -32600, f"method must be a string, got {method!r}")
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return self._invalid(raw_id, -32600, "params must be an object or an array")
        if has_id:
            return RequestReceived(raw_id, method, params)
        return NotificationReceived(method, params)

    def _classify_response(self, message: dict[str, Any], raw_id: RequestId) -> Incoming:
        if raw_id not in self._pending:
            if raw_id in self._abandoned:
                del self._abandoned[raw_id]
                logger.debug("late answer to abandoned request %r ignored", raw_id)
                return StrayResponse(message)
            logger.warning("response for unknown request id %s ignored", describe_id(raw_id))
            return StrayResponse(message)
        self._pending.discard(raw_id)
        if "error" in message:
            error: Any = message["error"]
            if "result" in message or not isinstance(error, dict):
                detail = RemoteProtocolError(f"malformed error response: {message!r:.300}")
                return ResponseReceived(raw_id, None, InvalidRequest(str(detail)))
            return ResponseReceived(
                raw_id, None, RequestError.from_error_object(cast(dict[str, Any], error))
            )
        return ResponseReceived(raw_id, message["result"], None)

    def _receive_malformed(self, frame: MalformedFrame) -> Incoming:
        envelope = frame.envelope or {}
        frame_id = envelope.get("id")
        if "id" in envelope and _is_valid_id(frame_id):
            if "method" in envelope:
                # An oversized request: answer it by its id so its sender stops waiting.
                return self._invalid(frame_id, frame.code, frame.reason)
            if ("result" in envelope or "error" in envelope) and frame_id in self._pending:
                # An oversized answer to one of our requests: fail that call, send nothing.
                self._pending.discard(frame_id)
                error = InvalidRequest(f"the peer's answer was not accepted: {frame.reason}")
                return ResponseReceived(frame_id, None, error)
        return self._invalid(None, frame.code, frame.reason)

    @staticmethod
    def _invalid(reply_id: RequestId, code: int, reason: str) -> InvalidMessage:
        message = "Parse error" if code == -32700 else "Invalid request"
        reply = error_response(reply_id, {"code": code, "message": message, "data": reason})
        return InvalidMessage(reply, reason)

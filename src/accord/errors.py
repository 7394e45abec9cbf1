"""The one exception tree of accord.

Every error accord raises derives from :class:`AcpError`. Catch the branch you can act on::

    AcpError
    ├── ProtocolError                   a message broke the rules of JSON-RPC or ACP
    │   ├── LocalProtocolError          you misused the API (e.g. called a method the peer did
    │   │                               not advertise, or an illegal state transition)
    │   └── RemoteProtocolError         the peer broke the spec (malformed frame, oversized line)
    ├── RequestError(code, message, data)
    │   │                               maps 1:1 to a JSON-RPC error object; raise it from a
    │   │                               handler to answer with that error, catch it from a call
    │   │                               that the peer answered with an error
    │   ├── ParseError          -32700
    │   ├── InvalidRequest      -32600
    │   ├── MethodNotFound      -32601
    │   ├── InvalidParams       -32602
    │   │   └── CursorRejected          a resume cursor the agent cannot honour
    │   ├── InternalError       -32603
    │   ├── RequestCancelled    -32800
    │   ├── AuthRequired        -32000
    │   └── ResourceNotFound    -32002
    ├── TransportError                  the channel to the peer failed
    │   ├── ConnectionClosed            the peer went away (EOF) with requests outstanding
    │   ├── AgentProcessExited          a spawned agent exited; carries exit code + stderr tail
    │   ├── ConnectionRefused           a remote agent's server refused the connection (HTTP
    │   │                               status: 401 token, 403 origin, 429 too many, ...)
    │   └── TurnLost                    the link dropped mid-turn and the turn's end could not
    │                                   be learned after it (names the session to resume)
    ├── SessionError                    a session-level rule was broken (local view)
    │   ├── SessionNotFound
    │   └── SessionBusy                 a second prompt while one is running
    └── PermissionDenied                the user (or a policy) refused a tool call

This module sits at the bottom of the package: it imports nothing of ours, and everything
above it raises these classes.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

__all__ = (
    "CURSOR_META_KEY",
    "CURSOR_REJECTION_REASONS",
    "TURN_NOTICE_METHOD",
    "USER_MESSAGE_ID_META_KEY",
    "AcpError",
    "AgentProcessExited",
    "AuthRequired",
    "ConnectionClosed",
    "ConnectionRefused",
    "CursorRejected",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LocalProtocolError",
    "MethodNotFound",
    "ParseError",
    "PermissionDenied",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestCancelled",
    "RequestError",
    "ResourceNotFound",
    "SessionBusy",
    "SessionError",
    "SessionNotFound",
    "TransportError",
    "TurnLost",
    "is_cursor_rejection",
)

#: The ``_meta`` key of a delivery cursor: on every ``session/update`` an agent sends, and on
#: ``session/resume`` / ``session/load`` to resume after it (an opaque string).
CURSOR_META_KEY: Final = "acp/cursor"

#: The extension notification an accord agent sends every attached client but the prompting
#: one when a turn starts and when it ends: ``{"sessionId", "running": bool, "client": name or
#: null}`` (``client``: the prompting client's ``clientInfo`` title or name); the end once
#: that client has the turn's updates, with the turn's ``stopReason`` (unless it was torn
#: down without one) and its prompt's ``tag`` (if it had one; the agent advertises
#: ``agentCapabilities._meta.accord.turnEnd``). Clients that do not know it ignore it (ACP: unknown
#: ``_`` notifications are ignored). A prompt tagged ``_meta.accord.prompt`` (the agent
#: advertises ``agentCapabilities._meta.accord.turnStart``) also gets one, sent to the prompting
#: client just before its turn's first update: ``{"sessionId", "running": true, "prompt": tag}``.
TURN_NOTICE_METHOD: Final = "_accord/turn"

#: The ``_meta`` key of a ``session/prompt`` response naming the ``messageId`` the agent gave
#: the prompt. The prompting client is not sent its own prompt back live (an editor already
#: shows it); this is how it learns the id that ``session/load`` will replay the prompt with.
USER_MESSAGE_ID_META_KEY: Final = "accord/userMessageId"

#: ``data.reason`` of a :class:`CursorRejected` error: the cursor is not a cursor
#: (``cursor_malformed``), belongs to another session (``cursor_foreign``), names a position the
#: session never had (``cursor_unknown``), a position of another epoch (``cursor_epoch``), or
#: one no longer stored (``cursor_expired``).
CURSOR_REJECTION_REASONS: Final = frozenset(
    {"cursor_malformed", "cursor_foreign", "cursor_unknown", "cursor_epoch", "cursor_expired"}
)


class AcpError(Exception):
    """Root of every error raised by accord."""


class ProtocolError(AcpError):
    """A message broke the rules of JSON-RPC 2.0 or ACP."""


class LocalProtocolError(ProtocolError):
    """This side misused the protocol (a bug in the caller, not the peer)."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the specification does not allow."""


class RequestError(AcpError):
    """An error that travels on the wire as a JSON-RPC error object.

    Raise it (or a subclass) from a handler to answer the request with this error; calls
    raise it when the peer answered with an error. ``code``, ``message`` and ``data`` map
    1:1 to the wire.
    """

    #: The JSON-RPC code of this class; instances may carry another code.
    default_code: ClassVar[int] = -32603
    #: The message used when none is given.
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None, *, code: int | None = None):
        self.code: int = self.default_code if code is None else code
        self.message: str = self.default_message if message is None else message
        self.data: Any = data
        super().__init__(self.message)

    def __str__(self) -> str:
        text = f"{self.message} ({self.code})"
        if self.data is not None:
            text += f": {self.data!r}"
        return text

    def to_error_object(self) -> dict[str, Any]:
        """Return the JSON-RPC ``error`` member for this error."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_error_object(cls, error: dict[str, Any]) -> RequestError:
        """Build the most specific subclass for a JSON-RPC ``error`` member from the peer."""
        code = error.get("code")
        message = error.get("message")
        code = code if isinstance(code, int) and not isinstance(code, bool) else -32603
        message = message if isinstance(message, str) else "(no message)"
        subclass = _BY_CODE.get(code, RequestError)
        return subclass(message, error.get("data"), code=code)


class ParseError(RequestError):
    """The peer sent text that is not valid JSON (-32700)."""

    default_code = -32700
    default_message = "Parse error"


class InvalidRequest(RequestError):
    """The message is not a valid JSON-RPC request (-32600)."""

    default_code = -32600
    default_message = "Invalid request"


class MethodNotFound(RequestError):
    """The method does not exist or is not offered by this side (-32601)."""

    default_code = -32601
    default_message = "Method not found"


class InvalidParams(RequestError):
    """The params do not match what the method takes (-32602)."""

    default_code = -32602
    default_message = "Invalid params"


class InternalError(RequestError):
    """The handler failed for a reason of its own (-32603)."""

    default_code = -32603
    default_message = "Internal error"


class RequestCancelled(RequestError):
    """The request was cancelled before it finished (-32800)."""

    default_code = -32800
    default_message = "Request cancelled"


class AuthRequired(RequestError):
    """The operation needs authentication first (-32000)."""

    default_code = -32000
    default_message = "Authentication required"


class ResourceNotFound(RequestError):
    """A session, file or terminal named by the request does not exist (-32002)."""

    default_code = -32002
    default_message = "Resource not found"


class CursorRejected(InvalidParams):
    """A resume cursor the agent cannot honour (-32602; ``data.reason`` is one of
    :data:`CURSOR_REJECTION_REASONS`, ``data.cursor`` the cursor as sent).

    Nothing was attached or changed: load the session in full (without a cursor) instead.
    """

    def __init__(self, reason: str, cursor: object, detail: str, session_id: str) -> None:
        """Refuse ``cursor`` of ``session_id`` for ``reason`` (``detail`` says why, in words)."""
        super().__init__(
            f"cannot resume session {session_id!r} from cursor {cursor!r}: {detail}",
            {"sessionId": session_id, "cursor": cursor, "reason": reason},
        )
        self.reason = reason


def is_cursor_rejection(error: BaseException) -> bool:
    """Whether ``error`` (raised locally or received from a peer) refused a resume cursor."""
    if not isinstance(error, InvalidParams):
        return False
    data = error.data
    return isinstance(data, dict) and data.get("reason") in CURSOR_REJECTION_REASONS  # pyright: ignore[reportUnknownMemberType]


_BY_CODE: dict[int, type[RequestError]] = {
    cls.default_code: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        RequestCancelled,
        AuthRequired,
        ResourceNotFound,
    )
}


class TransportError(AcpError):
    """The channel to the peer failed."""


class ConnectionClosed(TransportError):
    """The peer closed the connection (or it broke) while work was outstanding."""


class ConnectionRefused(ConnectionClosed):
    """A remote agent's server refused the connection or a request with an HTTP status.

    Attributes:
        status: the HTTP status (401: missing or wrong token, 403: origin not allowed, 404:
            unknown connection, 413: message too large, 429: too many connections).
    """

    def __init__(self, status: int, message: str):
        """The refusal's ``status`` and a one-line ``message`` saying what it means."""
        super().__init__(message)
        self.status = status


class AgentProcessExited(ConnectionClosed):
    """A spawned agent process exited.

    Attributes:
        exit_code: the process's exit code (negative: killed by that signal), or None if unknown.
        stderr_tail: the last lines the process wrote to stderr.
    """

    def __init__(self, exit_code: int | None, stderr_tail: str = ""):
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail
        message = f"agent process exited with code {exit_code}"
        if stderr_tail:
            message += f"; last stderr output:\n{stderr_tail}"
        super().__init__(message)


class TurnLost(ConnectionClosed):
    """The link to a served agent dropped while a prompt ran, and how the turn ended could
    not be learned: the link was not restored (refused, or not within the deadline), the
    session was not resumed, or the agent no longer knew the turn. The turn may go on, or have
    ended, on the agent: resume :attr:`session_id` to see its updates.

    Attributes:
        session_id: the session whose turn it was.
    """

    def __init__(self, session_id: str, why: str):
        """``why``: what went wrong, one clause (``"the agent could not be reached again"``)."""
        self.session_id = session_id
        super().__init__(
            f"the link to the agent dropped during a turn of session {session_id}, and {why};"
            f" the turn may go on on the agent: resume session {session_id} to follow it"
        )


class SessionError(AcpError):
    """A session-level rule was broken."""


class SessionNotFound(SessionError):
    """No session with that id is known here."""


class SessionBusy(SessionError):
    """The session already runs a prompt turn; ACP allows one at a time."""


class PermissionDenied(AcpError):
    """The user or a permission policy refused a tool call."""

"""A request head judged before anything acts on it: framing, repeated headers, the target.

h11 parses HTTP/1.1 strictly (bad lines, bad lengths, bad chunk sizes), but it accepts a few
things a server facing the network must refuse, because two parsers (a proxy in front, this
server) could read them differently, which is how requests are smuggled:

* ``Content-Length`` together with ``Transfer-Encoding`` (RFC 9112, 6.1: a server MAY reject
  it; a proxy that honours the other one would see a different request);
* a header this server decides on (``Host``, ``Authorization``, ``Origin``, the ACP ids, the
  WebSocket handshake's) given twice: which one counts would depend on the reader.

It bounds the head as a whole (h11 bounds only a head still incomplete, so one that arrives
in a single read could be as large as that read): its size and its number of headers (431).

It also reads the request target in every form a client may send (RFC 9112, 3.2): the
origin form (``/acp``), the absolute form (``http://host:port/acp``, whose authority then
stands for ``Host``) and the asterisk form (``*``, only for ``OPTIONS``).

Above: :mod:`._server`. Below: the standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ("HeadProblem", "RequestHead", "read_head")

#: Headers the server decides on: each may appear at most once.
SINGLE_HEADERS = frozenset(
    {
        b"host",
        b"authorization",
        b"origin",
        b"content-type",
        b"content-length",
        b"transfer-encoding",
        b"expect",
        b"upgrade",
        b"sec-websocket-key",
        b"sec-websocket-version",
        b"acp-connection-id",
        b"acp-session-id",
    }
)


@dataclass(frozen=True, slots=True)
class HeadProblem:
    """Why a request head is refused: its status (400, or 431 for a head too large) and a
    short reason for the body."""

    reason: str
    status: int = 400


@dataclass(frozen=True, slots=True)
class RequestHead:
    """What a well-formed request head asks for.

    Attributes:
        path: the target's path, without its query (``b"*"`` for the asterisk form).
        query: the target's query (without ``?``), possibly empty.
        authority: the ``Host`` the request names: the absolute form's authority, else the
            ``Host`` header, else None (an HTTP/1.0 request may carry none).
    """

    path: bytes
    query: bytes
    authority: bytes | None


def read_head(
    method: bytes,
    target: bytes,
    headers: Iterable[tuple[bytes, bytes]],
    *,
    max_bytes: int,
    max_headers: int,
) -> RequestHead | HeadProblem:
    """The request's target and authority, or the problem that makes it ambiguous or too large.

    ``headers`` are h11's (names lower case); the head may hold at most ``max_bytes`` (target,
    names and values) and ``max_headers`` headers.
    """
    seen: dict[bytes, bytes] = {}
    size = len(method) + len(target)
    for count, (name, value) in enumerate(headers, 1):
        size += len(name) + len(value) + 4
        if size > max_bytes or count > max_headers:
            return HeadProblem("request header fields too large", 431)
        if name in seen and name in SINGLE_HEADERS:
            return HeadProblem(f"duplicate {name.decode('latin-1')} header")
        seen.setdefault(name, value)
    if b"content-length" in seen and b"transfer-encoding" in seen:
        return HeadProblem("Content-Length together with Transfer-Encoding")
    authority = seen.get(b"host")
    if target == b"*":
        if method != b"OPTIONS":
            return HeadProblem("the asterisk target is for OPTIONS only")
        return RequestHead(b"*", b"", authority)
    if target.startswith(b"/"):
        path, _, query = target.partition(b"?")
        return RequestHead(path, query, authority)
    parts = urlsplit(target.decode("latin-1"))
    if parts.scheme.lower() not in {"http", "https"} or not parts.netloc or "@" in parts.netloc:
        return HeadProblem("the request target must be a path or an http(s) URL")
    # RFC 9112, 3.2.2: with an absolute-form target the server ignores Host.
    path = (parts.path or "/").encode("latin-1")
    return RequestHead(path, parts.query.encode("latin-1"), parts.netloc.encode("latin-1"))

"""A request head judged before anything acts on it: framing, repeated headers, the target.

h11 parses HTTP/1.1 strictly (bad lines, bad lengths, bad chunk sizes), but it accepts a few
things a server facing the network must refuse, because two parsers (a proxy in front, this
server) could read them differently, which is how requests are smuggled:

* ``Content-Length`` together with ``Transfer-Encoding`` (RFC 9112, 6.1: a server MAY reject
  it; a proxy that honours the other one would see a different request);
* a header this server decides on (``Host``, ``Authorization``, ``Origin``, the ACP ids, the
  WebSocket handshake's) given twice: which one counts would depend on the reader.

It refuses what h11 would read leniently (RFC 9112 lets a server be strict, and a strict
server cannot be read differently by a proxy in front of it): ``Transfer-Encoding`` on an
HTTP/1.0 request (6.1: an HTTP/1.0 peer cannot mean chunked framing, so the length is
unknowable), and any version but 1.0 and 1.1, the HTTP/2 connection preface
(``PRI * HTTP/2.0``) included, which gets 505 with the reason. :class:`HeadFraming` checks
the head's bytes before h11 parses them: lines end in CRLF (a bare LF or CR is refused, not
guessed at) and no header line is folded onto the one before (obs-fold, RFC 9112, 5.2).

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

__all__ = ("HeadFraming", "HeadProblem", "RequestHead", "read_head")

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


#: The HTTP/2 connection preface's request line (RFC 9113, 3.4), as h11 reads it.
_HTTP2_PREFACE = (b"PRI", b"*", b"2.0")


def read_head(
    method: bytes,
    target: bytes,
    headers: Iterable[tuple[bytes, bytes]],
    *,
    max_bytes: int,
    max_headers: int,
    version: bytes = b"1.1",
) -> RequestHead | HeadProblem:
    """The request's target and authority, or the problem that makes it ambiguous or too large.

    ``headers`` are h11's (names lower case); the head may hold at most ``max_bytes`` (target,
    names and values) and ``max_headers`` headers. ``version`` is the request line's
    (``b"1.1"``); any but 1.0 and 1.1 gets 505.
    """
    if (method, target, version) == _HTTP2_PREFACE:
        return HeadProblem("HTTP/2 is not served here: speak HTTP/1.1", 505)
    if version not in (b"1.0", b"1.1"):
        return HeadProblem(f"HTTP/{version.decode('latin-1')} is not served: use HTTP/1.1", 505)
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
    if version == b"1.0" and b"transfer-encoding" in seen:
        return HeadProblem("Transfer-Encoding in an HTTP/1.0 request")
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


class HeadFraming:
    """The line framing of one request head, checked as its bytes arrive, before h11 reads them.

    h11 takes a bare LF for a line end and joins a folded line (one starting with a space or a
    tab) to the header before it. A proxy in front could read either differently (a bare LF
    as part of a value, a folded line as a header of its own), so this server refuses both,
    as RFC 9112 allows (2.2, 5.2): every line ends in CRLF, a CR stands only before LF, and
    no line after the request line starts with whitespace. Empty lines before the request
    line are skipped (2.2). Once the empty line ending the head is seen, the rest (a body, a
    pipelined request) is not looked at; :meth:`restart` begins the next head.

    It keeps a few counters, not the bytes: what h11 buffers is bounded by h11.
    """

    __slots__ = ("_done", "_last_cr", "_length", "_lines")

    def __init__(self) -> None:
        """Ready for a head's first byte."""
        self._length = 0  # bytes of the line being read, so far
        self._last_cr = False  # whether its last byte so far is a CR
        self._lines = 0  # lines of this head read so far (the request line is the first)
        self._done = False

    @property
    def done(self) -> bool:
        """Whether the head's ending empty line has been seen."""
        return self._done

    def restart(self) -> None:
        """Begin a new head (the next request on the connection)."""
        self._length = 0
        self._last_cr = False
        self._lines = 0
        self._done = False

    def feed(self, data: bytes) -> HeadProblem | None:
        """Check the next bytes; the problem, or None (also once the head is complete)."""
        start = 0
        while not self._done and start < len(data):
            end = data.find(b"\n", start)
            stop = len(data) if end < 0 else end
            if stop > start:
                if self._length == 0 and self._lines > 0 and data[start] in b" \t":
                    return HeadProblem("a folded header line (obsolete line folding)")
                # A CR is allowed only as a line's last byte, just before its LF.
                if self._last_cr or data.find(b"\r", start, stop - 1) >= 0:
                    return HeadProblem("a CR that does not end a line")
                self._length += stop - start
                self._last_cr = data[stop - 1] == 0x0D
            if end < 0:
                return None
            if not self._last_cr:
                return HeadProblem("a line ending in a bare LF (CRLF required)")
            if self._length == 1:
                self._done = self._lines > 0  # an empty line before the request line is skipped
            else:
                self._lines += 1
            self._length = 0
            self._last_cr = False
            start = end + 1
        return None

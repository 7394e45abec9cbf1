"""A hostile HTTP client for any ACP server at ``/acp``: smuggling, auth, Host, Origin, floods.

Each :class:`HttpAttack` is the bytes a hostile client writes on a fresh TCP connection and
what the server's answer must look like (:func:`run_http_attack` reads every response until
the server closes or goes quiet, then checks them). :data:`HTTP_ATTACKS` is the kit:
request smuggling (``Content-Length`` with ``Transfer-Encoding``, two lengths, a negative
one, a chunk size past 64 bits, transfer codings that are not ``chunked``), header floods, a
request line past any sane size, credentials that are almost right (duplicated, another
case, another scheme, in the query string), ``Host`` names a DNS-rebinding page would send,
``Origin`` look-alikes, a WebSocket upgrade over HTTP/1.0, and pipelined or
``Expect: 100-continue`` requests that must not carry an unauthenticated one through.

:func:`hold_connections` is the flood: it opens many sockets (idle, or trickling a request
head a byte at a time, from several loopback source addresses if asked) and keeps them until
the block ends, counting how many the server closed. :func:`server_alive` checks the server
still serves an authenticated client (a ``POST initialize`` answered ``200``, the connection
then deleted).

No accord server code is used: point it at any server speaking ACP's Streamable HTTP.

Above: accord's remote tests, benchmarks, your own server's tests. Below: anyio, orjson.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import MappingProxyType

import anyio
import anyio.abc
import orjson

__all__ = (
    "HTTP_ATTACKS",
    "Flood",
    "HttpAttack",
    "HttpOutcome",
    "HttpResponse",
    "HttpTarget",
    "connect_target",
    "hold_connections",
    "read_responses",
    "run_http_attack",
    "server_alive",
)

#: An ``initialize`` any ACP agent answers.
INITIALIZE: dict[str, object] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


@dataclass(frozen=True, slots=True)
class HttpTarget:
    """The server under attack.

    Attributes:
        host: the address to connect to.
        port: its port.
        token: the bearer token the server expects (some attacks use it, almost right).
        path: the ACP endpoint.
        ssl_context: for an ``https`` server (None: plain TCP).
        quiet: seconds of silence after which the server is taken to be done answering.
    """

    host: str
    port: int
    token: str
    path: str = "/acp"
    ssl_context: ssl.SSLContext | None = None
    quiet: float = 1.0

    @property
    def authority(self) -> str:
        """The ``Host`` a well-behaved client sends."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"{shown}:{self.port}"


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """One response read off the wire (informational ones included)."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class HttpOutcome:
    """What one attack got: the responses, whether the server passed, and why not."""

    attack: str
    responses: tuple[HttpResponse, ...]
    closed: bool
    problem: str = ""

    @property
    def passed(self) -> bool:
        """Whether the server answered as it must."""
        return not self.problem

    @property
    def status(self) -> int | None:
        """The first final (non-1xx) status, if any."""
        return next((r.status for r in self.responses if r.status >= 200), None)


Check = Callable[[Sequence[HttpResponse], bool], str]


@dataclass(frozen=True, slots=True)
class HttpAttack:
    """One attack: the bytes to write and the check of what came back.

    ``check(responses, closed)`` returns '' when the server passed, else what is wrong.
    """

    name: str
    description: str
    build: Callable[[HttpTarget], bytes]
    check: Check


def _statuses(*allowed: int, then_close: bool = False) -> Check:
    """A check: the first final response has one of ``allowed`` statuses (and nothing 1xx)."""

    def check(responses: Sequence[HttpResponse], closed: bool) -> str:
        if not responses:
            return f"no response (expected {'/'.join(map(str, allowed))})"
        first = responses[0]
        if first.status < 200:
            return f"an informational {first.status} before the refusal"
        if first.status not in allowed:
            return f"status {first.status}, expected {'/'.join(map(str, allowed))}"
        if then_close and not closed:
            return "the connection stayed open after the refusal"
        return ""

    return check


def _request(
    target: HttpTarget,
    method: str = "POST",
    *,
    path: str | None = None,
    version: str = "1.1",
    host: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    body: bytes = b"",
    auth: str | None = "",
    length: bool = True,
) -> bytes:
    """A request; ``auth=''`` means the right bearer token, None none at all."""
    lines = [f"{method} {path or target.path} HTTP/{version}"]
    if host is not None or version == "1.1":
        lines.append(f"Host: {host if host is not None else target.authority}")
    if auth is not None:
        lines.append(f"Authorization: {auth or 'Bearer ' + target.token}")
    lines += [f"{k}: {v}" for k, v in headers]
    if length and method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


_JSON = ("Content-Type", "application/json")
_INIT = orjson.dumps(INITIALIZE)
_UPGRADE = (
    ("Upgrade", "websocket"),
    ("Connection", "Upgrade"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("Sec-WebSocket-Version", "13"),
)


def _pipelined(target: HttpTarget) -> bytes:
    ok = _request(target, "GET", path="/not-acp")
    return ok + _request(target, "GET", auth=None, headers=_UPGRADE)


def _check_pipelined(responses: Sequence[HttpResponse], closed: bool) -> str:
    finals = [r for r in responses if r.status >= 200]
    if len(finals) < 2:
        return f"{len(finals)} response(s) to two pipelined requests"
    if finals[1].status != 401:
        return f"the unauthenticated pipelined request got {finals[1].status}, not 401"
    return ""


def _check_expect(responses: Sequence[HttpResponse], closed: bool) -> str:
    if any(r.status == 100 for r in responses):
        return "100 Continue was sent to a client without the token"
    return _statuses(401)(responses, closed)


def _attacks() -> dict[str, HttpAttack]:
    def post(**kw: object) -> Callable[[HttpTarget], bytes]:
        return lambda t: _request(t, **kw)  # type: ignore[arg-type]

    chunked = ("Transfer-Encoding", "chunked")
    items = [
        HttpAttack(
            "cl-and-te",
            "Content-Length together with Transfer-Encoding: chunked (request smuggling)",
            post(
                headers=[_JSON, ("Content-Length", "4"), chunked], body=b"0\r\n\r\n", length=False
            ),
            _statuses(400, then_close=True),
        ),
        HttpAttack(
            "two-lengths",
            "two different Content-Length headers",
            post(headers=[_JSON, ("Content-Length", "2"), ("Content-Length", "3")], body=b"{}"),
            _statuses(400, then_close=True),
        ),
        HttpAttack(
            "negative-length",
            "Content-Length: -1",
            post(headers=[_JSON, ("Content-Length", "-1")], length=False),
            _statuses(400, then_close=True),
        ),
        HttpAttack(
            "chunk-size-overflow",
            "a chunk size past 64 bits",
            post(headers=[_JSON, chunked], body=b"1" + b"0" * 20 + b"\r\n{}", length=False),
            _statuses(400, 413, then_close=True),
        ),
        HttpAttack(
            "te-not-chunked",
            "Transfer-Encoding: gzip, chunked (a coding the server cannot undo)",
            post(headers=[_JSON, ("Transfer-Encoding", "gzip, chunked")], length=False),
            _statuses(400, 501, then_close=True),
        ),
        HttpAttack(
            "te-lookalike",
            "Transfer-Encoding: xchunked",
            post(headers=[_JSON, ("Transfer-Encoding", "xchunked")], length=False),
            _statuses(400, 501, then_close=True),
        ),
        HttpAttack(
            "bare-lf",
            "the right request with bare LF line endings (CRLF required)",
            lambda t: _request(t, "GET", headers=_UPGRADE).replace(b"\r\n", b"\n"),
            _statuses(400, then_close=True),
        ),
        HttpAttack(
            "bare-cr",
            "a CR inside a header line (a proxy may take it for a line end)",
            lambda t: _request(t, "GET", headers=[("X-Note", "a\rInjected: b"), *_UPGRADE]),
            _statuses(400, then_close=True),
        ),
        HttpAttack(
            "obs-fold",
            "a header folded onto a second line (obsolete line folding)",
            lambda t: _request(t, "GET", headers=[("X-Note", "a\r\n b"), *_UPGRADE]),
            _statuses(400, then_close=True),
        ),
        HttpAttack(
            "obs-fold-first",
            "whitespace before the first header line",
            lambda t: _request(t, "GET", headers=_UPGRADE).replace(b"\r\nHost:", b"\r\n Host:"),
            _statuses(400, then_close=True),
        ),
        HttpAttack(
            "http10-chunked",
            "HTTP/1.0 with Transfer-Encoding: chunked (RFC 9112, 6.1)",
            post(version="1.0", headers=[_JSON, chunked], body=b"0\r\n\r\n", length=False),
            _statuses(400, then_close=True),
        ),
        HttpAttack(
            "http2-preface",
            "the HTTP/2 connection preface (PRI * HTTP/2.0) on an HTTP/1.1 port",
            lambda t: b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            _statuses(505, then_close=True),
        ),
        HttpAttack(
            "http-version-unknown",
            "a request line saying HTTP/3.0",
            lambda t: _request(t, "GET", version="3.0", host=t.authority, headers=_UPGRADE),
            _statuses(505, then_close=True),
        ),
        HttpAttack(
            "header-flood",
            "2,000 headers (about 40 KiB) before the request ends",
            lambda t: _request(t, "GET", headers=[(f"X-Pad-{i}", "a" * 10) for i in range(2000)]),
            _statuses(431, 400, then_close=True),
        ),
        HttpAttack(
            "long-request-line",
            "a 100 KiB request target",
            lambda t: _request(t, "GET", path="/acp?" + "a" * 100_000),
            _statuses(414, 431, 400, then_close=True),
        ),
        HttpAttack(
            "duplicate-authorization",
            "the right token, then a wrong one, in two Authorization headers",
            lambda t: _request(
                t, "GET", headers=[("Authorization", "Bearer wrong-token"), *_UPGRADE]
            ),
            _statuses(400, 401, then_close=True),
        ),
        HttpAttack(
            "duplicate-authorization-reversed",
            "a wrong token, then the right one",
            lambda t: _request(
                t,
                "GET",
                auth="Bearer wrong-token",
                headers=[("Authorization", f"Bearer {t.token}"), *_UPGRADE],
            ),
            _statuses(400, 401, then_close=True),
        ),
        HttpAttack(
            "token-other-case",
            "the token in upper case",
            lambda t: _request(t, "GET", auth=f"Bearer {t.token.swapcase()}", headers=_UPGRADE),
            _statuses(401),
        ),
        HttpAttack(
            "token-with-suffix",
            "the token followed by a space and more",
            lambda t: _request(t, "GET", auth=f"Bearer {t.token} x", headers=_UPGRADE),
            _statuses(401),
        ),
        HttpAttack(
            "token-prefix",
            "all of the token but its last character",
            lambda t: _request(t, "GET", auth=f"Bearer {t.token[:-1]}", headers=_UPGRADE),
            _statuses(401),
        ),
        HttpAttack(
            "token-basic",
            "the token under the Basic scheme",
            lambda t: _request(
                t,
                "GET",
                auth="Basic " + base64.b64encode(f"user:{t.token}".encode()).decode(),
                headers=_UPGRADE,
            ),
            _statuses(401),
        ),
        HttpAttack(
            "token-in-query",
            "the right token in the query string, none in Authorization",
            lambda t: _request(
                t, "GET", path=f"{t.path}?token={t.token}", auth=None, headers=_UPGRADE
            ),
            _statuses(401),
        ),
        HttpAttack(
            "token-in-query-api-key",
            "the token as ?api_key= beside the right Authorization (a URL leaks into logs)",
            lambda t: _request(t, "GET", path=f"{t.path}?api_key={t.token}", headers=_UPGRADE),
            _statuses(401),
        ),
        HttpAttack(
            "token-in-query-camel",
            "the token as ?accessToken= beside the right Authorization",
            lambda t: _request(t, "GET", path=f"{t.path}?accessToken={t.token}", headers=_UPGRADE),
            _statuses(401),
        ),
        HttpAttack(
            "token-in-query-bare",
            "the token as the bare query (?TOKEN) beside the right Authorization",
            lambda t: _request(t, "GET", path=f"{t.path}?{t.token}", headers=_UPGRADE),
            _statuses(401),
        ),
        HttpAttack(
            "token-in-query-semicolon",
            "the token behind a ';' separator (?a=1;access%5Ftoken=) beside the right token",
            lambda t: _request(
                t, "GET", path=f"{t.path}?a=1;access%5Ftoken={t.token}", headers=_UPGRADE
            ),
            _statuses(401),
        ),
        HttpAttack(
            "expect-unauthenticated",
            "Expect: 100-continue without the token: no 100 may come",
            post(
                auth=None,
                headers=[_JSON, ("Expect", "100-continue"), ("Content-Length", str(len(_INIT)))],
                length=False,
            ),
            _check_expect,
        ),
        HttpAttack(
            "pipelined-unauthenticated",
            "an authenticated request with an unauthenticated upgrade pipelined behind it",
            _pipelined,
            _check_pipelined,
        ),
        HttpAttack(
            "http10-upgrade",
            "a WebSocket upgrade over HTTP/1.0",
            lambda t: _request(t, "GET", version="1.0", host=t.authority, headers=_UPGRADE),
            _statuses(400, 426),
        ),
        HttpAttack(
            "rebinding-host",
            "Host: a foreign name (a page that rebound its name to this server's address)",
            lambda t: _request(t, "GET", host="attacker.example", headers=_UPGRADE),
            _statuses(403, 421),
        ),
        HttpAttack(
            "lookalike-host",
            "Host: localhost.attacker.example",
            lambda t: _request(
                t, "GET", host=f"localhost.attacker.example:{t.port}", headers=_UPGRADE
            ),
            _statuses(403, 421),
        ),
        HttpAttack(
            "absolute-form-foreign",
            "an absolute-form target naming a foreign host (it overrides Host)",
            lambda t: _request(t, "GET", path=f"http://attacker.example{t.path}", headers=_UPGRADE),
            _statuses(403, 421),
        ),
        HttpAttack(
            "origin-null",
            "Origin: null (a sandboxed frame, a file page)",
            lambda t: _request(t, "GET", headers=[("Origin", "null"), *_UPGRADE]),
            _statuses(403),
        ),
        HttpAttack(
            "origin-lookalike",
            "Origin: http://localhost.attacker.example",
            lambda t: _request(
                t, "GET", headers=[("Origin", "http://localhost.attacker.example"), *_UPGRADE]
            ),
            _statuses(403),
        ),
        HttpAttack(
            "origin-userinfo",
            "Origin: http://127.0.0.1@attacker.example",
            lambda t: _request(
                t, "GET", headers=[("Origin", "http://127.0.0.1@attacker.example"), *_UPGRADE]
            ),
            _statuses(403),
        ),
        HttpAttack(
            "origin-twice",
            "a loopback Origin, then a foreign one",
            lambda t: _request(
                t,
                "GET",
                headers=[
                    ("Origin", "http://localhost:1"),
                    ("Origin", "https://attacker.example"),
                    *_UPGRADE,
                ],
            ),
            _statuses(400, 403),
        ),
    ]
    return {a.name: a for a in items}


#: The HTTP attacks by name.
HTTP_ATTACKS = MappingProxyType(_attacks())


async def connect_target(target: HttpTarget, local_host: str | None = None) -> anyio.abc.ByteStream:
    stream = await anyio.connect_tcp(target.host, target.port, local_host=local_host)
    if target.ssl_context is None:
        return stream
    from anyio.streams.tls import TLSStream

    return await TLSStream.wrap(
        stream, hostname=target.host, ssl_context=target.ssl_context, standard_compatible=False
    )


def _parse(buffer: bytes) -> tuple[list[HttpResponse], bytes]:
    """The complete responses at the start of ``buffer`` and what is left."""
    responses: list[HttpResponse] = []
    while b"\r\n\r\n" in buffer:
        head, _, rest = buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split()[1])
        except (IndexError, ValueError):
            break
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0) if status >= 200 else 0
        if len(rest) < length:
            break
        responses.append(HttpResponse(status, headers, rest[:length]))
        buffer = rest[length:]
    return responses, buffer


async def read_responses(
    stream: anyio.abc.ByteStream, quiet: float, *, finals: int | None = None
) -> tuple[list[HttpResponse], bool]:
    """Responses until the server closes, is quiet ``quiet`` seconds, or sent ``finals`` final
    (non-1xx) ones; and whether it closed."""
    buffer = b""
    closed = False
    while True:
        with anyio.move_on_after(quiet) as scope:
            try:
                chunk = await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                closed = True
                break
            except OSError:
                closed = True
                break
            buffer += chunk
        if scope.cancelled_caught:
            break
        if finals is not None:
            done, _ = _parse(buffer)
            if sum(r.status >= 200 for r in done) >= finals:
                break
    responses, _ = _parse(buffer)
    return responses, closed


async def run_http_attack(target: HttpTarget, attack: HttpAttack) -> HttpOutcome:
    """Play ``attack`` on a fresh connection; what came back and whether it passes."""
    async with await connect_target(target) as stream:
        try:
            await stream.send(attack.build(target))
        except (anyio.BrokenResourceError, OSError):
            pass
        responses, closed = await read_responses(stream, target.quiet)
    problem = attack.check(responses, closed)
    return HttpOutcome(attack.name, tuple(responses), closed, problem)


async def server_alive(target: HttpTarget, *, seconds: float = 10.0) -> bool:
    """Whether the server answers an authenticated ``POST initialize`` with 200."""
    with anyio.move_on_after(seconds):
        async with await connect_target(target) as stream:
            await stream.send(_request(target, headers=[_JSON], body=_INIT))
            responses, _ = await read_responses(stream, seconds, finals=1)
        final = [r for r in responses if r.status >= 200]
        if not final or final[0].status != 200:
            return False
        connection_id = final[0].headers.get("acp-connection-id")
        if connection_id:
            async with await connect_target(target) as stream:
                delete = _request(target, "DELETE", headers=[("Acp-Connection-Id", connection_id)])
                await stream.send(delete)
                await read_responses(stream, seconds, finals=1)
        return True
    return False


@dataclass
class Flood:
    """The sockets :func:`hold_connections` opened and what became of them."""

    opened: int = 0
    refused: int = 0
    closed_by_server: int = 0
    _streams: list[anyio.abc.ByteStream] = field(default_factory=list[anyio.abc.ByteStream])
    _changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def held(self) -> int:
        """Sockets still open (not closed by the server)."""
        return self.opened - self.closed_by_server

    async def wait_closed(self, count: int) -> None:
        """Wait until the server has closed at least ``count`` of the sockets."""
        while self.closed_by_server < count:
            await self._changed.wait()
            self._changed = anyio.Event()

    def _closed(self) -> None:
        self.closed_by_server += 1
        self._changed.set()


@asynccontextmanager
async def hold_connections(
    target: HttpTarget,
    count: int,
    *,
    trickle: bool = False,
    interval: float = 0.5,
    local_hosts: Sequence[str] = (),
) -> AsyncGenerator[Flood]:
    """Open ``count`` unauthenticated sockets and hold them while the block runs.

    Idle sockets send nothing; with ``trickle`` each sends a request head (without a token)
    one byte every ``interval`` seconds, never finishing it. ``local_hosts`` spreads the
    sockets over those source addresses (``127.0.0.2``... on Linux loopback). The
    :class:`Flood` counts the sockets the server closed.
    """
    flood = Flood()
    head = b"GET /acp HTTP/1.1\r\nHost: " + target.authority.encode() + b"\r\nX-Slow: "

    async def hold(stream: anyio.abc.ByteStream) -> None:
        try:
            sent = 0
            answered = False
            while trickle and not answered:
                await stream.send(head[sent : sent + 1] or b"a")
                sent += 1
                with anyio.move_on_after(interval):
                    await stream.receive()  # a refusal: the server is done with it
                    answered = True
            if not answered:
                await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        flood._closed()

    async with anyio.create_task_group() as tg:
        for i in range(count):
            local = local_hosts[i % len(local_hosts)] if local_hosts else None
            try:
                stream = await connect_target(target, local)
            except OSError:
                flood.refused += 1
                continue
            flood.opened += 1
            flood._streams.append(stream)
            tg.start_soon(hold, stream)
        try:
            yield flood
        finally:
            tg.cancel_scope.cancel()
            for stream in flood._streams:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()

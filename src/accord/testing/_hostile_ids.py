"""Hostile JSON-RPC request ids, for any ACP peer over any transport.

A peer chooses the ids of its requests, and a hostile one chooses them to hurt: a 1 MiB
string, an object nested 200 deep, ``1.5``, ``true``, integers past 64 bits, ``null``, an id
still in flight. JSON-RPC 2.0 (section 4) allows a string, a number or null, and ACP's
``RequestId`` is an integer, a string or null; so an answer must carry a valid id back exactly
as it was sent, and an id that is no id is answered ``-32600`` Invalid Request with id
``null`` and a short message (quoting a 1 MiB id back, or logging it whole, costs what the
attacker chose). Either way the peer goes on serving.

:data:`HOSTILE_IDS` is the kit, each :class:`HostileId` written as JSON text (so the integers
past 64 bits reach the wire as the digits they are); :func:`id_request` is a request by one,
:func:`check_answer` checks the answer to it and :func:`check_refusal` the refusal of an id
already in flight. :func:`play_hostile_ids` plays them all on an :class:`IdWire` (anything
that sends a message's JSON text and receives the peer's messages, ``initialize`` done) and
checks after each that a plain request is still answered. :func:`websocket_wire` and
:func:`streamable_http_wire` are such wires to an ACP server at ``/acp`` over real sockets;
over stdio, write each text as one line.

No accord code is used on the peer's side: point it at any ACP agent or client.

Above: accord's jsonrpc, agent and remote tests. Below: anyio, orjson.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, cast

import anyio
import anyio.abc
import orjson

from ._hostile_http import INITIALIZE, HttpTarget, connect_target
from ._hostile_websocket import frame

__all__ = (
    "HOSTILE_IDS",
    "PROBE_METHOD",
    "HostileId",
    "IdWire",
    "StreamableHttpWire",
    "check_answer",
    "check_refusal",
    "id_request",
    "next_answer",
    "play_hostile_ids",
    "streamable_http_wire",
    "websocket_wire",
)

#: The method the kit's requests call: an extension method no peer offers, answered
#: ``-32601`` by the id of the request (ACP: unknown ``_`` methods are Method not found).
PROBE_METHOD = "_accord/hostile_id"

#: The most bytes a refusal may take: far less than the hostile ids, so none is quoted whole.
MAX_REFUSAL_BYTES = 2048


@dataclass(frozen=True, slots=True)
class HostileId:
    """One id a hostile peer sends.

    Attributes:
        name: the case's name.
        text: the id as JSON text, as it goes on the wire.
        valid: True: a request id JSON-RPC and ACP allow, answered by this id, exactly;
            False: answered ``-32600`` with id ``null``.
    """

    name: str
    text: bytes
    valid: bool

    @property
    def value(self) -> Any:
        """The id as a JSON parser reads it back (the digits past 64 bits as a float)."""
        return orjson.loads(self.text)


def _cases() -> dict[str, HostileId]:
    mib = 1 << 20
    deep = b"[" * 200 + b"]" * 200
    cases = [
        HostileId("huge-string", b'"' + b"i" * mib + b'"', True),
        HostileId("empty-string", b'""', True),
        HostileId("unicode-string", orjson.dumps("id \u00e9\u0000\U0001f600\u2028"), True),
        HostileId("zero", b"0", True),
        HostileId("negative", b"-9223372036854775808", True),  # the least int64
        HostileId("past-int63", b"9223372036854775808", True),  # 2**63
        HostileId("null", b"null", True),  # allowed, discouraged (JSON-RPC 2.0, 4)
        HostileId("beyond-64-bits", b"18446744073709551616", False),  # 2**64
        HostileId("huge-integer", b"1" + b"0" * 40, False),
        HostileId("fraction", b"1.5", False),
        HostileId("integral-float", b"2.0", False),
        HostileId("exponent", b"1e3", False),
        HostileId("true", b"true", False),
        HostileId("false", b"false", False),
        HostileId("deep-array", deep, False),
        HostileId("huge-object", b'{"a":' + deep + b',"pad":"' + b"o" * mib + b'"}', False),
        HostileId("empty-object", b"{}", False),
    ]
    return {case.name: case for case in cases}


#: The hostile ids by name.
HOSTILE_IDS = MappingProxyType(_cases())


def id_request(case: HostileId, method: str = PROBE_METHOD, params: Any = None) -> bytes:
    """The JSON text of a request by ``case``'s id (its text as it is, not re-encoded)."""
    text = b'{"jsonrpc":"2.0","id":' + case.text + b',"method":' + orjson.dumps(method)
    if params is not None:
        text += b',"params":' + orjson.dumps(params)
    return text + b"}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:80]}... ({len(text)} characters)"


def check_refusal(answer: Mapping[str, Any]) -> str:
    """'' when ``answer`` is a short ``-32600`` with id ``null``, else what is wrong with it."""
    if "id" not in answer or answer["id"] is not None:
        return f"refused by id {_shown(answer.get('id'))}, not null"
    error: Any = answer.get("error")
    if not isinstance(error, dict):
        return f"not an error: {_shown(answer)}"
    fields = cast(dict[str, Any], error)
    if fields.get("code") != -32600:
        return f"error {fields.get('code')!r}, not -32600 Invalid Request"
    if not isinstance(fields.get("message"), str) or not fields["message"]:
        return "the error has no message"
    size = len(orjson.dumps(dict(answer)))
    if size > MAX_REFUSAL_BYTES:
        return f"the refusal takes {size} bytes: it quotes the id whole"
    return ""


def check_answer(case: HostileId, answer: Mapping[str, Any]) -> str:
    """'' when ``answer`` is right for a request by ``case``'s id, else what is wrong."""
    if not case.valid:
        return check_refusal(answer)
    if "id" not in answer:
        return "answered with no id"
    got: Any = answer["id"]
    want = case.value
    if type(got) is not type(want) or got != want:
        return f"answered by id {_shown(got)}, not the id sent"
    error: Any = answer.get("error")
    if isinstance(error, dict) and cast(dict[str, Any], error).get("code") == -32600:
        return f"a valid id refused: {_shown(error)}"
    return ""


class IdWire(Protocol):
    """A connection to the peer under attack, in JSON texts."""

    async def send(self, text: bytes) -> None:
        """Send one message's JSON text."""
        ...

    async def receive(self) -> dict[str, Any]:
        """The next message the peer sent."""
        ...


async def next_answer(wire: IdWire) -> dict[str, Any]:
    """The next response the peer sent (its notifications and requests skipped)."""
    while True:
        message = await wire.receive()
        if "method" not in message:
            return message


async def play_hostile_ids(
    wire: IdWire, cases: Iterable[HostileId] | None = None, *, method: str = PROBE_METHOD
) -> dict[str, str]:
    """Send a request by each hostile id, then a plain request; ``{case: problem}``.

    The problem is '' when the id was answered as it must be and the plain request after it
    was answered too (the peer goes on serving).
    """
    problems: dict[str, str] = {}
    for case in HOSTILE_IDS.values() if cases is None else cases:
        await wire.send(id_request(case, method))
        problem = check_answer(case, await next_answer(wire))
        after = f"after {case.name}"
        await wire.send(orjson.dumps({"jsonrpc": "2.0", "id": after, "method": method}))
        answer = await next_answer(wire)
        if not problem and answer.get("id") != after:
            problem = f"the next request was not answered: {_shown(answer)}"
        problems[case.name] = problem
    return problems


# ------------------------------------------------------------------ wires to an ACP server


async def _read_head(stream: anyio.abc.ByteStream, buffer: bytearray) -> tuple[int, dict[str, str]]:
    """Read one response head off ``stream`` (what follows it stays in ``buffer``)."""
    while b"\r\n\r\n" not in buffer:
        buffer += await stream.receive()
    end = buffer.index(b"\r\n\r\n")
    lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    del buffer[: end + 4]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers


class _WebSocketWire:
    """Text frames to an upgraded connection; the server's pings answered."""

    def __init__(self, stream: anyio.abc.ByteStream, buffer: bytearray) -> None:
        self._stream = stream
        self._buffer = buffer
        self._parts: list[bytes] = []

    async def send(self, text: bytes) -> None:
        await self._stream.send(frame(1, text))

    async def _need(self, n: int) -> None:
        while len(self._buffer) < n:
            self._buffer += await self._stream.receive()

    async def receive(self) -> dict[str, Any]:
        while True:
            await self._need(2)
            first, size, at = self._buffer[0], self._buffer[1] & 0x7F, 2
            if size == 126:
                await self._need(4)
                size, at = int.from_bytes(self._buffer[2:4], "big"), 4
            elif size == 127:
                await self._need(10)
                size, at = int.from_bytes(self._buffer[2:10], "big"), 10
            await self._need(at + size)
            payload = bytes(self._buffer[at : at + size])
            del self._buffer[: at + size]
            opcode = first & 0x0F
            if opcode == 9:
                await self._stream.send(frame(10, payload))
            elif opcode == 8:
                raise anyio.EndOfStream
            elif opcode in (0, 1):
                self._parts.append(payload)
                if first & 0x80:
                    text, self._parts = b"".join(self._parts), []
                    return orjson.loads(text)


@asynccontextmanager
async def websocket_wire(target: HttpTarget) -> AsyncGenerator[IdWire]:
    """An :class:`IdWire` over a WebSocket upgraded at ``target`` (with its token), its
    ``initialize`` sent and answered (an ACP agent refuses other requests before it)."""
    upgrade = (
        f"GET {target.path} HTTP/1.1\r\nHost: {target.authority}\r\n"
        f"Authorization: Bearer {target.token}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode("latin-1")
    async with await connect_target(target) as stream:
        await stream.send(upgrade)
        buffer = bytearray()
        status, _ = await _read_head(stream, buffer)
        if status != 101:
            raise AssertionError(f"the WebSocket upgrade was answered {status}")
        wire = _WebSocketWire(stream, buffer)
        await wire.send(orjson.dumps(INITIALIZE))
        answer = await next_answer(wire)
        if "result" not in answer:
            raise AssertionError(f"initialize was answered {answer!r:.200}")
        yield wire


class StreamableHttpWire:
    """POSTs to one Streamable HTTP connection; its GET event stream read as it comes.

    A POST answered with a JSON body (a refusal, not ``202``) counts as a message received.
    """

    def __init__(self, target: HttpTarget, connection_id: str) -> None:
        self._target = target
        self.connection_id = connection_id
        self._events: anyio.abc.ByteStream | None = None
        self._body = bytearray()
        self._chunk_left = 0
        self._text = bytearray()
        self._ready: deque[dict[str, Any]] = deque()

    async def post(self, text: bytes, headers: str = "") -> tuple[int, dict[str, str], bytes]:
        """POST ``text`` on a fresh socket; the status, headers and body."""
        head = (
            f"POST {self._target.path} HTTP/1.1\r\nHost: {self._target.authority}\r\n"
            f"Authorization: Bearer {self._target.token}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"{headers}Content-Length: {len(text)}\r\nConnection: close\r\n\r\n"
        ).encode("latin-1")
        async with await connect_target(self._target) as stream:
            await stream.send(head + text)
            buffer = bytearray()
            status, fields = await _read_head(stream, buffer)
            length = int(fields.get("content-length", "0") or 0)
            while len(buffer) < length:
                buffer += await stream.receive()
            return status, fields, bytes(buffer[:length])

    async def send(self, text: bytes, session: str | None = None) -> None:
        """POST ``text`` (for ``session``, in its ``Acp-Session-Id``); a refusal with a
        JSON body is taken as the next message received."""
        headers = f"Acp-Connection-Id: {self.connection_id}\r\n"
        if session is not None:
            headers += f"Acp-Session-Id: {session}\r\n"
        status, fields, body = await self.post(text, headers)
        if status != 202 and fields.get("content-type", "").startswith("application/json"):
            self._ready.append(orjson.loads(body))

    async def open_events(self, session: str | None = None) -> None:
        """Start the GET event stream of the connection, or of one of its sessions (read by
        :meth:`receive`)."""
        stream = await connect_target(self._target)
        scope = "" if session is None else f"Acp-Session-Id: {session}\r\n"
        await stream.send(
            (
                f"GET {self._target.path} HTTP/1.1\r\nHost: {self._target.authority}\r\n"
                f"Authorization: Bearer {self._target.token}\r\nAccept: text/event-stream\r\n"
                f"Acp-Connection-Id: {self.connection_id}\r\n{scope}\r\n"
            ).encode("latin-1")
        )
        status, _ = await _read_head(stream, self._body)
        if status != 200:
            await stream.aclose()
            raise AssertionError(f"the event stream was answered {status}")
        self._events = stream

    async def _more_text(self) -> None:
        """Move the next bytes of the chunked body into the event text."""
        assert self._events is not None
        while True:
            if self._chunk_left:
                if not self._body:
                    self._body += await self._events.receive()
                take = bytes(self._body[: self._chunk_left])
                del self._body[: len(take)]
                self._chunk_left -= len(take)
                self._text += take
                return
            while b"\r\n" not in self._body:
                self._body += await self._events.receive()
            end = self._body.index(b"\r\n")
            line = bytes(self._body[:end])
            del self._body[: end + 2]
            if line:  # the size line of the next chunk (the CRLF after a chunk is empty)
                self._chunk_left = int(line.split(b";")[0], 16)
                if not self._chunk_left:
                    raise anyio.EndOfStream

    async def receive(self) -> dict[str, Any]:
        while not self._ready:
            end = self._text.find(b"\n\n")
            if end < 0:
                await self._more_text()
                continue
            event = bytes(self._text[:end])
            del self._text[: end + 2]
            data = [line[6:] for line in event.split(b"\n") if line.startswith(b"data: ")]
            if data:
                self._ready.append(orjson.loads(b"\n".join(data)))
        return self._ready.popleft()

    async def session_events(self, session: str) -> StreamableHttpWire:
        """A wire on the same connection reading ``session``'s event stream."""
        wire = StreamableHttpWire(self._target, self.connection_id)
        await wire.open_events(session)
        return wire

    async def aclose(self) -> None:
        """Close the event stream."""
        if self._events is not None:
            await self._events.aclose()


@asynccontextmanager
async def streamable_http_wire(target: HttpTarget) -> AsyncGenerator[StreamableHttpWire]:
    """An :class:`IdWire` over a Streamable HTTP connection to ``target``: ``initialize``
    posted (its answer taken), the connection's GET stream opened."""
    probe = StreamableHttpWire(target, "")
    status, fields, body = await probe.post(orjson.dumps(INITIALIZE))
    connection_id = fields.get("acp-connection-id")
    if status != 200 or connection_id is None:
        raise AssertionError(f"initialize was answered {status}: {body[:200]!r}")
    wire = StreamableHttpWire(target, connection_id)
    await wire.open_events()
    try:
        yield wire
    finally:
        await wire.aclose()

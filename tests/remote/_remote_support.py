"""Helpers for the remote tests: raw HTTP requests to a served agent (``helpers.served_agent``),
Streamable HTTP POSTs and raw SSE event streams."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass

import anyio
import anyio.abc
import orjson
from helpers.served_agent import TOKEN
from helpers.timeouts import TIMEOUT


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes


async def raw_request(port: int, data: bytes) -> RawResponse:
    """Send ``data`` as is on a fresh connection; read one response (until close/length)."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(data)
        buffer = b""
        with anyio.fail_after(TIMEOUT):
            while b"\r\n\r\n" not in buffer:
                try:
                    buffer += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
            head, _, body = buffer.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            while len(body) < length:
                try:
                    body += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
    return RawResponse(status, headers, body)


def request_bytes(
    method: str,
    *,
    target: str = "/acp",
    headers: Sequence[tuple[str, str]] = (),
    body: bytes = b"",
    token: str | None = TOKEN,
) -> bytes:
    """An HTTP/1.1 request with the bearer token unless ``token`` is None."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    lines += [f"{k}: {v}" for k, v in headers]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


UPGRADE = (
    ("Upgrade", "websocket"),
    ("Connection", "Upgrade"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("Sec-WebSocket-Version", "13"),
)

_JSON = ("Content-Type", "application/json")
_EVENTS = ("Accept", "text/event-stream")


def post_bytes(
    connection_id: str | None, message: dict[str, object], session: str | None = None
) -> bytes:
    """A POST of ``message`` with the connection's and session's ids when given."""
    headers: list[tuple[str, str]] = [_JSON]
    if connection_id is not None:
        headers.append(("Acp-Connection-Id", connection_id))
    if session is not None:
        headers.append(("Acp-Session-Id", session))
    return request_bytes("POST", headers=headers, body=orjson.dumps(message))


async def event_stream(
    port: int, connection_id: str, session: str | None, *, rcvbuf: int | None = None
) -> anyio.abc.SocketStream:
    """A GET event stream on a raw socket, its ``200`` head read (nothing after it)."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    if rcvbuf is not None:
        raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    headers = [_EVENTS, ("Acp-Connection-Id", connection_id)]
    if session is not None:
        headers.append(("Acp-Session-Id", session))
    await stream.send(request_bytes("GET", headers=headers))
    head = b""
    while b"\r\n\r\n" not in head:
        head += await stream.receive(1)
    assert head.startswith(b"HTTP/1.1 200"), head
    return stream


async def next_event(stream: anyio.abc.SocketStream, buffer: bytearray) -> dict[str, object]:
    """The next ``data:`` event of a chunked SSE body (chunk framing skipped by line)."""
    while True:
        end = buffer.find(b"\n\n")
        if end >= 0:
            event, buffer[:] = bytes(buffer[:end]), buffer[end + 2 :]
            for line in event.split(b"\n"):
                if line.startswith(b"data: "):
                    return orjson.loads(line[6:])
            continue
        buffer += await stream.receive()

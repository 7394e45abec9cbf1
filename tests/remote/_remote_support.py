"""Helpers for the remote tests: raw HTTP requests to a served agent (``helpers.served_agent``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import anyio
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

"""Helpers for the remote tests: a served scripted agent on a loopback port, raw HTTP."""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime, EngineCapabilities
from accord.remote import AccessPolicy, ServerLimits, serve_remote
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine, ScriptStep
from accord.transports import Transport

TOKEN = "test-token-0123456789abcdef"


@dataclass
class Served:
    """A running server: its port and what its connections did."""

    port: int
    engine: ScriptedEngine
    served: list[Transport] = field(default_factory=list[Transport])

    def url(self, scheme: str = "ws") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/acp"


@asynccontextmanager
async def served_agent(
    turns: Sequence[Sequence[ScriptStep]] = (),
    *,
    limits: ServerLimits | None = None,
    origins: Sequence[str] = (),
    ssl_context: ssl.SSLContext | None = None,
    capabilities: EngineCapabilities | None = None,
) -> AsyncIterator[Served]:
    """Serve a scripted agent (one runtime per connection, one store) on a loopback port."""
    store = MemorySessionStore()
    engine = ScriptedEngine(
        [list(t) for t in turns], capabilities=capabilities or EngineCapabilities()
    )
    state = Served(0, engine)

    async def handler(transport: Transport) -> None:
        state.served.append(transport)
        await AgentRuntime(engine, store=store).serve(transport)

    policy = AccessPolicy.build(TOKEN, origins=origins, loopback=True)
    async with anyio.create_task_group() as tg:
        state.port = await tg.start(
            functools.partial(
                serve_remote,
                handler,
                host="127.0.0.1",
                port=0,
                policy=policy,
                limits=limits,
                ssl_context=ssl_context,
            )
        )
        yield state
        tg.cancel_scope.cancel()


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

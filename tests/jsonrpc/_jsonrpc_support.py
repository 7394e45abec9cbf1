"""Helpers shared by the connection tests: transport pairs, connected pairs, a raw peer.

A "raw peer" is the other end of the transport with no ``Connection`` on it: the test speaks the
wire itself (raw bytes over a pipe, raw objects over memory) to send what a well-behaved peer
never would.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
from helpers.timeouts import TIMEOUT

from accord.jsonrpc import CANCEL_REQUEST_METHOD, Connection
from accord.testing import pipe_transport_pair
from accord.transports import MAX_MESSAGE_BYTES, StreamTransport, Transport, memory_transport_pair


def transports(
    kind: str, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> tuple[Transport, Transport]:
    if kind == "memory":
        return memory_transport_pair()
    return pipe_transport_pair(max_message_bytes=max_message_bytes)


@asynccontextmanager
async def connected(
    kind: str, a: dict[str, Any] | None = None, b: dict[str, Any] | None = None
) -> AsyncGenerator[tuple[Connection, Connection]]:
    """Two connections, A and B, joined by a ``kind`` transport pair."""
    ta, tb = transports(kind)
    with anyio.fail_after(TIMEOUT):
        async with (
            Connection(ta, name="A", **(a or {})) as conn_a,
            Connection(tb, name="B", **(b or {})) as conn_b,
        ):
            yield conn_a, conn_b


@asynccontextmanager
async def raw_peer(
    kind: str, max_message_bytes: int = MAX_MESSAGE_BYTES, **kwargs: Any
) -> AsyncGenerator[tuple[Connection, Transport]]:
    """A connection and the bare transport at the other end, which the test drives."""
    ta, raw = transports(kind, max_message_bytes)
    with anyio.fail_after(TIMEOUT):
        try:
            async with Connection(ta, name="A", **kwargs) as conn:
                yield conn, raw
        finally:
            await raw.aclose()


async def send_raw(raw: Transport, item: Any) -> None:
    """Put ``item`` on the wire as is: bytes (or a JSON line) over a pipe, an object over memory."""
    if isinstance(raw, StreamTransport):
        data = item if isinstance(item, bytes) else orjson.dumps(item) + b"\n"
        await raw._writer.send(data)
    else:
        assert not isinstance(item, bytes), "raw bytes only travel over pipes"
        await raw.send(item)


def request(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def cancel(request_id: Any) -> dict[str, Any]:
    return notification(CANCEL_REQUEST_METHOD, {"requestId": request_id})


async def echo(method: str, params: Any) -> Any:
    if method == "ping":
        return "pong"
    return {"method": method, "params": params}


async def expect_ping_works(raw: Transport, request_id: Any = "ping") -> None:
    """The connection at the other end still answers: the next message is the pong."""
    await send_raw(raw, request(request_id, "ping"))
    assert await raw.receive() == {"jsonrpc": "2.0", "id": request_id, "result": "pong"}

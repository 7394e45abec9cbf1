"""The transport conformance suite, run over every transport pair accord offers in-process."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest

from accord.errors import ConnectionClosed
from accord.testing._transport_check import check_transport, pipe_transport_pair
from accord.transports import MemoryTransport, memory_transport_pair

pytestmark = pytest.mark.anyio


async def test_memory_pair_conforms() -> None:
    await check_transport(memory_transport_pair)


async def test_small_memory_buffer_conforms() -> None:
    await check_transport(lambda: memory_transport_pair(max_buffered_messages=1))


async def test_pipe_pair_conforms() -> None:
    await check_transport(pipe_transport_pair)


async def test_async_factory_accepted() -> None:
    async def make() -> tuple[MemoryTransport, MemoryTransport]:
        await anyio.lowlevel.checkpoint()
        return memory_transport_pair()

    await check_transport(make)


# The suite must catch broken transports, or passing it proves nothing.


class _Truncating(MemoryTransport):
    async def send(self, message: dict[str, Any]) -> None:
        text = str(message.get("result", ""))
        await super().send({**message, "result": text[:65536]} if len(text) > 65536 else message)


class _Unbounded(MemoryTransport):
    """Like the official SDK's transport: an unbounded queue, so a slow reader costs memory."""


class _SilentAfterClose(MemoryTransport):
    async def send(self, message: dict[str, Any]) -> None:
        try:
            await super().send(message)
        except ConnectionClosed:
            pass


def _pair_of(cls: type[MemoryTransport]) -> tuple[MemoryTransport, MemoryTransport]:
    a, b = memory_transport_pair(max_buffered_messages=math.inf if cls is _Unbounded else 256)  # type: ignore[arg-type]
    return (
        cls(a._send_stream, a._receive_stream),
        cls(b._send_stream, b._receive_stream),
    )


@pytest.mark.parametrize(
    ("cls", "failing_check"),
    [
        (_Truncating, "check_large_message"),
        (_Unbounded, "check_backpressure"),
        (_SilentAfterClose, "check_send_to_closed_peer"),
    ],
)
async def test_suite_catches_broken_transports(
    cls: type[MemoryTransport], failing_check: str
) -> None:
    with pytest.raises(AssertionError, match=failing_check):
        await check_transport(lambda: _pair_of(cls))

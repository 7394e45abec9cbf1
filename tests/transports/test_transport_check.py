"""The transport conformance suite, run over every transport pair accord offers in-process."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from accord.errors import ConnectionClosed
from accord.testing import check_transport, pipe_transport_pair
from accord.testing._transport_check import (
    CHECK_TIMEOUT,
    _first_assertion,
    check_backpressure,
    check_close_wakes_own_blocked_send,
    check_large_message,
    check_send_after_own_close,
    check_send_to_closed_peer,
)
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
    """Cuts long strings at 64 KiB, like the official SDK's implicit asyncio line limit."""

    async def send(self, message: dict[str, Any]) -> None:
        result = message.get("result")
        if isinstance(result, dict) and isinstance(result.get("blob"), str):
            message = {**message, "result": {**result, "blob": result["blob"][:65536]}}
        await super().send(message)


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
    ("cls", "check", "message"),
    [
        (_Truncating, check_large_message, "truncated"),
        (_Unbounded, check_backpressure, "never held back"),
        (_Unbounded, check_close_wakes_own_blocked_send, "neither held back nor stopped"),
        (_SilentAfterClose, check_send_to_closed_peer, "did not raise ConnectionClosed"),
        (_SilentAfterClose, check_send_after_own_close, "did not raise ConnectionClosed"),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
async def test_checks_catch_broken_transports(
    cls: type[MemoryTransport], check: Callable[..., Awaitable[None]], message: str
) -> None:
    failure: AssertionError | None = None
    with anyio.fail_after(CHECK_TIMEOUT):
        try:
            await check(lambda: _pair_of(cls))
        except BaseException as exc:  # an AssertionError, maybe inside an exception group
            failure = _first_assertion(exc)
            if failure is None:
                raise
    assert failure is not None, f"{check.__name__} passed a broken transport"
    assert message in str(failure)


@pytest.mark.parametrize("cls", [_Truncating, _Unbounded, _SilentAfterClose])
async def test_check_transport_fails_for_broken_transports(cls: type[MemoryTransport]) -> None:
    with pytest.raises(AssertionError, match=r"^check_\w+: "):
        await check_transport(lambda: _pair_of(cls))

"""``$/cancel_request`` in both directions, over memory and pipes, on both backends."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import orjson
import pytest
from _jsonrpc_support import (
    cancel,
    connected,
    echo,
    expect_ping_works,
    notification,
    raw_peer,
    request,
    send_raw,
)

from accord.jsonrpc import CANCEL_REQUEST_METHOD, on_cancel_request
from accord.transports import StreamTransport

pytestmark = pytest.mark.anyio

# ----------------------------------------------------------------- $/cancel_request


@pytest.mark.parametrize("direction", ["A->B", "B->A"])
async def test_cancelled_caller_cancels_the_peer_handler(kind: str, direction: str) -> None:
    started = anyio.Event()
    cancelled = anyio.Event()

    async def handler(method: str, params: Any) -> Any:
        if method == "ping":
            return "pong"
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise

    async with connected(kind, a={"on_request": handler}, b={"on_request": handler}) as (a, b):
        caller, callee = (a, b) if direction == "A->B" else (b, a)
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def call() -> None:
                with scope:
                    await caller.request("hang")

            tg.start_soon(call)
            await started.wait()
            assert callee.statistics().running_handlers == 1
            scope.cancel()
            await cancelled.wait()
        assert caller.statistics().pending_requests == 0
        # The peer's late -32800 answer is expected and dropped; both sides still work.
        assert await caller.request("ping") == "pong"
        assert await callee.request("ping") == "pong"
        assert callee.statistics().running_handlers == 0


async def test_our_cancelled_caller_sends_cancel_request(kind: str) -> None:
    async with raw_peer(kind) as (conn, raw):
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def call() -> None:
                with scope:
                    await conn.request("slow", {"x": 1})

            tg.start_soon(call)
            sent = await raw.receive()
            assert sent == request(0, "slow", {"x": 1})
            scope.cancel()
        assert await raw.receive() == cancel(0)
        assert conn.statistics().pending_requests == 0
        # A late answer (the peer's -32800) is ignored, and the connection still works.
        await send_raw(
            raw, {"jsonrpc": "2.0", "id": 0, "error": {"code": -32800, "message": "Cancelled"}}
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.request, "next")
            assert await raw.receive() == request(1, "next")
            await send_raw(raw, {"jsonrpc": "2.0", "id": 1, "result": {}})


@pytest.mark.parametrize("request_id", [0, 7, "req-1"], ids=repr)
async def test_peer_cancel_request_is_answered_32800(kind: str, request_id: Any) -> None:
    started = anyio.Event()

    async def hang(method: str, params: Any) -> Any:
        if method == "ping":
            return "pong"
        started.set()
        await anyio.sleep_forever()

    async with raw_peer(kind, on_request=hang) as (conn, raw):
        await send_raw(raw, request(request_id, "hang"))
        await started.wait()
        await send_raw(raw, cancel(request_id))
        assert await raw.receive() == {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": -32800, "message": "Request cancelled"},
        }
        await expect_ping_works(raw)
        assert conn.statistics().running_handlers == 0


async def test_a_handler_with_a_cancel_hook_winds_down_and_answers_itself(kind: str) -> None:
    # on_cancel_request: the notice calls the hook (every time) instead of cancelling the
    # handler, which answers as it ends; outside a handler nothing is registered.
    assert on_cancel_request(lambda: None) is False
    started = anyio.Event()
    asked = anyio.Event()
    calls: list[str] = []

    def wind_down() -> None:
        calls.append("asked")
        asked.set()

    def broken() -> None:
        raise RuntimeError("a hook that fails is logged, the others still run")

    async def handler(method: str, params: Any) -> Any:
        if method == "ping":
            return "pong"
        assert on_cancel_request(broken) and on_cancel_request(wind_down)
        started.set()
        await asked.wait()
        await anyio.lowlevel.checkpoint()  # still running after the notice: not cancelled
        return {"stopped": "on request"}

    async with raw_peer(kind, on_request=handler) as (conn, raw):
        await send_raw(raw, request(7, "work"))
        await started.wait()
        await send_raw(raw, cancel(7))
        answer = {"jsonrpc": "2.0", "id": 7, "result": {"stopped": "on request"}}
        assert await raw.receive() == answer
        await send_raw(raw, cancel(7))  # the request is over: nothing to call
        await expect_ping_works(raw)
        assert conn.statistics().running_handlers == 0
    assert calls == ["asked"]


async def test_cancel_arriving_with_the_request_is_not_lost(kind: str) -> None:
    # Request and cancel in one read (one write on a pipe): the handler has not started yet.
    async def hang(method: str, params: Any) -> Any:
        if method == "ping":
            return "pong"
        await anyio.sleep_forever()

    async with raw_peer(kind, on_request=hang) as (_, raw):
        if isinstance(raw, StreamTransport):
            await send_raw(
                raw, orjson.dumps(request(3, "hang")) + b"\n" + orjson.dumps(cancel(3)) + b"\n"
            )
        else:
            await send_raw(raw, request(3, "hang"))
            await send_raw(raw, cancel(3))
        reply = await raw.receive()
        assert reply["id"] == 3
        assert reply["error"]["code"] == -32800
        await expect_ping_works(raw)


async def test_handler_that_finishes_anyway_answers_once_with_its_result(kind: str) -> None:
    started = anyio.Event()
    release = anyio.Event()

    async def stubborn(method: str, params: Any) -> Any:
        if method == "ping":
            return "pong"
        started.set()
        with anyio.CancelScope(shield=True):
            await release.wait()
        return "finished"

    async with raw_peer(kind, on_request=stubborn) as (_, raw):
        await send_raw(raw, request(1, "work"))
        await started.wait()
        await send_raw(raw, cancel(1))
        await expect_ping_works(raw, "ping-1")  # the cancel has been read and applied
        release.set()
        assert await raw.receive() == {"jsonrpc": "2.0", "id": 1, "result": "finished"}
        await expect_ping_works(raw, "ping-2")  # and no second answer for id 1


@pytest.mark.wire_unchecked("malformed $/cancel_request params on purpose")
@pytest.mark.parametrize(
    "message",
    [
        cancel(999),
        cancel("nope"),
        cancel(None),
        notification(CANCEL_REQUEST_METHOD),
        notification(CANCEL_REQUEST_METHOD, [1]),
        notification(CANCEL_REQUEST_METHOD, {"id": 1}),
    ],
    ids=["unknown", "unknown-string", "null", "no-params", "array", "wrong-key"],
)
async def test_cancel_for_nothing_is_ignored(kind: str, message: dict[str, Any]) -> None:
    async with raw_peer(kind, on_request=echo) as (_, raw):
        await send_raw(raw, message)
        await expect_ping_works(raw)


async def test_cancel_request_is_not_passed_to_the_notification_handler(kind: str) -> None:
    seen: list[str] = []

    async def record(method: str, params: Any) -> None:
        seen.append(method)

    async with raw_peer(kind, on_request=echo, on_notification=record) as (_, raw):
        await send_raw(raw, cancel(1))
        await send_raw(raw, notification("other"))
        await expect_ping_works(raw)
    assert seen == ["other"]

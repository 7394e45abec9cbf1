"""Peer requests answered by reused workers: each handler still runs as in a task of its own.

``Connection`` keeps the worker that answered a request for the next one instead of starting
a task per request (issue 21: the round trip). These tests hold it to what a task per request
gave: context variables a handler sets do not leak into the next request, a cancelled handler
leaves its worker serving, and requests running at once each get a worker.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from _jsonrpc_support import cancel, connected, raw_peer, request, send_raw

pytestmark = pytest.mark.anyio

_seen: ContextVar[str] = ContextVar("seen", default="unset")


async def test_a_context_variable_set_by_one_handler_is_unset_for_the_next(kind: str) -> None:
    async def handler(method: str, params: Any) -> Any:
        before = _seen.get()
        _seen.set(method)
        await anyio.lowlevel.checkpoint()
        return before

    async with connected(kind, b={"on_request": handler}) as (a, _):
        answers = [await a.request(f"call-{n}") for n in range(20)]
    assert answers == ["unset"] * 20


async def test_a_cancelled_handler_leaves_its_worker_answering(kind: str) -> None:
    started = anyio.Event()

    async def handler(method: str, params: Any) -> Any:
        before = _seen.get()
        _seen.set(method)
        if method == "hang":
            started.set()
            await anyio.sleep_forever()
        return before

    async with raw_peer(kind, on_request=handler) as (_, raw):
        await send_raw(raw, request(1, "first"))
        assert await raw.receive() == {"jsonrpc": "2.0", "id": 1, "result": "unset"}
        await send_raw(raw, request(2, "hang"))
        await started.wait()
        await send_raw(raw, cancel(2))
        answer: Any = await raw.receive()
        assert answer["id"] == 2 and answer["error"]["code"] == -32800
        for request_id in range(3, 8):
            await send_raw(raw, request(request_id, "after"))
            assert await raw.receive() == {"jsonrpc": "2.0", "id": request_id, "result": "unset"}


async def test_requests_running_at_once_each_get_a_worker_after_sequential_ones(
    kind: str,
) -> None:
    gate = anyio.Event()
    running = 0
    most = 0

    async def handler(method: str, params: Any) -> Any:
        nonlocal running, most
        if method == "wait":
            running += 1
            most = max(most, running)
            if running == 10:
                gate.set()
            await gate.wait()
            running -= 1
        return params["n"]

    async with connected(kind, b={"on_request": handler}) as (a, _):
        for n in range(5):  # a worker is kept from these
            assert await a.request("quick", {"n": n}) == n
        results: dict[int, Any] = {}

        async def call(n: int) -> None:
            results[n] = await a.request("wait", {"n": n})

        async with anyio.create_task_group() as tg:
            for n in range(10):
                tg.start_soon(call, n)
        assert results == {n: n for n in range(10)}
        assert most == 10
        assert await a.request("quick", {"n": 99}) == 99


async def test_calls_cancelled_around_their_answer_leave_the_connection_working(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The caller waits on a one-shot signal (the loop's own future on asyncio): cancelling
    # the caller cancels that future, and an answer read in the same turn must then be
    # dropped, not set on it (which would raise in the reader). Cancel after 0-7 turns of
    # the loop, so some calls are cancelled before the answer, some as it arrives, some
    # after; every call either returns its answer or is cancelled, and the next one works.
    async def handler(method: str, params: Any) -> Any:
        return method

    async with connected(kind, b={"on_request": handler}) as (a, _):
        for attempt in range(64):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:

                    async def cancel_later(turns: int = attempt % 8) -> None:
                        for _ in range(turns):
                            await anyio.lowlevel.checkpoint()
                        scope.cancel()

                    group.start_soon(cancel_later)
                    assert await a.request(f"call-{attempt}") == f"call-{attempt}"
            assert await a.request("after") == "after"
        assert a.statistics().pending_requests == 0
    assert not [record for record in caplog.records if record.levelname == "ERROR"]

"""Answers and requests handed over as the transport reads them (``set_direct_receiver``).

Over a pipe on asyncio, the connection takes an answer to its call, or a peer's request, in
the transport's read callback instead of in its read loop. These tests hold it to what the
read loop guarantees: every message is seen once, in order, and a request that finds every
handler slot taken still waits for one.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import pytest
from _jsonrpc_support import connected

from accord.jsonrpc import set_wire_observer

pytestmark = pytest.mark.anyio


async def settle() -> None:
    """Let the event loop turn until what was written has been read and its tasks have run.

    ``wait_all_tasks_blocked`` is not enough: a message still in the pipe, which the loop's
    read callback has yet to read, leaves every task blocked.
    """
    for _ in range(20):
        await anyio.wait_all_tasks_blocked()


async def test_the_wire_observer_sees_each_message_once(kind: str) -> None:
    seen: list[tuple[str, Any]] = []

    def observe(direction: Literal["sent", "received"], message: Any) -> None:
        seen.append((direction, message.get("id"), message.get("method")))

    async def answer(method: str, params: Any) -> Any:
        return {"n": params["n"]}

    previous = set_wire_observer(observe)
    try:
        async with connected(kind, b={"on_request": answer}) as (a, _):
            for n in range(20):
                assert await a.request("_test/echo", {"n": n}) == {"n": n}
    finally:
        set_wire_observer(previous)
    # Each of the 20 requests is sent once and received once, and so is each answer.
    for request_id in range(20):
        assert seen.count(("sent", request_id, "_test/echo")) == 1
        assert seen.count(("received", request_id, "_test/echo")) == 1
        assert seen.count(("sent", request_id, None)) == 1
        assert seen.count(("received", request_id, None)) == 1
    assert len(seen) == 80


async def test_requests_beyond_the_handler_slots_wait_and_keep_their_order(kind: str) -> None:
    gate = anyio.Event()
    started: list[int] = []

    async def gated(method: str, params: Any) -> Any:
        started.append(params["n"])
        if params["n"] == 0:
            await gate.wait()
        return params["n"]

    results: list[int] = []
    async with connected(kind, b={"on_request": gated, "max_concurrent_requests": 1}) as (a, b):

        async def call(n: int) -> None:
            results.append(await a.request("_test/work", {"n": n}))

        async with anyio.create_task_group() as tg:
            for n in (0, 1, 2):
                tg.start_soon(call, n)
                await settle()
            assert started == [0], "the one slot is taken: the others wait for it"
            assert b.statistics().running_handlers == 1
            gate.set()
    assert started == [0, 1, 2]
    assert sorted(results) == [0, 1, 2]  # trio wakes the callers in any order

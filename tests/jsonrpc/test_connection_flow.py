"""Ordering, backpressure and the response barrier of ``Connection``, over memory and pipes."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from _jsonrpc_support import (
    connected,
    notification,
    raw_peer,
    request,
    send_raw,
)

from accord.errors import InvalidParams
from accord.jsonrpc import Connection, after_reply
from accord.transports import StreamTransport
from accord.transports._memory import MEMORY_BUFFER_MESSAGES
from accord.transports._stream import READ_SIZE

pytestmark = pytest.mark.anyio

# ----------------------------------------------------------------- ordering and backpressure


async def test_notifications_arrive_in_order_with_an_awaiting_handler(kind: str) -> None:
    total = 20_000
    seen: list[int] = []

    async def on_notification(method: str, params: Any) -> None:
        for _ in range(params["i"] % 3 + 1):  # every handler awaits, some several times
            await anyio.lowlevel.checkpoint()
        seen.append(params["i"])

    async def count(method: str, params: Any) -> Any:
        return len(seen)

    async with connected(kind, b={"on_notification": on_notification, "on_request": count}) as (
        a,
        b,
    ):
        for i in range(total):
            await a.notify("test/update", {"i": i})
        # A request from the peer is handled only after its earlier notifications.
        assert await a.request("count") == total
        assert b.statistics().notifications_handled == total
    assert seen == list(range(total))


async def test_slow_receiver_slows_the_sender(kind: str) -> None:
    buffer = 4
    gate = anyio.Event()
    seen: list[int] = []

    async def slow(method: str, params: Any) -> None:
        await gate.wait()
        seen.append(params["i"])

    async def count(method: str, params: Any) -> Any:
        return len(seen)

    probe = 10_000
    sent = 0
    b_kwargs = {"on_notification": slow, "on_request": count, "max_buffered_notifications": buffer}
    async with connected(kind, b=b_kwargs) as (a, b):

        async def flood() -> None:
            nonlocal sent
            for i in range(probe):
                await a.notify("test/update", {"i": i})
                sent += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(flood)
            # Let the pipes settle: a readiness event the loop has not processed yet (the
            # reader's last read freeing room) can still move the sender once more.
            await anyio.wait_all_tasks_blocked()
            await anyio.sleep(0.05)
            await anyio.wait_all_tasks_blocked()
            held = sent
            stats = b.statistics()
            # One in the handler, ``buffer`` queued, one held by the reader: nothing more.
            assert stats.buffered_notifications <= buffer + 2
            assert stats.notifications_handled == 0
            if kind == "memory":
                assert held <= MEMORY_BUFFER_MESSAGES + buffer + 2
            else:
                transport = b._transport
                assert isinstance(transport, StreamTransport)
                assert transport.buffered_bytes <= READ_SIZE
                assert held < 5_000, f"{held} notifications in flight over a pipe"
            await anyio.sleep(0.05)
            await anyio.wait_all_tasks_blocked()
            assert sent == held, "the sender kept going while the receiver was stuck"
            gate.set()
        assert await a.request("count") == probe
    assert seen == list(range(probe))


async def test_response_waits_for_notifications_sent_before_it(kind: str) -> None:
    gate = anyio.Event()
    log: list[str] = []
    conns: dict[str, Connection] = {}

    async def a_notification(method: str, params: Any) -> None:
        await gate.wait()
        log.append(params["n"])

    async def b_request(method: str, params: Any) -> Any:
        for n in ("n0", "n1", "n2"):
            await conns["B"].notify("test/update", {"n": n})
        return "done"

    async with connected(
        kind, a={"on_notification": a_notification}, b={"on_request": b_request}
    ) as (
        a,
        b,
    ):
        conns["B"] = b

        async def call() -> None:
            result = await a.request("test/prompt")
            log.append(result)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            assert log == [], "the result must wait for the notifications sent before it"
            assert a.statistics().buffered_notifications == 3
            gate.set()
    assert log == ["n0", "n1", "n2", "done"]


async def test_request_from_a_notification_handler_does_not_deadlock(kind: str) -> None:
    answers: list[Any] = []
    conns: dict[str, Connection] = {}

    async def a_notification(method: str, params: Any) -> None:
        answers.append(await conns["A"].request("question", params))

    async def b_request(method: str, params: Any) -> Any:
        if method == "question":
            return params["q"] * 2
        await conns["B"].notify("ask", {"q": 21})
        return "asked"

    async with connected(
        kind, a={"on_notification": a_notification}, b={"on_request": b_request}
    ) as (
        a,
        b,
    ):
        conns.update(A=a, B=b)
        assert await a.request("start") == "asked"
    assert answers == [42]


async def test_concurrent_peer_requests_are_bounded(kind: str) -> None:
    gate = anyio.Event()
    peak = 0
    running = 0

    async def gated(method: str, params: Any) -> Any:
        nonlocal peak, running
        running += 1
        peak = max(peak, running)
        await gate.wait()
        running -= 1
        return params

    b_kwargs = {"on_request": gated, "max_concurrent_requests": 2}
    results: list[Any] = []
    async with connected(kind, b=b_kwargs) as (a, b):

        async def call(n: int) -> None:
            results.append(await a.request("work", [n]))

        async with anyio.create_task_group() as tg:
            for n in range(5):
                tg.start_soon(call, n)
            await anyio.wait_all_tasks_blocked()
            assert b.statistics().running_handlers == 2
            assert a.statistics().pending_requests == 5
            gate.set()
    assert peak == 2
    assert sorted(results) == [[n] for n in range(5)]


# ----------------------------------------------------------------- after the reply


async def test_work_registered_with_after_reply_follows_the_answer_on_the_wire(kind: str) -> None:
    holder: list[Connection] = []

    async def handler(method: str, params: Any) -> Any:
        conn = holder[0]

        async def announce() -> None:
            await conn.notify("first", {"n": 1})
            await conn.notify("second", {"n": 2})

        assert after_reply(announce)
        return {"created": params["name"]}

    async with raw_peer(kind, on_request=handler) as (conn, raw):
        holder.append(conn)
        await send_raw(raw, request(7, "make", {"name": "s"}))
        received = [await raw.receive() for _ in range(3)]
    assert received == [
        {"jsonrpc": "2.0", "id": 7, "result": {"created": "s"}},
        notification("first", {"n": 1}),
        notification("second", {"n": 2}),
    ]


async def test_after_reply_runs_after_an_error_answer_and_survives_a_failing_callback(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    holder: list[Connection] = []

    async def handler(method: str, params: Any) -> Any:
        conn = holder[0]

        async def broken() -> None:
            raise RuntimeError("boom")

        async def told() -> None:
            await conn.notify("told")

        after_reply(broken)
        after_reply(told)
        raise InvalidParams("no")

    async with raw_peer(kind, on_request=handler) as (conn, raw):
        holder.append(conn)
        await send_raw(raw, request(1, "make"))
        answer = await raw.receive()
        assert isinstance(answer, dict) and answer["error"]["code"] == -32602
        assert await raw.receive() == notification("told")
    assert "after-reply work for 'make' failed" in caplog.text


def test_after_reply_outside_a_request_handler_registers_nothing() -> None:
    assert after_reply(anyio.lowlevel.checkpoint) is False

"""The async ``Connection``: requests, responses, handler errors, end of stream, size.

Every test runs over the in-memory pair and over real OS pipes (the ``kind`` fixture) and on
both backends, so the memory pair is held to what NDJSON over a pipe does. Cancellation,
ordering and bad input have their own ``test_connection_*.py`` files."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.lowlevel
import orjson
import pydantic
import pytest
from _jsonrpc_support import (
    connected,
    echo,
    expect_ping_works,
    notification,
    raw_peer,
    request,
    send_raw,
    transports,
)
from helpers.timeouts import TIMEOUT

from accord.errors import (
    AuthRequired,
    ConnectionClosed,
    InternalError,
    InvalidParams,
    MethodNotFound,
    RequestCancelled,
    RequestError,
    ResourceNotFound,
)
from accord.jsonrpc import Connection
from accord.transports import StreamTransport

pytestmark = pytest.mark.anyio

# ----------------------------------------------------------------- requests and responses


async def test_concurrent_requests_both_directions_correlate(kind: str) -> None:
    async def scrambled(method: str, params: Any) -> Any:
        for _ in range(params["n"] * 7 % 5):  # finish in a different order than started
            await anyio.lowlevel.checkpoint()
        return {"method": method, "n": params["n"]}

    handlers = {"on_request": scrambled}
    results: dict[tuple[str, int], Any] = {}
    async with connected(kind, a=handlers, b=handlers) as (a, b):

        async def call(side: str, conn: Connection, n: int) -> None:
            results[side, n] = await conn.request(f"from-{side}", {"n": n})

        async with anyio.create_task_group() as tg:
            for n in range(50):
                tg.start_soon(call, "A", a, n)
                tg.start_soon(call, "B", b, n)
        assert a.statistics().pending_requests == 0
        assert b.statistics().pending_requests == 0
    assert results == {
        (side, n): {"method": f"from-{side}", "n": n} for side in "AB" for n in range(50)
    }


async def test_handler_calls_the_peer_while_the_peer_calls_us(kind: str) -> None:
    conns: dict[str, Connection] = {}

    def bouncer(side: str) -> Any:
        async def bounce(method: str, params: Any) -> Any:
            assert method == "bounce"
            if params["n"] == 0:
                return [side]
            return [side, *await conns[side].request("bounce", {"n": params["n"] - 1})]

        return bounce

    async with connected(kind, a={"on_request": bouncer("A")}, b={"on_request": bouncer("B")}) as (
        a,
        b,
    ):
        conns.update(A=a, B=b)
        results: dict[str, Any] = {}

        async def run(name: str, conn: Connection) -> None:
            results[name] = await conn.request("bounce", {"n": 5})

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "A", a)
            tg.start_soon(run, "B", b)
    # A's request is handled by B, whose handler calls A, whose handler calls B, ...
    assert results == {"A": ["B", "A", "B", "A", "B", "A"], "B": ["A", "B", "A", "B", "A", "B"]}


@pytest.mark.parametrize("request_id", [0, 5, "abc", "", None], ids=repr)
async def test_peer_ids_are_echoed_with_their_type(kind: str, request_id: Any) -> None:
    async with raw_peer(kind, on_request=echo) as (_, raw):
        await send_raw(raw, request(request_id, "m", {"x": 1}))
        reply = await raw.receive()
        assert reply == {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"method": "m", "params": {"x": 1}},
        }
        assert type(reply["id"]) is type(request_id)


async def test_our_ids_start_at_zero(kind: str) -> None:
    async with raw_peer(kind) as (conn, raw), anyio.create_task_group() as tg:
        tg.start_soon(conn.request, "first")
        assert await raw.receive() == request(0, "first")
        await send_raw(raw, {"jsonrpc": "2.0", "id": 0, "result": None})


async def test_none_result_is_sent_as_empty_object(kind: str) -> None:
    async def nothing(method: str, params: Any) -> None:
        return None

    async with raw_peer(kind, on_request=nothing) as (_, raw):
        await send_raw(raw, request(1, "m"))
        assert await raw.receive() == {"jsonrpc": "2.0", "id": 1, "result": {}}


# ----------------------------------------------------------------- handler errors


@pytest.mark.parametrize(
    "error",
    [
        InvalidParams("bad field", {"field": "cwd"}),
        ResourceNotFound("no such session", {"sessionId": "s-1"}),
        AuthRequired(),
        MethodNotFound(data={"method": "x"}),
        RequestCancelled("gave up"),
        RequestError("custom", {"detail": [1, "two"]}, code=-32099),
    ],
    ids=lambda e: type(e).__name__ + str(e.code),
)
async def test_request_error_keeps_code_message_and_data(kind: str, error: RequestError) -> None:
    async def fail(method: str, params: Any) -> Any:
        raise error

    async with connected(kind, b={"on_request": fail}) as (a, _):
        with pytest.raises(RequestError) as info:
            await a.request("m")
    assert type(info.value) is type(error)
    assert (info.value.code, info.value.message, info.value.data) == (
        error.code,
        error.message,
        error.data,
    )


async def test_crash_is_internal_error_logged_locally_not_on_the_wire(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def crash(method: str, params: Any) -> Any:
        if method == "ping":
            return "pong"
        raise ValueError("database password rejected")

    with caplog.at_level(logging.ERROR, logger="accord.jsonrpc"):
        async with raw_peer(kind, on_request=crash) as (_, raw):
            await send_raw(raw, request(1, "test/read_file", {"path": "/x"}))
            reply = await raw.receive()
            await expect_ping_works(raw)
    assert reply == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32603,
            "message": "Internal error",
            "data": {"error": "ValueError: database password rejected"},
        },
    }
    (record,) = [r for r in caplog.records if r.exc_info]
    assert "test/read_file" in record.getMessage()
    assert "Traceback" in caplog.text
    assert "in crash" in caplog.text, "the local log carries the handler's frames"


async def test_crash_reaches_the_caller_as_internal_error(kind: str) -> None:
    async def crash(method: str, params: Any) -> Any:
        raise KeyError("k")

    async with connected(kind, b={"on_request": crash}) as (a, _):
        with pytest.raises(InternalError) as info:
            await a.request("m")
        assert info.value.code == -32603
        assert info.value.data == {"error": "KeyError: 'k'"}
        with pytest.raises(InternalError):
            await a.request("again")


async def test_invalid_params_name_the_field(kind: str) -> None:
    class NewSession(pydantic.BaseModel):
        cwd: str
        mcp_servers: list[str]

    async def handler(method: str, params: Any) -> Any:
        return NewSession.model_validate(params).cwd

    async with connected(kind, b={"on_request": handler}) as (a, _):
        with pytest.raises(InvalidParams) as info:
            await a.request("test/new", {"cwd": 3})
        assert await a.request("test/new", {"cwd": "/w", "mcp_servers": []}) == "/w"
    assert info.value.code == -32602
    fields = {problem["field"] for problem in info.value.data["errors"]}
    assert fields == {"cwd", "mcp_servers"}


@pytest.mark.parametrize("method", ["unknown/method", "_vendor/extension", ""])
async def test_unknown_method_without_handler(kind: str, method: str) -> None:
    async with connected(kind) as (a, _):
        with pytest.raises(MethodNotFound) as info:
            await a.request(method, {"x": 1})
    assert info.value.code == -32601
    assert info.value.data == {"method": method}


async def test_unknown_notifications_are_ignored(kind: str) -> None:
    async with raw_peer(kind, on_request=echo) as (conn, raw):
        for method in ["_vendor/unknown", "unknown/thing", "test/update", ""]:
            await send_raw(raw, notification(method, {"x": 1}))
        await send_raw(raw, notification("no-params"))
        await expect_ping_works(raw)  # no error answer was sent in between
        assert conn.statistics().notifications_handled == 5


async def test_notification_handler_crash_is_logged_and_order_continues(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[int] = []

    async def handler(method: str, params: Any) -> None:
        seen.append(params["i"])
        if params["i"] == 1:
            raise RuntimeError("notification handler bug")

    with caplog.at_level(logging.ERROR, logger="accord.jsonrpc"):
        async with raw_peer(kind, on_request=echo, on_notification=handler) as (_, raw):
            for i in range(3):
                await send_raw(raw, notification("n", {"i": i}))
            await expect_ping_works(raw)
    assert seen == [0, 1, 2]
    assert "notification handler bug" in caplog.text
    assert "Traceback" in caplog.text


async def test_non_json_result_is_internal_error_and_connection_lives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Only over a pipe: the memory pair does not serialize, so it cannot notice (see report).
    async def handler(method: str, params: Any) -> Any:
        if method == "bad-result":
            return {"value": object()}
        if method == "bad-error-data":
            raise InvalidParams("bad", data={"value": object()})
        return "pong"

    with caplog.at_level(logging.ERROR, logger="accord.jsonrpc"):
        async with raw_peer("pipe", on_request=handler) as (_, raw):
            for request_id, method in [(1, "bad-result"), (2, "bad-error-data")]:
                await send_raw(raw, request(request_id, method))
                reply = await raw.receive()
                assert reply["id"] == request_id
                assert reply["error"]["code"] == -32603
                assert "Traceback" not in str(reply)
            await expect_ping_works(raw)
    assert "Traceback" in caplog.text


# ----------------------------------------------------------------- end of stream


async def test_eof_fails_every_pending_request_promptly(kind: str) -> None:
    errors: list[BaseException] = []
    async with raw_peer(kind) as (conn, raw):

        async def call(n: int) -> None:
            try:
                await conn.request("never-answered", {"n": n})
            except ConnectionClosed as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            for n in range(5):
                tg.start_soon(call, n)
            for _ in range(5):
                await raw.receive()
            assert conn.statistics().pending_requests == 5
            await raw.aclose()
        assert len(errors) == 5
        assert all("closed the connection" in str(error) for error in errors)
        stats = conn.statistics()
        assert stats.closed
        assert stats.pending_requests == 0
        assert conn.closed
        assert isinstance(conn.close_reason, ConnectionClosed)
        with pytest.raises(ConnectionClosed):
            await conn.request("after-eof")
        with pytest.raises(ConnectionClosed):
            await notify_until_it_fails(conn)


async def notify_until_it_fails(conn: Connection) -> None:
    for _ in range(64):  # a pipe may take a first write into its buffer; it must fail soon
        await conn.notify("after-eof", {"pad": "x" * 4096})


async def test_leaving_the_block_fails_pending_requests_of_other_tasks(kind: str) -> None:
    errors: list[BaseException] = []
    ta, raw = transports(kind)
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg, Connection(ta) as conn:

            async def call() -> None:
                try:
                    await conn.request("never-answered")
                except ConnectionClosed as exc:
                    errors.append(exc)

            tg.start_soon(call)
            await raw.receive()
        await raw.aclose()
    assert len(errors) == 1


async def test_final_message_without_newline_before_eof_is_answered(kind: str) -> None:
    async with raw_peer(kind, on_request=echo) as (conn, raw):
        if isinstance(raw, StreamTransport):
            await send_raw(raw, orjson.dumps(request(1, "last")))  # no trailing newline
            await raw._writer.aclose()  # half-close: the peer can still read our answer
        else:
            await send_raw(raw, request(1, "last"))
            await raw._send_stream.aclose()
        assert await raw.receive() == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"method": "last", "params": None},
        }
        await conn.wait_closed()


async def test_wait_closed_waits_for_work_the_peer_started(kind: str) -> None:
    gate = anyio.Event()
    handled: list[str] = []

    async def on_notification(method: str, params: Any) -> None:
        await gate.wait()
        handled.append(method)

    async def on_request(method: str, params: Any) -> Any:
        await gate.wait()
        handled.append(method)
        return "ok"

    async with raw_peer(kind, on_request=on_request, on_notification=on_notification) as (
        conn,
        raw,
    ):
        for n in range(3):
            await send_raw(raw, notification(f"n{n}"))
        await send_raw(raw, request(1, "r"))
        await raw.aclose()
        done = anyio.Event()

        async def wait() -> None:
            await conn.wait_closed()
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert conn.closed, "EOF was seen"
            assert not done.is_set(), "wait_closed returned with work outstanding"
            stats = conn.statistics()
            assert stats.buffered_notifications == 3
            assert stats.running_handlers == 1
            gate.set()
        assert handled == ["n0", "n1", "n2", "r"]
        assert conn.statistics().running_handlers == 0


async def test_wait_closed_returns_once_the_connection_is_closed_locally(kind: str) -> None:
    ta, raw = transports(kind)
    returned = anyio.Event()
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg, Connection(ta) as conn:

            async def wait() -> None:
                await conn.wait_closed()
                returned.set()

            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert not returned.is_set()
        await raw.aclose()
    assert returned.is_set()


async def test_no_tasks_left_behind(kind: str) -> None:
    before = {task.id for task in anyio.get_running_tasks()}
    started = anyio.Event()
    errors: list[BaseException] = []

    async def hang(method: str, params: Any) -> Any:
        started.set()
        await anyio.sleep_forever()

    async def block(method: str, params: Any) -> None:
        await anyio.sleep_forever()

    b_handlers = {"on_request": hang, "on_notification": block}
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg, connected(kind, b=b_handlers) as (a, _):

            async def call() -> None:
                try:
                    await a.request("hang")
                except ConnectionClosed as exc:
                    errors.append(exc)

            tg.start_soon(call)
            await started.wait()
            for _ in range(10):
                await a.notify("stuck")
    assert len(errors) == 1
    assert {task.id for task in anyio.get_running_tasks()} == before


async def test_statistics(kind: str) -> None:
    gate = anyio.Event()

    async def gated(method: str, params: Any) -> Any:
        await gate.wait()
        return method

    async with connected(kind, b={"on_request": gated}) as (a, b):
        fresh = a.statistics()
        assert (fresh.pending_requests, fresh.running_handlers, fresh.closed) == (0, 0, False)
        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(a.request, f"r{n}")
            await anyio.wait_all_tasks_blocked()
            assert a.statistics().pending_requests == 3
            assert b.statistics().running_handlers == 3
            gate.set()
        assert a.statistics().pending_requests == 0
        assert b.statistics().running_handlers == 0


# ----------------------------------------------------------------- size


async def test_one_megabyte_message_passes_intact(kind: str) -> None:
    blob = "0123456789abcdef\u00e9\n\U0001f600" * (1024 * 1024 // 19)
    received: list[Any] = []

    async def on_notification(method: str, params: Any) -> None:
        received.append(params)

    async with connected(kind, a={"on_notification": on_notification}, b={"on_request": echo}) as (
        a,
        b,
    ):
        result = await a.request("echo", {"blob": blob})
        await b.notify("big", {"blob": blob})
        assert await a.request("ping") == "pong"  # ... after the notification was handled
    assert result == {"method": "echo", "params": {"blob": blob}}
    assert received == [{"blob": blob}]

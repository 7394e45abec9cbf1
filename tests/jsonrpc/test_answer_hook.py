"""``Connection.request(..., on_answer=hook)``: the answer's place among the notifications.

The hook runs in notification order: after the handlers of every notification that arrived
before the answer, before the handler of any that arrived after it, and before ``request``
returns. A client uses it to close a prompt turn to later updates (``accord.client``).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from _jsonrpc_support import notification, raw_peer, send_raw
from helpers.timeouts import QUIET

pytestmark = pytest.mark.anyio


async def _answer_between_updates(raw: Any, request_id: Any) -> None:
    """Two updates, the answer, two more: sent back to back (one read on a pipe)."""
    for index in (1, 2):
        await send_raw(raw, notification("test/update", {"i": index}))
    await send_raw(raw, {"jsonrpc": "2.0", "id": request_id, "result": "done"})
    for index in (3, 4):
        await send_raw(raw, notification("test/update", {"i": index}))


async def test_the_hook_runs_after_earlier_notifications_and_before_later_ones(
    kind: str,
) -> None:
    seen: list[Any] = []
    all_four = anyio.Event()

    async def on_notification(method: str, params: Any) -> None:
        seen.append(params["i"])
        if len(seen) == 5:
            all_four.set()

    async with raw_peer(kind, on_notification=on_notification) as (conn, raw):
        async with anyio.create_task_group() as tg:
            result: list[Any] = []

            async def call() -> None:
                result.append(
                    await conn.request("test/call", {}, on_answer=lambda: seen.append("answer"))
                )
                result.append(list(seen))  # what had happened when request() returned

            tg.start_soon(call)
            sent = await raw.receive()
            await _answer_between_updates(raw, sent["id"])
            await all_four.wait()
        assert seen == [1, 2, "answer", 3, 4]
        assert result[0] == "done"
        assert result[1][:3] == [1, 2, "answer"]


async def test_the_hook_runs_for_an_error_answer_too(kind: str) -> None:
    calls: list[str] = []
    async with raw_peer(kind) as (conn, raw):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                with pytest.raises(Exception, match="nope"):
                    await conn.request("test/call", {}, on_answer=lambda: calls.append("hook"))
                calls.append("returned")

            tg.start_soon(call)
            sent = await raw.receive()
            error = {"code": -32000, "message": "nope"}
            await send_raw(raw, {"jsonrpc": "2.0", "id": sent["id"], "error": error})
        assert calls == ["hook", "returned"]


async def test_a_cancelled_call_never_runs_its_hook(kind: str) -> None:
    calls: list[str] = []
    async with raw_peer(kind) as (conn, raw):
        with anyio.move_on_after(QUIET):  # the peer never answers: the caller gives up
            await conn.request("test/call", {}, on_answer=lambda: calls.append("hook"))
        sent = await raw.receive()
        assert sent["method"] == "test/call"
        assert (await raw.receive())["method"] == "$/cancel_request"
        # The late answer finds no caller: no hook, and the connection still works.
        await send_raw(raw, {"jsonrpc": "2.0", "id": sent["id"], "result": "late"})
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.request, "test/again", {})
            again = await raw.receive()
            await send_raw(raw, {"jsonrpc": "2.0", "id": again["id"], "result": 1})
    assert calls == []


async def test_a_failing_hook_is_logged_and_the_answer_still_returned(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> None:
        raise RuntimeError("hook bug")

    result: list[Any] = []
    with caplog.at_level(logging.ERROR, logger="accord.jsonrpc"):
        async with raw_peer(kind) as (conn, raw), anyio.create_task_group() as tg:

            async def call() -> None:
                result.append(await conn.request("test/call", {}, on_answer=broken))

            tg.start_soon(call)
            sent = await raw.receive()
            await send_raw(raw, {"jsonrpc": "2.0", "id": sent["id"], "result": "ok"})
    assert result == ["ok"]
    assert "hook bug" in caplog.text


async def test_a_peer_cannot_trigger_a_hook_by_naming_its_marker(kind: str) -> None:
    """The hook's queue entry is an object of its own: no wire method string is it."""
    seen: list[Any] = []
    got = anyio.Event()

    async def on_notification(method: str, params: Any) -> None:
        seen.append(method)
        got.set()

    async with raw_peer(kind, on_notification=on_notification) as (_conn, raw):
        await send_raw(raw, notification("(answer hook)", {}))
        await got.wait()
    assert seen == ["(answer hook)"]

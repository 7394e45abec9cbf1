"""Bad input on the wire: every malformed message is answered and the connection lives on."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.lowlevel
import orjson
import pytest
from _jsonrpc_support import (
    echo,
    expect_ping_works,
    raw_peer,
    request,
    send_raw,
)

from accord.errors import (
    InvalidRequest,
)
from accord.transports import StreamTransport

pytestmark = pytest.mark.anyio

# ----------------------------------------------------------------- bad input on the wire

STRUCTURED_GARBAGE = [
    ([request(1, "ping")], -32600, None),
    ([], -32600, None),
    ("just a string", -32600, None),
    (42, -32600, None),
    (None, -32600, None),
    ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, -32600, 1),
    ({"id": "x", "method": "ping"}, -32600, "x"),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600, None),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, -32600, None),
    ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, -32600, None),
    ({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": "x"}, -32600, 2),
    ({"jsonrpc": "2.0", "id": 3, "method": 5}, -32600, 3),
    ({"jsonrpc": "2.0", "id": 4}, -32600, None),
    ({}, -32600, None),
]
STRUCTURED_IDS = [
    "batch",
    "empty-batch",
    "string",
    "number",
    "null",
    "jsonrpc-1.0",
    "no-jsonrpc",
    "bool-id",
    "float-id",
    "array-id",
    "string-params",
    "number-method",
    "id-only",
    "empty-object",
]


@pytest.mark.wire_unchecked("garbage frames on purpose")
@pytest.mark.parametrize(("garbage", "code", "reply_id"), STRUCTURED_GARBAGE, ids=STRUCTURED_IDS)
async def test_garbage_is_answered_and_the_connection_lives(
    kind: str, garbage: Any, code: int, reply_id: Any
) -> None:
    async with raw_peer(kind, on_request=echo) as (conn, raw):
        await send_raw(raw, garbage)
        reply = await raw.receive()
        assert reply["id"] == reply_id
        assert reply["error"]["code"] == code
        assert isinstance(reply["error"]["data"], str)
        await expect_ping_works(raw)
        assert not conn.closed


@pytest.mark.wire_unchecked("garbage frames on purpose")
@pytest.mark.parametrize(
    "line",
    [
        b"not json at all\n",
        b'{"jsonrpc": "2.0", "id": 1, "method": \n',
        b"\xff\xfe\xfd\n",
        b"{'jsonrpc': '2.0'}\n",
        b"\x00\n",
    ],
    ids=["text", "truncated", "binary", "single-quotes", "nul"],
)
async def test_invalid_json_is_answered_32700_with_null_id(line: bytes) -> None:
    async with raw_peer("pipe", on_request=echo) as (_, raw):
        await send_raw(raw, line)
        reply = await raw.receive()
        assert reply["id"] is None
        assert reply["error"]["code"] == -32700
        assert reply["error"]["message"] == "Parse error"
        await expect_ping_works(raw)


@pytest.mark.wire_unchecked("garbage frames on purpose")
async def test_a_burst_of_garbage_in_one_write_gets_one_answer_each() -> None:
    lines = [b"oops\n", b"[]\n", b"\n", b"  \r\n", b"\xff\n", b'{"jsonrpc": "2.0"}\n']
    async with raw_peer("pipe", on_request=echo) as (_, raw):
        await send_raw(raw, b"".join(lines) + orjson.dumps(request(9, "ping")) + b"\r\n")
        codes = [(await raw.receive())["error"]["code"] for _ in range(4)]
        assert codes == [-32700, -32600, -32700, -32600]  # blank lines are not frames
        assert await raw.receive() == {"jsonrpc": "2.0", "id": 9, "result": "pong"}


@pytest.mark.wire_unchecked("stray responses on purpose")
async def test_response_for_unknown_id_is_ignored(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="accord.jsonrpc"):
        async with raw_peer(kind, on_request=echo) as (_, raw):
            await send_raw(raw, {"jsonrpc": "2.0", "id": 12345, "result": {}})
            await send_raw(
                raw, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}
            )
            await expect_ping_works(raw)
    assert "unknown request id 12345" in caplog.text


@pytest.mark.wire_unchecked("malformed responses on purpose")
@pytest.mark.parametrize(
    "answer",
    [
        {"error": "oops"},
        {"error": None},
        {"result": 1, "error": {"code": -1, "message": "m"}},
        {"result": {}, "jsonrpc": "1.0"},
    ],
    ids=["string-error", "null-error", "result-and-error", "wrong-jsonrpc"],
)
async def test_malformed_answer_fails_the_call_instead_of_hanging(
    kind: str, answer: dict[str, Any]
) -> None:
    async with raw_peer(kind) as (conn, raw):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                with pytest.raises(InvalidRequest, match="malformed"):
                    await conn.request("m")

            tg.start_soon(call)
            sent = await raw.receive()
            await send_raw(raw, {"jsonrpc": "2.0", "id": sent["id"], **answer})
        assert conn.statistics().pending_requests == 0


@pytest.mark.wire_unchecked("a duplicate request id on purpose")
async def test_duplicate_id_of_a_running_request_is_rejected(kind: str) -> None:
    gate = anyio.Event()

    async def gated(method: str, params: Any) -> Any:
        if method == "ping":
            return "pong"
        await gate.wait()
        return params

    async with raw_peer(kind, on_request=gated) as (_, raw):
        await send_raw(raw, request(1, "work", ["first"]))
        await send_raw(raw, request(1, "work", ["second"]))
        reply = await raw.receive()
        assert reply["id"] is None
        assert reply["error"]["code"] == -32600
        assert "already in use" in reply["error"]["data"]
        gate.set()
        assert await raw.receive() == {"jsonrpc": "2.0", "id": 1, "result": ["first"]}
        await expect_ping_works(raw)


@pytest.mark.wire_unchecked("an oversized frame on purpose")
async def test_oversized_line_is_answered_and_the_next_message_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limit = 1024
    big = request(9, "echo", {"blob": "x" * 5000})
    with caplog.at_level(logging.WARNING, logger="accord.jsonrpc"):
        async with raw_peer("pipe", max_message_bytes=limit, on_request=echo) as (conn, raw):
            await send_raw(raw, big)
            reply = await raw.receive()
            assert reply["id"] == 9, "the oversized request is answered by its own id"
            assert reply["error"]["code"] == -32600
            assert f"exceeds the limit of {limit} bytes" in reply["error"]["data"]
            await expect_ping_works(raw)
            # ... also when it is the last thing before end of file, without a newline.
            await send_raw(raw, orjson.dumps(big))
            assert isinstance(raw, StreamTransport)
            await raw._writer.aclose()
            reply = await raw.receive()
            assert reply["error"]["code"] == -32600
            await conn.wait_closed()
    assert "exceeds the limit" in caplog.text

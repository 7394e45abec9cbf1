"""Input a hostile or careless peer sends on purpose: ids of the wrong type, JavaScript's strings.

Each case once took a peer down or left a request unanswered; each runs over real pipes (and
in memory where the framing is not what is tested), and the connection must keep serving.
"""

from __future__ import annotations

import logging
from typing import Any, cast

import anyio
import orjson
import pytest
from _jsonrpc_support import echo, expect_ping_works, raw_peer, request, send_raw

from accord.jsonrpc import CANCEL_REQUEST_METHOD
from accord.testing import HOSTILE_IDS, check_answer, check_refusal, id_request, play_hostile_ids
from accord.transports import Transport, decode_line, encode_message

pytestmark = pytest.mark.anyio

#: Values that are not request ids: some do not hash, some compare equal to the id 1.
NOT_IDS = [[1], {"id": 1}, True, 1.0, None, [], "1"]


async def expect_serving(raw: Transport) -> None:
    """The peer still answers a ping; an error with id null (invalid input) may come first."""
    await send_raw(raw, request("ping", "ping"))
    while (reply := await raw.receive()).get("id") is None:
        assert reply["error"]["code"] == -32600, reply
    assert reply == {"jsonrpc": "2.0", "id": "ping", "result": "pong"}


@pytest.mark.wire_unchecked("cancel notices with ids of the wrong type on purpose")
@pytest.mark.parametrize("bad_id", NOT_IDS, ids=repr)
async def test_cancel_request_naming_no_valid_id_is_ignored(kind: str, bad_id: Any) -> None:
    """``$/cancel_request`` with ``[1]`` once killed any accord peer (unhashable list)."""
    gate = anyio.Event()

    async def gated(method: str, params: Any) -> Any:
        if method == "work":
            await gate.wait()
            return "done"
        return await echo(method, params)

    async with raw_peer(kind, on_request=gated) as (conn, raw):
        await send_raw(raw, request(1, "work"))
        params = {"requestId": bad_id}
        cancel = {"jsonrpc": "2.0", "method": CANCEL_REQUEST_METHOD, "params": params}
        await send_raw(raw, cancel)
        await expect_serving(raw)
        gate.set()
        # The running request 1 was not cancelled by a look-alike (true, 1.0, "1").
        assert await raw.receive() == {"jsonrpc": "2.0", "id": 1, "result": "done"}
        assert not conn.closed


@pytest.mark.wire_unchecked("cancel notices with malformed params on purpose")
@pytest.mark.parametrize("params", [[1], "x", 5, {"requestId": {"nested": [1]}}], ids=repr)
async def test_cancel_request_with_malformed_params_is_ignored(kind: str, params: Any) -> None:
    async with raw_peer(kind, on_request=echo) as (conn, raw):
        await send_raw(raw, {"jsonrpc": "2.0", "method": CANCEL_REQUEST_METHOD, "params": params})
        await expect_serving(raw)
        assert not conn.closed


@pytest.mark.wire_unchecked("responses with ids of the wrong type on purpose")
@pytest.mark.parametrize("bad_id", NOT_IDS, ids=repr)
async def test_a_response_with_a_wrong_id_fails_nothing_and_settles_nothing(
    kind: str, bad_id: Any
) -> None:
    async with raw_peer(kind, on_request=echo) as (conn, raw):
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def call() -> None:
                results.append(await conn.request("m"))

            tg.start_soon(call)
            sent = await raw.receive()
            assert sent["id"] == 0
            await send_raw(raw, {"jsonrpc": "2.0", "id": bad_id, "result": "impostor"})
            await expect_serving(raw)
            await send_raw(raw, {"jsonrpc": "2.0", "id": sent["id"], "result": "real"})
        assert results == ["real"]


# --- text as JavaScript writes it ---------------------------------------------------------------


@pytest.mark.wire_unchecked("a lone surrogate on the wire on purpose")
async def test_a_request_with_a_lone_surrogate_is_answered_by_its_id() -> None:
    """``JSON.stringify`` emits ``"ab\\ud83d"`` for a string cut inside an emoji."""
    line = (
        b'{"jsonrpc":"2.0","id":7,"method":"echo",'
        b'"params":{"text":"ab\\ud83d","ok":"\\ud83d\\ude00"}}\n'
    )
    async with raw_peer("pipe", on_request=echo) as (_, raw):
        await send_raw(raw, line)
        reply = await raw.receive()
        assert reply == {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {"method": "echo", "params": {"text": "ab\ufffd", "ok": "\U0001f600"}},
        }
        await expect_ping_works(raw)


@pytest.mark.wire_unchecked("bytes that are not UTF-8 on purpose")
async def test_bytes_that_are_not_utf8_are_read_lossily_like_javascript_does() -> None:
    line = b'{"jsonrpc":"2.0","id":"u","method":"echo","params":{"text":"caf\xe9 \xff"}}\n'
    async with raw_peer("pipe", on_request=echo) as (_, raw):
        await send_raw(raw, line)
        reply = await raw.receive()
        assert reply["id"] == "u"
        assert reply["result"]["params"] == {"text": "caf\ufffd \ufffd"}
        await expect_ping_works(raw)


@pytest.mark.wire_unchecked("a cut request on purpose")
async def test_a_request_cut_short_is_answered_by_its_id() -> None:
    async with raw_peer("pipe", on_request=echo) as (_, raw):
        await send_raw(raw, b'{"jsonrpc":"2.0","id":8,"method":"echo","params":{"a":\n')
        reply = await raw.receive()
        assert reply["id"] == 8
        assert reply["error"]["code"] == -32700
        await expect_ping_works(raw)


async def test_an_answer_holding_a_lone_surrogate_is_sent_not_failed() -> None:
    """Our own strings may carry a lone surrogate (a cut emoji); the writer must not choke."""

    async def cut(method: str, params: Any) -> Any:
        return "pong" if method == "ping" else {"text": "ab\ud83d"}

    async with raw_peer("pipe", on_request=cut) as (conn, raw):
        await send_raw(raw, request(3, "cut"))
        assert await raw.receive() == {"jsonrpc": "2.0", "id": 3, "result": {"text": "ab\ufffd"}}
        await conn.notify("note", {"text": "\udc00"})
        assert (await raw.receive())["params"] == {"text": "\ufffd"}
        await expect_ping_works(raw)


def test_encode_and_decode_agree_on_lossy_text() -> None:
    expected = orjson.dumps({"k\ufffd": ["x\ufffd"]}) + b"\n"
    assert encode_message({"k\ud800": ["x\udfff"]}) == expected
    assert decode_line(b'{"\\udfff": 1}') == {"\ufffd": 1}
    with pytest.raises(TypeError):
        encode_message({"not json": object()})
    # The stdlib fallback stays strict where JSON is: NaN and deep nesting are still refused.
    assert decode_line(b'{"a": "\\ud800", "b": NaN}').__class__.__name__ == "MalformedFrame"
    deep = b"[" * 100_000 + b'"\\ud800"' + b"]" * 100_000
    assert deep and decode_line(deep).__class__.__name__ == "MalformedFrame"


# --- ids a hostile peer chooses (accord.testing's HOSTILE_IDS) ----------------------------------


class _PipeWire:
    """The kit's ``IdWire`` over the raw end of a pipe."""

    def __init__(self, raw: Transport) -> None:
        self.raw = raw

    async def send(self, text: bytes) -> None:
        await send_raw(self.raw, text + b"\n")

    async def receive(self) -> dict[str, Any]:
        return await _answer(self.raw)


async def _answer(raw: Transport) -> dict[str, Any]:
    """The next message off the raw end, which must be a JSON object."""
    message = await raw.receive()
    assert isinstance(message, dict), message
    return cast(dict[str, Any], message)


#: The longest log line hostile ids may cause: far under the 1 MiB ids themselves.
_MAX_LOG_LINE = 2048


@pytest.mark.wire_unchecked("ids of every wrong kind on purpose")
async def test_every_hostile_id_is_answered_as_json_rpc_says_and_none_is_logged_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Valid ids (a 1 MiB string, 2**63, the least int64, null...) come back exactly; the
    rest (floats, booleans, 2**64, containers) get -32600 with id null and a short message;
    the connection serves a plain request after each, and no log line quotes an id whole."""
    with caplog.at_level(logging.DEBUG, logger="accord"):
        async with raw_peer("pipe", on_request=echo) as (conn, raw):
            problems = await play_hostile_ids(_PipeWire(raw))
            assert not conn.closed
    assert problems == dict.fromkeys(HOSTILE_IDS, ""), problems
    longest = max((len(r.getMessage()) for r in caplog.records), default=0)
    assert longest < _MAX_LOG_LINE, longest


@pytest.mark.wire_unchecked("a duplicate request id on purpose")
@pytest.mark.parametrize("name", ["huge-string", "zero", "null", "past-int63"])
async def test_a_duplicate_of_an_id_in_flight_is_refused_and_the_first_goes_on(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    case = HOSTILE_IDS[name]
    gate = anyio.Event()
    started = anyio.Event()

    async def gated(method: str, params: Any) -> Any:
        if method == "work":
            started.set()
            await gate.wait()
            return "done"
        return await echo(method, params)

    with caplog.at_level(logging.DEBUG, logger="accord"):
        async with raw_peer("pipe", on_request=gated) as (conn, raw):
            await send_raw(raw, id_request(case, "work") + b"\n")
            await started.wait()
            await send_raw(raw, id_request(case, "work") + b"\n")
            refusal = await _answer(raw)
            assert check_refusal(refusal) == "", refusal
            assert "already in use" in refusal["error"]["data"]
            await expect_ping_works(raw)
            gate.set()
            answer = await _answer(raw)
            assert check_answer(case, answer) == ""
            assert answer["result"] == "done"
            await expect_ping_works(raw)  # one answer for the first: nothing else by its id
            assert not conn.closed
    assert max((len(r.getMessage()) for r in caplog.records), default=0) < _MAX_LOG_LINE


@pytest.mark.wire_unchecked("a response by an id of 1 MiB on purpose")
async def test_a_response_by_a_huge_unknown_id_is_dropped_and_not_logged_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    huge = HOSTILE_IDS["huge-string"].value
    with caplog.at_level(logging.DEBUG, logger="accord"):
        async with raw_peer("pipe", on_request=echo) as (conn, raw):
            await send_raw(raw, {"jsonrpc": "2.0", "id": huge, "result": "forged"})
            await send_raw(
                raw,
                {"jsonrpc": "2.0", "method": CANCEL_REQUEST_METHOD, "params": {"requestId": huge}},
            )
            await expect_ping_works(raw)
            assert not conn.closed
    assert max((len(r.getMessage()) for r in caplog.records), default=0) < _MAX_LOG_LINE


async def test_a_request_by_the_id_of_our_own_pending_request_is_answered_apart() -> None:
    """Our request 0 awaits its answer; the peer's own request 0 is a different request (ids
    are each sender's own): it is answered by 0, and the peer's answer to ours still settles
    ours."""
    async with raw_peer("pipe", on_request=echo) as (conn, raw):
        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def call() -> None:
                results.append(await conn.request("m"))

            tg.start_soon(call)
            ours = await _answer(raw)
            await send_raw(raw, request(ours["id"], "ping"))
            assert await _answer(raw) == {"jsonrpc": "2.0", "id": ours["id"], "result": "pong"}
            await send_raw(raw, {"jsonrpc": "2.0", "id": ours["id"], "result": "real"})
        assert results == ["real"]
        await expect_ping_works(raw)

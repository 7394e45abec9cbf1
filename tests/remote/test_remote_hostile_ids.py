"""Hostile JSON-RPC request ids over the network: WebSocket and Streamable HTTP, real sockets.

accord.testing's ``HOSTILE_IDS`` (a 1 MiB string, 2**63, null, floats, booleans, 2**64,
nested containers) played on a served agent over loopback: valid ids come back exactly,
the rest get -32600 with id null and a short message, the connection serves on, and no log
line quotes an id whole. A duplicate of an id still in flight is refused without disturbing
the request it duplicates (over Streamable HTTP its answer still goes to its own session's
stream), and an ``initialize`` POST whose id is no id is answered 400 with the JSON-RPC error.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.testing import (
    HOSTILE_IDS,
    HttpTarget,
    Say,
    WaitFor,
    check_answer,
    check_refusal,
    id_request,
    next_answer,
    play_hostile_ids,
    server_alive,
    streamable_http_wire,
    websocket_wire,
)

pytestmark = [pytest.mark.anyio, pytest.mark.wire_unchecked("ids of every wrong kind on purpose")]

#: The longest log line the hostile ids may cause: far under the 1 MiB ids themselves.
_MAX_LOG_LINE = 2048

#: The id of the prompt held in flight: 1 MiB, so its duplicate's refusal must not quote it.
_HELD = HOSTILE_IDS["huge-string"]


def _longest_log_line(caplog: pytest.LogCaptureFixture) -> int:
    return max((len(r.getMessage()) for r in caplog.records), default=0)


def _request(request_id: object, method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def _prompt(session_id: str) -> bytes:
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    return id_request(_HELD, "session/prompt", prompt)


@pytest.mark.parametrize("transport", ["websocket", "streamable-http"])
async def test_every_hostile_id_is_answered_as_json_rpc_says_over_the_network(
    transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with served_agent() as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN)
        wire_of = websocket_wire if transport == "websocket" else streamable_http_wire
        with caplog.at_level(logging.DEBUG, logger="accord"), anyio.fail_after(TIMEOUT):
            async with wire_of(target) as wire:
                problems = await play_hostile_ids(wire)
            assert await server_alive(target)
    assert problems == dict.fromkeys(HOSTILE_IDS, ""), problems
    assert _longest_log_line(caplog) < _MAX_LOG_LINE


async def test_a_duplicate_of_a_prompt_id_in_flight_is_refused_over_websocket(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gate = anyio.Event()
    turn = [Say("started"), WaitFor(gate), Say("finished")]
    async with served_agent([turn]) as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN)
        with caplog.at_level(logging.DEBUG, logger="accord"), anyio.fail_after(TIMEOUT):
            async with websocket_wire(target) as wire:
                await wire.send(
                    _request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
                )
                session_id = (await next_answer(wire))["result"]["sessionId"]
                await wire.send(_prompt(session_id))
                while (await wire.receive()).get("method") != "session/update":
                    pass  # the turn has begun: the prompt is in flight
                await wire.send(_prompt(session_id))
                refusal = await next_answer(wire)
                assert check_refusal(refusal) == "", refusal
                assert "already in use" in refusal["error"]["data"]
                gate.set()
                answer = await next_answer(wire)
                assert check_answer(_HELD, answer) == ""
                assert answer["result"]["stopReason"] == "end_turn"
                await wire.send(_request("after", "session/list", {}))
                assert (await next_answer(wire))["id"] == "after"  # one answer, then serving
    assert _longest_log_line(caplog) < _MAX_LOG_LINE


async def test_a_duplicate_id_posted_elsewhere_does_not_take_the_first_request_s_stream(
    tmp_path: Path,
) -> None:
    """The prompt by the held id is posted for its session; a request by the same id posted
    for no session is refused (on the connection's stream), and the prompt's answer still
    comes on the session's stream, where its client reads it."""
    gate = anyio.Event()
    turn = [Say("started"), WaitFor(gate), Say("finished")]
    async with served_agent([turn]) as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN)
        with anyio.fail_after(TIMEOUT):
            async with streamable_http_wire(target) as wire:
                await wire.send(
                    _request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
                )
                session_id = (await next_answer(wire))["result"]["sessionId"]
                own = await wire.session_events(session_id)
                try:
                    await wire.send(_prompt(session_id), session=session_id)
                    while (await own.receive()).get("method") != "session/update":
                        pass
                    await wire.send(id_request(_HELD))
                    refusal = await next_answer(wire)
                    assert check_refusal(refusal) == "", refusal
                    gate.set()
                    answer = await next_answer(own)
                    assert check_answer(_HELD, answer) == ""
                    assert answer["result"]["stopReason"] == "end_turn"
                finally:
                    await own.aclose()


@pytest.mark.parametrize("name", ["null", "fraction", "true", "deep-array", "huge-object"])
async def test_an_initialize_post_whose_id_is_no_id_is_answered_400_with_the_error(
    name: str,
) -> None:
    async with served_agent() as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN)
        hello = {"protocolVersion": 1, "clientCapabilities": {}}
        with anyio.fail_after(TIMEOUT):
            async with streamable_http_wire(target) as wire:
                status, fields, body = await wire.post(
                    id_request(HOSTILE_IDS[name], "initialize", hello)
                )
            assert status == 400
            assert fields["content-type"] == "application/json"
            assert "acp-connection-id" not in fields
            assert check_refusal(orjson.loads(body)) == ""
            assert await server_alive(target)

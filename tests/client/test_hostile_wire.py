"""A hostile agent at the wire level, over real OS pipes: the client library must survive it.

Each case once crashed ``accord run`` (or any ``connect()`` user) or made it misbehave; the
agent here is a script speaking raw JSON-RPC through a real pipe pair.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from _client_agents import WireAgent, agent_text
from helpers.timeouts import TIMEOUT

from accord.client import MAX_EARLY_UPDATE_BYTES, AllowAll, connect
from accord.testing import pipe_transport_pair

pytestmark = pytest.mark.anyio


@pytest.fixture
async def pipe_wire() -> AsyncIterator[WireAgent]:
    """A scripted wire-level agent joined to the client by two real pipes."""
    client_end, agent_end = pipe_transport_pair()
    yield WireAgent(agent_end, client_end)
    await agent_end.aclose()
    await client_end.aclose()


@pytest.mark.wire_unchecked("responses with ids of the wrong type on purpose")
@pytest.mark.parametrize("bad_id", [[0], [2], {"id": 2}, True, 2.0, None], ids=repr)
async def test_a_response_with_a_bad_id_while_a_prompt_is_pending(
    pipe_wire: WireAgent, bad_id: Any
) -> None:
    """``{"id": [2], "result": ...}`` during a prompt once killed ``accord run``."""
    wire = pipe_wire

    async def agent_side() -> None:
        await wire.handshake("s1")
        prompt = await wire.expect("session/prompt")
        await wire.send({"id": bad_id, "result": {"stopReason": "refusal"}})
        await wire.update("s1", agent_text("still in the turn"))
        await wire.reply(prompt, {"stopReason": "end_turn"})
        while (message := await wire.receive()).get("method") != "_ping":
            # A response the client cannot read is answered with an error, by id null.
            assert message["id"] is None and message["error"]["code"] == -32600, message
        await wire.reply(message, {"alive": True})

    async with wire.playing(agent_side), connect(wire.client_end) as conn:
        session = await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            result = await session.prompt("go")
            assert result.stop_reason == "end_turn"
            assert result.text == "still in the turn"
            assert await conn.ext_request("_ping") == {"alive": True}


async def test_updates_for_an_unknown_session_are_capped_by_bytes(
    pipe_wire: WireAgent, caplog: pytest.LogCaptureFixture
) -> None:
    """1,000 updates of 1 MB for a session not known yet once held 1 GB; now 8 MiB at most."""
    wire = pipe_wire
    big = "x" * 1_000_000

    async def agent_side() -> None:
        await wire.reply(await wire.expect("initialize"), {"protocolVersion": 1})
        new = await wire.expect("session/new")
        for index in range(12):
            await wire.update("s1", agent_text(f"{index}:{big}", "m1"))
        await wire.reply(new, {"sessionId": "s1"})
        await wire.reply(await wire.expect("_ping"), {})

    with caplog.at_level(logging.WARNING, logger="accord.client"):
        async with wire.playing(agent_side), connect(wire.client_end) as conn:
            with anyio.fail_after(TIMEOUT):
                statistics = conn.statistics()
                session = await conn.new_session()
                await conn.ext_request("_ping")
            statistics = conn.statistics()
    assert statistics.early_updates == 0 and statistics.early_update_bytes == 0
    assert statistics.dropped_early_updates == 4
    kept = session.view.messages[0].text
    assert len(kept) < MAX_EARLY_UPDATE_BYTES
    assert kept.startswith("0:") and f"7:{big}" in kept and "8:" not in kept
    assert "dropped" in caplog.text and "limits: 1024 updates, 8388608 bytes" in caplog.text
    assert "4 update(s) the agent sent before the session was known were dropped" in caplog.text


@pytest.mark.wire_unchecked("the client answers an ambiguous permission request with an error")
async def test_a_permission_request_with_a_repeated_option_id_is_refused(
    pipe_wire: WireAgent,
) -> None:
    """ "Deny" and "Allow always" under one id: whatever the user picks, the agent decides."""
    wire = pipe_wire
    answers: list[dict[str, Any]] = []

    async def agent_side() -> None:
        await wire.handshake("s1")
        prompt = await wire.expect("session/prompt")
        options = [
            {"optionId": "x", "name": "Deny", "kind": "reject_once"},
            {"optionId": "x", "name": "Allow always", "kind": "allow_always"},
        ]
        await wire.send(
            {
                "id": 40,
                "method": "session/request_permission",
                "params": {"sessionId": "s1", "toolCall": {"toolCallId": "t1"}, "options": options},
            }
        )
        answers.append(await wire.receive())
        await wire.reply(prompt, {"stopReason": "end_turn"})

    async with (
        wire.playing(agent_side),
        connect(wire.client_end, permission_policy=AllowAll()) as conn,
    ):
        session = await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            assert (await session.prompt("go")).stop_reason == "end_turn"
    [answer] = answers
    assert answer["id"] == 40
    assert answer["error"]["code"] == -32602
    assert "distinct ids; repeated: 'x'" in answer["error"]["message"]

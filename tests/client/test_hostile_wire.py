"""A hostile agent at the wire level, over real OS pipes: the client runtime must survive it.

Each case once crashed ``accord run`` (or any ``connect()`` user) or made it misbehave; the
agent here is a script speaking raw JSON-RPC through a real pipe pair.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from _client_agents import TIMEOUT, WireAgent, agent_text

from accord.client import connect
from accord.testing._transport_check import pipe_transport_pair

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

"""The served agent against accord.testing's hostile WebSocket client, on loopback sockets.

Every attack of ``WEBSOCKET_ATTACKS`` must end as the kit says (the close code RFC 6455
names and the socket dropped, or the connection still serving), and the server must go on
serving other clients.
"""

from __future__ import annotations

import anyio
import pytest
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.remote import ServerLimits
from accord.testing import WEBSOCKET_ATTACKS, HttpTarget, run_websocket_attack, server_alive

pytestmark = pytest.mark.anyio

_LIMIT = 256 * 1024


@pytest.mark.parametrize("name", sorted(WEBSOCKET_ATTACKS))
async def test_every_hostile_frame_sequence_ends_as_it_must(name: str) -> None:
    async with served_agent(limits=ServerLimits(max_message_bytes=_LIMIT)) as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN, quiet=0.5)
        with anyio.fail_after(TIMEOUT):
            outcome = await run_websocket_attack(
                target, WEBSOCKET_ATTACKS[name], max_message_bytes=_LIMIT, closing=5.0
            )
            alive = await server_alive(target)
    assert outcome.upgraded
    assert outcome.passed, f"{name}: {outcome.problem} (frames: {outcome.frames[:3]})"
    assert alive

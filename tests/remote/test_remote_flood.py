"""Before the token: a flood of idle and trickling sockets costs a bounded amount and starves
no authenticated client (real loopback sockets, from several source addresses).

The server keeps at most ``max_unauthenticated_per_address`` sockets per client address that
have not shown the token, and ``max_unauthenticated`` in all; over a bound it closes the
oldest such socket, so the flood evicts itself and a client that shows its token at once is
served.
"""

from __future__ import annotations

import anyio
import pytest
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.remote import ServerLimits
from accord.testing import HttpTarget, Stream, hold_connections, server_alive

pytestmark = pytest.mark.anyio

#: Ten loopback source addresses (Linux routes all of 127.0.0.0/8 to the loopback device).
_SOURCES = [f"127.0.0.{i}" for i in range(2, 12)]


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_500_idle_and_trickling_sockets_do_not_starve_a_streaming_client(
    scheme: str,
) -> None:
    chunks = 2000
    async with served_agent([[Stream(count=chunks, delay=0.001)]]) as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN)
        with anyio.fail_after(TIMEOUT):
            async with (
                hold_connections(target, 250, local_hosts=_SOURCES) as idle,
                hold_connections(
                    target, 250, trickle=True, interval=0.2, local_hosts=_SOURCES
                ) as trickling,
            ):
                async with connect(server.url(scheme), token=TOKEN) as conn:
                    result = await (await conn.new_session()).prompt("stream")
                held = idle.held + trickling.held
    assert result.stop_reason == "end_turn"
    assert result.text.split() == [str(i) for i in range(chunks)]
    assert idle.opened + trickling.opened == 500
    # 50 sockets per source address, 32 kept: the server closed the rest.
    assert held <= len(_SOURCES) * ServerLimits().max_unauthenticated_per_address


async def test_the_oldest_unauthenticated_socket_of_an_address_goes_first() -> None:
    limits = ServerLimits(max_unauthenticated_per_address=4)
    async with served_agent(limits=limits) as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN)
        with anyio.fail_after(TIMEOUT):
            async with (
                hold_connections(target, 4, local_hosts=["127.0.0.2"]) as first,
                hold_connections(target, 4, local_hosts=["127.0.0.2"]) as second,
            ):
                await first.wait_closed(4)
                # Another address is not affected, and the token still gets through.
                async with hold_connections(target, 4, local_hosts=["127.0.0.3"]) as other:
                    assert await server_alive(target)
                    await anyio.sleep(0.2)
                    assert other.closed_by_server == 0
                assert second.closed_by_server == 0


async def test_the_bound_over_all_addresses_evicts_the_oldest_anywhere() -> None:
    limits = ServerLimits(max_unauthenticated=6)
    async with served_agent(limits=limits) as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN)
        with anyio.fail_after(TIMEOUT):
            async with (
                hold_connections(target, 6, local_hosts=_SOURCES[:3]) as old,
                hold_connections(target, 6, local_hosts=_SOURCES[3:6]) as new,
            ):
                await old.wait_closed(6)
                assert await server_alive(target)
                assert new.closed_by_server <= 1  # server_alive's socket took one place


async def test_a_socket_that_never_finishes_its_head_is_closed_after_the_request_timeout() -> None:
    limits = ServerLimits(request_timeout=0.3)
    async with served_agent(limits=limits) as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN)
        with anyio.fail_after(TIMEOUT):
            async with (
                hold_connections(target, 3) as idle,
                hold_connections(target, 3, trickle=True, interval=0.05) as trickling,
            ):
                await idle.wait_closed(3)
                await trickling.wait_closed(3)

"""Interop over the network: the official TypeScript SDK's remote transports and accord's.

Both directions, on loopback, with real processes:

* the SDK's client transports (``createWebSocketStream`` with ``ws``, ``createHttpStream``
  over fetch; ``remote_sdk/sdk_client.mjs``) against accord's server (``serve_remote`` with
  a scripted agent), the token in ``Authorization: Bearer``;
* accord's client (``connect("ws://..." | "http://...")``) against the SDK's server
  (``AcpServer`` with its Node HTTP and WebSocket adapters; ``remote_sdk/sdk_server.mjs``).

Install the SDK with ``scripts/fetch_interop_agents.sh``; without it these tests skip.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import anyio
import pytest
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.errors import ConnectionRefused
from accord.testing import Say

pytestmark = [pytest.mark.anyio, pytest.mark.interop, pytest.mark.subprocess]

Program = Callable[[str], list[str]]


@pytest.mark.parametrize("kind", ["ws", "http"])
async def test_the_sdk_client_transport_against_accord(kind: str, sdk2_program: Program) -> None:
    command = sdk2_program("sdk_client.mjs")
    async with served_agent([[Say("Hello from accord")]]) as server:
        with anyio.fail_after(TIMEOUT):
            done = await anyio.run_process(
                [*command, kind, server.url(kind), "hi"],
                env={**os.environ, "ACCORD_TOKEN": TOKEN},
                check=False,
            )
        refused = await anyio.run_process(
            [*command, kind, server.url(kind), "hi"],
            env={**os.environ, "ACCORD_TOKEN": "wrong-token-0123456789abcdef"},
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    answer = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert answer["stopReason"] == "end_turn"
    assert answer["text"] == "Hello from accord"
    assert refused.returncode != 0
    assert len(server.served) == 1  # the refused client never reached the agent


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_accord_against_the_sdk_server(scheme: str, sdk2_program: Program) -> None:
    command = sdk2_program("sdk_server.mjs")
    async with await anyio.open_process(
        command, env={**os.environ, "ACCORD_TOKEN": TOKEN}
    ) as process:
        try:
            assert process.stdout is not None
            with anyio.fail_after(TIMEOUT):
                first = (await process.stdout.receive()).decode()
                port = int(first.split()[1])
                url = f"{scheme}://127.0.0.1:{port}/acp"
                async with connect(url, token=TOKEN) as conn:
                    session = await conn.new_session()
                    result = await session.prompt("over the wire")
                with pytest.raises(ConnectionRefused) as refused:
                    async with connect(url, token="wrong-token-0123456789abcdef"):
                        pass
        finally:
            process.terminate()
    assert session.session_id.startswith("sdk-session-")
    assert result.stop_reason == "end_turn"
    assert result.text == "SDK says: over the wire"
    assert refused.value.status == 401

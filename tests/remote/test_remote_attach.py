"""Several clients on one session over real sockets: one runtime behind ``serve_remote``.

Two clients on loopback (one over WebSocket, one over Streamable HTTP) attach to one session;
both receive the same updates with the same cursors, and the one that joined is an observer
until it prompts.
"""

from __future__ import annotations

import functools

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client import connect
from accord.remote import AccessPolicy, serve_remote
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, Stream
from accord.transports import Transport

pytestmark = pytest.mark.anyio

TOKEN = "test-token-0123456789abcdef"


async def test_two_clients_over_sockets_share_one_session() -> None:
    engine = ScriptedEngine([[Stream(count=50, prefix="w")], [Say("from the second")]])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=0)

    async def handler(transport: Transport) -> None:
        await runtime.serve(transport)

    policy = AccessPolicy.build(TOKEN, loopback=True)
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            port = await tg.start(
                functools.partial(serve_remote, handler, host="127.0.0.1", port=0, policy=policy)
            )
            async with (
                connect(f"ws://127.0.0.1:{port}/acp", token=TOKEN, reconnect=False) as first,
                connect(f"http://127.0.0.1:{port}/acp", token=TOKEN, reconnect=False) as second,
            ):
                session = await first.new_session()
                joined = await second.resume_session(session.session_id)
                assert joined.observer is True
                await session.prompt("stream")
                await joined.prompt("and now me")
                assert joined.observer is False
                # Both folded the same conversation (each from its own updates).
                seen = [(m.role, m.text) for m in session.view.messages]
                assert seen == [(m.role, m.text) for m in joined.view.messages]
                assert any(role == "agent" and text.startswith("w") for role, text in seen)
                assert ("agent", "from the second") in seen
                assert session.cursor is not None and session.cursor == joined.cursor
            await runtime.aclose()
            tg.cancel_scope.cancel()

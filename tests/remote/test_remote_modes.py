"""A mode change made by one client reaches the other attached clients in both forms.

Clients that follow only ``configOptions`` read the mode from ``config_option_update``; the
others from ``current_mode_update``. The coder's runtime behind ``serve_remote``, two clients on
loopback (WebSocket and Streamable HTTP) on one session: whichever way one of them changes the
mode, the other receives both updates, naming the same mode.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.coder import CoderConfig, CoderRuntime
from accord.remote import AccessPolicy, open_remote, serve_remote
from accord.roles import Client, ClientSideConnection
from accord.schema import (
    InitializeRequest,
    NewSessionRequest,
    ResumeSessionRequest,
    SessionNotification,
    SetSessionConfigOptionRequest,
    SetSessionModeRequest,
)
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer
from accord.transports import Transport

pytestmark = pytest.mark.anyio

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    """The coder's engine (pydantic-ai) runs on asyncio only."""
    return "asyncio"


class Watcher(Client):
    """Records every update it is sent."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self._changed = anyio.Event()

    async def session_update(self, notification: SessionNotification) -> None:
        self.updates.append(notification.update.to_wire())
        self._changed.set()
        self._changed = anyio.Event()

    async def mode_updates(self, start: int) -> list[tuple[str, str]]:
        """From update ``start`` on, wait (bounded) for both mode updates; each with its mode."""
        with anyio.fail_after(TIMEOUT):
            while True:
                seen = [_mode_of(u) for u in self.updates[start:]]
                found = [s for s in seen if s is not None]
                if {kind for kind, _ in found} >= {"current_mode_update", "config_option_update"}:
                    return found
                await self._changed.wait()


def _mode_of(update: dict[str, Any]) -> tuple[str, str] | None:
    kind = update["sessionUpdate"]
    if kind == "current_mode_update":
        return kind, update["currentModeId"]
    if kind == "config_option_update":
        (mode,) = [o for o in update["configOptions"] if o["id"] == "mode"]
        return kind, mode["currentValue"]
    return None


async def _initialized(conn: ClientSideConnection, client: Client) -> None:
    fields = {"protocolVersion": 1, "clientCapabilities": client.client_capabilities().to_wire()}
    await conn.initialize(InitializeRequest.model_validate(fields))


async def test_a_mode_change_by_one_client_reaches_the_other_in_both_forms(
    tmp_path: Path,
) -> None:
    cwd = str(tmp_path)
    by_mode: list[tuple[str, str]] = []
    by_option: list[tuple[str, str]] = []
    with FakeOpenAIServer([]) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore(), grace=0)

        async def handler(transport: Transport) -> None:
            await runtime.serve(transport)

        policy = AccessPolicy.build(TOKEN, loopback=True)
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                port = await tg.start(
                    functools.partial(
                        serve_remote, handler, host="127.0.0.1", port=0, policy=policy
                    )
                )
                first, second = Watcher(), Watcher()
                async with (
                    open_remote(f"ws://127.0.0.1:{port}/acp", token=TOKEN) as one,
                    open_remote(f"http://127.0.0.1:{port}/acp", token=TOKEN) as two,
                    ClientSideConnection(first, one) as a,
                    ClientSideConnection(second, two) as b,
                ):
                    await _initialized(a, first)
                    await _initialized(b, second)
                    created = await a.new_session(NewSessionRequest(cwd=cwd, mcp_servers=[]))
                    session_id = created.session_id
                    await b.resume_session(ResumeSessionRequest(session_id=session_id, cwd=cwd))

                    start = len(second.updates)
                    await a.set_session_mode(
                        SetSessionModeRequest(session_id=session_id, mode_id="ask")
                    )
                    by_mode[:] = await second.mode_updates(start)

                    start = len(first.updates)
                    await b.set_session_config_option(
                        SetSessionConfigOptionRequest(
                            session_id=session_id, config_id="mode", value="auto"
                        )
                    )
                    by_option[:] = await first.mode_updates(start)
                await runtime.aclose()
                tg.cancel_scope.cancel()

    assert by_mode == [("current_mode_update", "ask"), ("config_option_update", "ask")]
    assert by_option == [("config_option_update", "auto"), ("current_mode_update", "auto")]

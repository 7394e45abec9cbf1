"""A prompt reaches every attached client but the one that sent it, over WebSocket.

An editor shows the prompt it sent; sending it back as ``user_message_chunk`` makes an editor
that appends it (Zed) show it twice. The other clients attached to the session get it live,
with the ``messageId`` the prompter is told in its response's ``_meta``; ``session/load``
replays every prompt; a resume from a cursor sends what came after the cursor, prompts too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.errors import CURSOR_META_KEY, USER_MESSAGE_ID_META_KEY
from accord.remote import AccessPolicy, open_remote, serve_remote
from accord.roles import Client, ClientSideConnection
from accord.schema import (
    InitializeRequest,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    ResumeSessionRequest,
    SessionNotification,
    TextContentBlock,
)
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine
from accord.transports import Transport

pytestmark = pytest.mark.anyio

TOKEN = "test-token-0123456789abcdef"


class Recorder(Client):
    """Records the session updates as they arrived on the wire."""

    def __init__(self) -> None:
        self.updates: list[SessionNotification] = []
        self._arrived = anyio.Event()

    async def session_update(self, notification: SessionNotification) -> None:
        self.updates.append(notification)
        self._arrived.set()
        self._arrived = anyio.Event()

    def wire(self) -> list[dict[str, Any]]:
        """The updates as sent, announcements of an activation left out."""
        return [
            n.update.to_wire()
            for n in self.updates
            if not ((n.update.meta or {}).get("accord") or {}).get("announcement")
        ]

    def prompts(self) -> list[tuple[str, str | None]]:
        """The ``user_message_chunk`` updates received: their text and message id."""
        return [
            (u["content"]["text"], u.get("messageId"))
            for u in self.wire()
            if u["sessionUpdate"] == "user_message_chunk"
        ]

    def texts(self) -> list[str]:
        return [
            u["content"]["text"] for u in self.wire() if u["sessionUpdate"] == "agent_message_chunk"
        ]

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        with anyio.fail_after(TIMEOUT):
            while not predicate():
                await self._arrived.wait()


def _text(value: str) -> list[TextContentBlock]:
    return [TextContentBlock(text=value)]


async def test_a_prompt_reaches_the_other_clients_only_and_load_replays_it(tmp_path: Path) -> None:
    cwd = str(tmp_path)
    engine = ScriptedEngine([[Say("one")], [Say("two")]])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=0)

    async def handler(transport: Transport) -> None:
        await runtime.serve(transport)

    policy = AccessPolicy.build(TOKEN, loopback=True)
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            port = await tg.start(
                functools.partial(serve_remote, handler, host="127.0.0.1", port=0, policy=policy)
            )
            url = f"ws://127.0.0.1:{port}/acp"
            a, b, loader, back = Recorder(), Recorder(), Recorder(), Recorder()
            async with (
                open_remote(url, token=TOKEN) as a_end,
                open_remote(url, token=TOKEN) as b_end,
                ClientSideConnection(a, a_end) as a_conn,
                ClientSideConnection(b, b_end) as b_conn,
            ):
                await a_conn.initialize(InitializeRequest(protocol_version=1))
                await b_conn.initialize(InitializeRequest(protocol_version=1))
                created = await a_conn.new_session(NewSessionRequest(cwd=cwd, mcp_servers=[]))
                session_id = created.session_id
                await b_conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=cwd))

                # One client alone would see the same: its own prompt is not sent back.
                first = await a_conn.prompt(
                    PromptRequest(session_id=session_id, prompt=_text("hello"))
                )
                first_id = (first.meta or {})[USER_MESSAGE_ID_META_KEY]
                await b.wait_until(lambda: b.texts() == ["one"])
                assert a.prompts() == [] and a.texts() == ["one"]
                # The other attached client gets it live, with the id the prompter was told.
                assert b.prompts() == [("hello", first_id)]
                cursor_after_one = (a.updates[-1].meta or {})[CURSOR_META_KEY]

                second = await b_conn.prompt(
                    PromptRequest(session_id=session_id, prompt=_text("and me"))
                )
                second_id = (second.meta or {})[USER_MESSAGE_ID_META_KEY]
                await a.wait_until(lambda: a.texts() == ["one", "two"])
                assert a.prompts() == [("and me", second_id)]
                assert b.prompts() == [("hello", first_id)]
                assert first_id != second_id

            # A later client loading the session gets the whole conversation, both prompts
            # with their ids, each before its answer.
            async with (
                open_remote(url, token=TOKEN) as end,
                ClientSideConnection(loader, end) as conn,
            ):
                await conn.initialize(InitializeRequest(protocol_version=1))
                await conn.load_session(
                    LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=[])
                )
                kinds = [
                    u["sessionUpdate"]
                    for u in loader.wire()
                    if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
                ]
                assert kinds == ["user_message_chunk", "agent_message_chunk"] * 2
                assert loader.prompts() == [("hello", first_id), ("and me", second_id)]

            # A client coming back with a cursor gets what came after it: the second prompt,
            # not the first.
            async with (
                open_remote(url, token=TOKEN) as end,
                ClientSideConnection(back, end) as conn,
            ):
                await conn.initialize(InitializeRequest(protocol_version=1))
                await conn.resume_session(
                    ResumeSessionRequest(
                        session_id=session_id, cwd=cwd, meta={CURSOR_META_KEY: cursor_after_one}
                    )
                )
                await back.wait_until(lambda: back.texts() == ["two"])
                assert back.prompts() == [("and me", second_id)]
            await runtime.aclose()
            tg.cancel_scope.cancel()

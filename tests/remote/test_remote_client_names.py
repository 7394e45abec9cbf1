"""A hostile ``clientInfo`` reaches the other clients printable, on one line, at most 80
characters, over real sockets.

One runtime behind ``serve_remote`` on a loopback port. The prompting client connects over
WebSocket or Streamable HTTP (``open_remote``, the roles' ``ClientSideConnection``, so the
test reads the wire values, not the client library's own cleaning) with a title full of
terminal escapes, C0 and C1 controls, bidirectional overrides and isolates, line and
paragraph separators, a zero-width joiner and 300 characters of text. A second client
attached before the turn is told by ``_accord/turn`` when it starts and ends; a third that
joins during the turn reads it in ``_meta.accord.turn`` of its ``session/resume`` answer.
Both see exactly the cleaned name: every character that is not printable a space, runs of
spaces one, the whole cut at 80 characters.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import pytest
from helpers.served_agent import TOKEN
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.remote import AccessPolicy, open_remote, serve_remote
from accord.roles import Client, ClientSideConnection
from accord.schema import (
    Implementation,
    InitializeRequest,
    NewSessionRequest,
    PromptRequest,
    ResumeSessionRequest,
    SessionNotification,
    TextContentBlock,
)
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, WaitFor

pytestmark = pytest.mark.anyio

HOSTILE = (
    "\x1b[2J\x1b]0;owned\x07Zed\u202egnp.exe\u2066\r\nSecond\u2028Third\u2029"
    "\x85\x9b31m\u200d\t\x00" + "y" * 300
)
"""A title with escapes, C0/C1 controls, bidi controls, separators and too much text."""

SHOWN = ("[2J ]0;owned Zed gnp.exe Second Third 31m " + "y" * 80)[:80]
"""What the other clients must be told: non-printables as spaces, runs folded, 80 at most."""


class _Recorder(Client):
    """Keeps every update and extension notification, wakes waiters on each."""

    def __init__(self) -> None:
        self.updates: list[SessionNotification] = []
        self.ext: list[tuple[str, dict[str, Any]]] = []
        self._changed = anyio.Event()

    async def session_update(self, notification: SessionNotification) -> None:
        self.updates.append(notification)
        self._changed.set()

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.ext.append((method, params))
        self._changed.set()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        with anyio.fail_after(TIMEOUT):
            while not predicate():
                self._changed = anyio.Event()
                await self._changed.wait()


@asynccontextmanager
async def _client(
    stack: AsyncExitStack, url: str, title: str | None = None
) -> AsyncIterator[tuple[_Recorder, ClientSideConnection]]:
    recorder = _Recorder()
    transport = await stack.enter_async_context(open_remote(url, token=TOKEN))
    conn = await stack.enter_async_context(ClientSideConnection(recorder, transport))
    info = None if title is None else Implementation(name="hostile", title=title, version="1")
    with anyio.fail_after(TIMEOUT):
        await conn.initialize(InitializeRequest(protocol_version=1, client_info=info))
    yield recorder, conn


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_hostile_client_name_reaches_the_others_cleaned_and_cut(scheme: str) -> None:
    release = anyio.Event()
    engine = ScriptedEngine([[Say("working"), WaitFor(release)]])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=0)
    policy = AccessPolicy.build(TOKEN, loopback=True)
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            functools.partial(serve_remote, runtime.serve, host="127.0.0.1", port=0, policy=policy)
        )
        url = f"{scheme}://127.0.0.1:{port}/acp"
        async with AsyncExitStack() as stack:
            _, prompter = await stack.enter_async_context(_client(stack, url, HOSTILE))
            idle, idle_conn = await stack.enter_async_context(_client(stack, url))
            _, joiner = await stack.enter_async_context(_client(stack, url))
            with anyio.fail_after(TIMEOUT):
                created = await prompter.new_session(NewSessionRequest(cwd="/", mcp_servers=[]))
                sid = created.session_id
                resume = ResumeSessionRequest(session_id=sid, cwd="/")
                await idle_conn.resume_session(resume)
            async with anyio.create_task_group() as turn:
                prompt = PromptRequest(session_id=sid, prompt=[TextContentBlock(text="go")])
                turn.start_soon(prompter.prompt, prompt)
                await idle.wait_until(lambda: bool(idle.updates))
                with anyio.fail_after(TIMEOUT):
                    joined = await joiner.resume_session(resume)
                release.set()
            await idle.wait_until(lambda: len(idle.ext) >= 2)
        await runtime.aclose()
        tg.cancel_scope.cancel()
    assert joined.meta is not None
    assert joined.meta["accord"]["turn"] == {"client": SHOWN}
    notices = [params for method, params in idle.ext if method == "_accord/turn"]
    assert [(n["running"], n["client"]) for n in notices] == [(True, SHOWN), (False, SHOWN)]

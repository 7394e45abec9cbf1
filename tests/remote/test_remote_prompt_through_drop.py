"""A prompt in flight when the link drops returns its turn's real stop reason, on real sockets.

One runtime serves every connection, as ``accord serve --listen`` does, so the turn goes on
on the agent while the client is away. ``connect(url)`` reconnects and resumes the session;
the prompt waits through that for its turn's end: the ``_accord/turn`` notice of its end (its
``stopReason`` and its prompt's ``tag``), or, for a turn that ended while the link was down,
``endedTurns`` in the resume's answer. The link is dropped by the server closing the
connection or by a proxy cutting it. When the link cannot be restored (the server refuses the
token), or the agent no longer knows the turn (another runtime answers the resume), the prompt
raises :class:`~accord.errors.TurnLost` naming the session to resume.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import pytest
from _remote_proxy import CuttableProxy
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client import ClientSession, TextDelta, TurnFinished, TurnResult, connect
from accord.errors import TurnLost
from accord.remote import AccessPolicy, serve_remote
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, ScriptStep, Stop, WaitFor
from accord.transports import Transport

pytestmark = pytest.mark.anyio


@dataclass
class _Served:
    port: int
    runtime: AgentRuntime
    transports: list[Transport] = field(default_factory=list[Transport])

    def url(self, scheme: str) -> str:
        return f"{scheme}://127.0.0.1:{self.port}/acp"


@asynccontextmanager
async def _one_runtime(turns: list[list[ScriptStep]]) -> AsyncGenerator[_Served]:
    """One runtime for every connection (its sessions outlive a link for 60 s)."""
    runtime = AgentRuntime(ScriptedEngine(turns), store=MemorySessionStore(), grace=60)
    transports: list[Transport] = []

    async def handler(transport: Transport) -> None:
        transports.append(transport)
        await runtime.serve(transport)

    policy = AccessPolicy.build(TOKEN, loopback=True)
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            functools.partial(serve_remote, handler, host="127.0.0.1", port=0, policy=policy)
        )
        yield _Served(port, runtime, transports)
        await runtime.aclose()
        tg.cancel_scope.cancel()


class _Status:
    """``on_status`` of a connection: its lines, and an event per reconnect."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.back = anyio.Event()

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        if line.startswith("reconnected"):
            self.back.set()


async def _said(session: ClientSession, text: str) -> None:
    """Wait until the session's view shows ``text`` in an agent message."""
    while not any(text in m.text for m in session.view.messages):  # noqa: ASYNC110
        await anyio.sleep(0.01)  # the view has no signal of its own


async def _turns_over(runtime: AgentRuntime) -> None:
    """Wait until no turn runs on the agent."""
    while runtime.statistics().running_turns:  # noqa: ASYNC110
        await anyio.sleep(0.01)  # the runtime's own state: nothing to wait on


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_prompt_whose_link_the_server_closes_returns_its_stop_reason(scheme: str) -> None:
    gate = anyio.Event()
    turn: list[ScriptStep] = [Say("before "), WaitFor(gate), Say("after"), Stop("max_tokens")]
    status = _Status()
    results: list[TurnResult] = []
    async with _one_runtime([turn, [Say("next")]]) as served:
        with anyio.fail_after(TIMEOUT):
            async with connect(served.url(scheme), token=TOKEN, on_status=status) as conn:
                session = await conn.new_session()
                async with anyio.create_task_group() as tg:

                    async def prompt() -> None:
                        results.append(await session.prompt("go"))

                    tg.start_soon(prompt)
                    await _said(session, "before")
                    await served.transports[-1].aclose()  # the server drops the link
                    await status.back.wait()
                    gate.set()
                following = await session.prompt("again")
    [result] = results
    assert result.stop_reason == "max_tokens"  # the turn's own, told after the reconnect
    assert result.text == "before after"
    assert result.usage is None and result.response.stop_reason == "max_tokens"
    assert following.text == "next" and following.stop_reason == "end_turn"
    assert status.lines == [
        "connection to the agent lost; reconnecting",
        "reconnected; resumed 1 session",
    ]
    agent_text = [m.text for m in session.view.messages if m.role == "agent"]
    assert agent_text == ["before ", "after", "next"]


async def test_a_streamed_turn_goes_on_through_a_cut_link() -> None:
    gate = anyio.Event()
    status = _Status()
    async with _one_runtime([[Say("one "), WaitFor(gate), Say("two")]]) as served:
        with anyio.fail_after(TIMEOUT):
            async with (
                CuttableProxy(served.port).running() as proxy,
                connect(proxy.url(served.url("ws")), token=TOKEN, on_status=status) as conn,
            ):
                session = await conn.new_session()
                events = []
                async for event in session.stream("go"):
                    events.append(event)
                    if isinstance(event, TextDelta) and not status.back.is_set():
                        await proxy.cut()
                        await status.back.wait()
                        gate.set()
    texts = [event.text for event in events if isinstance(event, TextDelta)]
    assert texts == ["one ", "two"]
    assert isinstance(events[-1], TurnFinished) and events[-1].stop_reason == "end_turn"
    assert proxy.connections == 2


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_turn_that_ended_while_the_link_was_down_returns_its_stop_reason(
    scheme: str,
) -> None:
    gate = anyio.Event()
    turn: list[ScriptStep] = [Say("before "), WaitFor(gate), Say("after"), Stop("refusal")]
    status = _Status()
    results: list[TurnResult] = []
    async with _one_runtime([turn, [Say("other")]]) as served:
        with anyio.fail_after(TIMEOUT):
            async with (
                CuttableProxy(served.port).running() as proxy,
                connect(proxy.url(served.url(scheme)), token=TOKEN, on_status=status) as conn,
                connect(served.url("ws"), token=TOKEN, reconnect=False) as other,
            ):
                session = await conn.new_session()
                async with anyio.create_task_group() as tg:

                    async def prompt() -> None:
                        results.append(await session.prompt("go"))

                    tg.start_soon(prompt)
                    await _said(session, "before")
                    # The link drops and stays down while the turn ends, and while another
                    # client runs a turn of its own after it.
                    proxy.stop_admitting()
                    await proxy.cut()
                    await proxy.knocked.wait()
                    gate.set()
                    await _turns_over(served.runtime)
                    joined = await other.resume_session(session.session_id)
                    assert (await joined.prompt("more")).text == "other"
                    proxy.admit()
                    await status.back.wait()
    [result] = results
    assert result.stop_reason == "refusal"  # from the resume's answer (endedTurns)
    assert result.text == "before after"  # the other client's turn is not this one's
    agent_text = [m.text for m in session.view.messages if m.role == "agent"]
    assert agent_text == ["before ", "after", "other"]


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_link_that_cannot_be_restored_fails_the_prompt_naming_the_session(
    scheme: str,
) -> None:
    gate = anyio.Event()
    status = _Status()
    async with _one_runtime([[Say("before "), WaitFor(gate)]]) as served:
        with anyio.fail_after(TIMEOUT):
            async with (
                CuttableProxy(served.port).running() as proxy,
                connect(proxy.url(served.url(scheme)), token=TOKEN, on_status=status) as conn,
            ):
                session = await conn.new_session()
                async with anyio.create_task_group() as tg:

                    async def prompt() -> None:
                        with pytest.raises(TurnLost) as lost:
                            await session.prompt("go")
                        failures.append(lost.value)

                    failures: list[TurnLost] = []
                    tg.start_soon(prompt)
                    await _said(session, "before")
                    proxy.refuse()  # as a server whose token changed: 401
                    await proxy.cut()
                gate.set()
    [error] = failures
    assert error.session_id == session.session_id
    assert f"resume session {session.session_id}" in str(error)
    assert "refused to reconnect" in str(error) and "401" in str(error)
    assert status.lines[0] == "connection to the agent lost; reconnecting"
    assert status.lines[-1].startswith("the agent's server refused to reconnect")


async def test_an_agent_that_no_longer_knows_the_turn_fails_the_prompt_naming_the_session() -> None:
    """Each connection has a runtime of its own here (one store): the one that answers the
    resume did not run the turn, as after a restart."""
    gate = anyio.Event()
    status = _Status()
    async with served_agent([[Say("before "), WaitFor(gate)]]) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(), token=TOKEN, on_status=status) as conn:
                session = await conn.new_session()
                async with anyio.create_task_group() as tg:

                    async def prompt() -> None:
                        with pytest.raises(TurnLost) as lost:
                            await session.prompt("go")
                        failures.append(lost.value)

                    failures: list[TurnLost] = []
                    tg.start_soon(prompt)
                    await _said(session, "before")
                    await server.served[-1].aclose()
                    await status.back.wait()
                gate.set()
    [error] = failures
    assert error.session_id == session.session_id
    assert "the agent no longer knows that turn" in str(error)
    assert f"resume session {session.session_id} to follow it" in str(error)

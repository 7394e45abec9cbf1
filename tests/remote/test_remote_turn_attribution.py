"""Whose turn is it: two ``accord.client`` clients on one session over real loopback sockets,
each counting only its own turn, whatever the link did.

Client A (through a proxy that can cut and stall the link) prompts a long turn and is cut off
in the middle; it reconnects and resumes from its cursor while the turn waits, and its stream
goes on. Then both links stall (what the agent sends waits in the proxies), the turn ends on
the agent, B prompts and its turn runs; only then do the links flow again. A's first stream
ends with its turn (the end notice, ``_accord/turn`` with its ``tag``, comes after its updates
and before B's turn), and A prompts again at once, while B's turn may still be on its way to
it. Every update reaches both views once and in order, and each turn's stream and result hold
exactly that turn's text (the agent tells its client where its turn starts, in order:
``_accord/turn`` with the ``prompt`` tag the client put in ``_meta.accord``).
"""

from __future__ import annotations

import functools

import anyio
import pytest
from _remote_proxy import CuttableProxy
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client import ClientSession, TextDelta, TurnEvent, TurnFinished, TurnStream, connect
from accord.remote import AccessPolicy, serve_remote
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, Stream, WaitFor

pytestmark = pytest.mark.anyio

TOKEN = "test-token-0123456789abcdef"
FIRST = [f"a{i} " for i in range(20)]
REST = [f"b{i} " for i in range(20)]


async def _read(stream: TurnStream, into: list[TurnEvent]) -> None:
    async for event in stream:
        into.append(event)


async def _until(done: functools.partial[bool]) -> None:
    while not done():  # noqa: ASYNC110 - the runtime's own state: nothing to wait on
        await anyio.sleep(0.01)


def _over(runtime: AgentRuntime, engine: ScriptedEngine, session_id: str, prompt: str) -> bool:
    """Whether the agent has run the turn of ``prompt`` to its end."""
    prompts = engine.session(session_id).prompts
    return prompt in prompts and runtime.statistics().running_turns == 0


def _texts(events: list[TurnEvent]) -> list[str]:
    return [event.text for event in events if isinstance(event, TextDelta)]


def _agent_text(session: ClientSession) -> list[str]:
    return [message.text for message in session.view.messages if message.role == "agent"]


async def test_each_client_counts_only_its_own_turn_across_a_cut_and_stalled_links() -> None:
    gate = anyio.Event()
    engine = ScriptedEngine(
        [
            [Stream(count=len(FIRST), prefix="a"), WaitFor(gate), Stream(count=20, prefix="b")],
            [Say("two")],
            [Say("three")],
        ]
    )
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=60)
    policy = AccessPolicy.build(TOKEN, loopback=True)
    back = anyio.Event()
    first: list[TurnEvent] = []
    second: list[TurnEvent] = []
    third: list[TurnEvent] = []

    def status(line: str) -> None:
        if line.startswith("reconnected"):
            back.set()

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            port = await tg.start(
                functools.partial(
                    serve_remote, runtime.serve, host="127.0.0.1", port=0, policy=policy
                )
            )
            url = f"ws://127.0.0.1:{port}/acp"
            async with (
                CuttableProxy(port).running() as to_a,
                CuttableProxy(port).running() as to_b,
                connect(to_a.url(url), token=TOKEN, on_status=status) as a,
                connect(to_b.url(url), token=TOKEN, reconnect=False) as b,
            ):
                mine = await a.new_session()
                theirs = await b.resume_session(mine.session_id)
                session_id = mine.session_id
                # A's turn streams; the link is cut in the middle of it.
                stream = mine.stream("one")
                async for event in stream:
                    first.append(event)
                    if len(_texts(first)) == 5:
                        break
                await to_a.cut()
                await back.wait()  # reconnected and resumed from its cursor
                # Both links stall; the turn ends on the agent, then B's turn runs.
                to_a.hold()
                to_b.hold()
                gate.set()
                await _until(functools.partial(_over, runtime, engine, session_id, "one"))
                tg.start_soon(_read, theirs.stream("two"), second)
                await _until(functools.partial(_over, runtime, engine, session_id, "two"))
                to_a.release()
                to_b.release()
                # A's first stream ends with its turn; A prompts again at once.
                await _read(stream, first)
                await _read(mine.stream("three"), third)
                await theirs.wait_idle()
                assert _texts(second) == ["two"]
                assert _texts(third) == ["three"]
                assert isinstance(second[-1], TurnFinished) and isinstance(third[-1], TurnFinished)
                # A's first turn: all of it, across the cut, in order, and its end.
                assert _texts(first) == FIRST + REST
                assert isinstance(first[-1], TurnFinished) and first[-1].stop_reason == "end_turn"
                # Every update reached both views, once and in order.
                expected = ["".join(FIRST), "".join(REST), "two", "three"]
                assert _agent_text(mine) == expected
                assert _agent_text(theirs) == expected
            await runtime.aclose()
            tg.cancel_scope.cancel()

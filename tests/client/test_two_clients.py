"""Two ``accord.client`` clients on one agent runtime: what each one's turn stream says.

Both connect in-process to one :class:`~accord.agent.AgentRuntime` (real connections over the
in-memory pair); the second attaches with ``session/resume``. These are the library's views of
what the agent's multi-client tests check on the wire (tests/agent/test_attachments.py).
"""

from __future__ import annotations

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client import (
    AllowAll,
    AskCallback,
    Cancel,
    PermissionContext,
    PermissionDecision,
    PermissionRequested,
    PermissionResolved,
    TurnEvent,
    TurnFinished,
    connect,
)
from accord.schema import Implementation, SessionNotification
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, UseTool, WaitFor

pytestmark = pytest.mark.anyio


def _runtime() -> AgentRuntime:
    engine = ScriptedEngine([[UseTool(title="Deploy", kind="execute", ask=True), Say("done")]])
    return AgentRuntime(engine, store=MemorySessionStore())


async def test_a_question_another_client_answered_ends_cancelled_in_the_prompters_stream() -> None:
    asked = anyio.Event()

    async def never_answers(context: PermissionContext) -> PermissionDecision:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError

    runtime = _runtime()
    async with (
        connect(runtime, permission_policy=AskCallback(never_answers)) as prompter,
        connect(runtime, permission_policy=AllowAll()) as other,
    ):
        session = await prompter.new_session()
        await other.resume_session(session.session_id)
        events: list[TurnEvent] = []
        with anyio.fail_after(TIMEOUT):
            async for event in session.stream("deploy"):
                events.append(event)
    requested = [e for e in events if isinstance(e, PermissionRequested)]
    resolved = [e for e in events if isinstance(e, PermissionResolved)]
    assert len(requested) == 1
    # The other client's answer won: the prompter's question was withdrawn, and its stream
    # says so (before, it stayed "requested" for ever).
    assert [(r.request_id, r.decision, r.option) for r in resolved] == [
        (requested[0].request_id, Cancel(), None)
    ]
    assert events.index(resolved[0]) > events.index(requested[0])
    assert events[-1] == TurnFinished(stop_reason="end_turn")
    assert asked.is_set()


@pytest.mark.parametrize(
    ("title", "name", "shown"),
    [
        ("Zed", "zed", "Zed"),  # the title first
        (None, "nvim-acp", "nvim-acp"),  # else the name
        ("\x1b[31mRed\nEditor\x07", "x", "[31mRed Editor"),  # printable, one line
        (None, "", "another client"),  # no name at all
    ],
)
async def test_a_client_joining_a_running_turn_is_told_whose_turn_it_is(
    title: str | None, name: str, shown: str
) -> None:
    release = anyio.Event()
    engine = ScriptedEngine([[Say("working"), WaitFor(release)], [Say("mine")]])
    runtime = AgentRuntime(engine, store=MemorySessionStore())
    prompter_info = Implementation(name=name, title=title, version="1")
    working = anyio.Event()

    def listen(notification: SessionNotification) -> None:
        if notification.update.to_wire()["sessionUpdate"] == "agent_message_chunk":
            working.set()

    async with (
        connect(runtime, client_info=prompter_info) as prompter,
        connect(runtime, update_listener=listen) as other,
        anyio.create_task_group() as group,
    ):
        session = await prompter.new_session()
        idle = await other.resume_session(session.session_id)
        assert idle.observer is True and idle.turn_client is None  # no turn runs yet
        group.start_soon(session.prompt, "long job")
        with anyio.fail_after(TIMEOUT):
            await working.wait()
            # the client attached before the turn is told too, when it starts
            while idle.turn_client != shown:  # noqa: ASYNC110 - an extension notification
                await anyio.sleep(0.01)
        async with connect(runtime) as third:
            joined = await third.resume_session(session.session_id)
            assert joined.observer is True
            assert joined.turn_client == shown
            assert joined.view.joined_turn is True
            release.set()
            with anyio.fail_after(TIMEOUT):
                await session.wait_idle()
                # ... and when it ends
                while idle.turn_client is not None or joined.turn_client is not None:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            assert idle.observer is True  # still: it has not prompted
            result = await joined.prompt("and mine")
            assert result.text == "mine"
            assert joined.turn_client is None and joined.observer is False
            assert joined.view.joined_turn is False

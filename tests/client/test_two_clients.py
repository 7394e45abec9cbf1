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
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, UseTool

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

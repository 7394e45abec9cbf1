"""What an accord agent tells a client back after a drop about how its turns ended.

The answer to ``session/resume`` carries ``_meta.accord.endedTurns``: the tag of each of the
session's last eight tagged turns (the ``_meta.accord.prompt`` its client put on the prompt)
with its stop reason, oldest first; while a turn runs, ``_meta.accord.turn.tag`` names its
prompt's tag. Untagged turns are not listed. Two ``accord.client`` clients of one runtime in
this process; the second reads the raw answer.
"""

from __future__ import annotations

from typing import Any, cast

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client import connect
from accord.schema import PromptRequest, ResumeSessionRequest, TextContentBlock
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, Stop, WaitFor

pytestmark = pytest.mark.anyio


def _accord(meta: dict[str, Any] | None) -> dict[str, Any]:
    accord = (meta or {}).get("accord")
    assert isinstance(accord, dict)
    return cast("dict[str, Any]", accord)


async def test_a_resume_names_the_last_eight_ended_turns_and_the_running_one() -> None:
    gate = anyio.Event()
    turns = [[Say(f"t{i}"), Stop("max_tokens" if i == 9 else "end_turn")] for i in range(10)]
    engine = ScriptedEngine([*turns, [Say("last "), WaitFor(gate)]])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=60)
    with anyio.fail_after(TIMEOUT):
        async with connect(runtime) as a, connect(runtime) as b:
            session = await a.new_session()
            for i in range(10):
                await session.prompt(f"p{i}")
            request = ResumeSessionRequest(session_id=session.session_id, cwd=session.cwd)
            idle = _accord((await b.calls.resume_session(request)).meta)
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.prompt, "running")
                while not any("last" in m.text for m in session.view.messages):  # noqa: ASYNC110
                    await anyio.sleep(0.01)  # the view has no signal of its own
                running = _accord((await b.calls.resume_session(request)).meta)
                gate.set()
    ended = idle["endedTurns"]
    assert [turn["stopReason"] for turn in ended] == ["end_turn"] * 7 + ["max_tokens"]
    tags = [turn["tag"] for turn in ended]
    prefix = tags[0].rpartition(".")[0]
    # The client's tags: one random prefix per session, then the prompt's number (3 to 10).
    assert len(prefix) == 12 and tags == [f"{prefix}.{n}" for n in range(3, 11)]
    assert "turn" not in idle
    assert running["turn"]["tag"] == f"{prefix}.11"
    assert running["endedTurns"] == ended  # the running turn is not among them


async def test_untagged_turns_are_not_listed() -> None:
    """A client that does not tag its prompts (any client but accord's) is told nothing."""
    engine = ScriptedEngine([[Say("x")]])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=60)
    with anyio.fail_after(TIMEOUT):
        async with connect(runtime) as a, connect(runtime) as b:
            session = await a.new_session()
            session_id = session.session_id
            await a.calls.prompt(
                PromptRequest(session_id=session_id, prompt=[TextContentBlock(text="go")])
            )
            request = ResumeSessionRequest(session_id=session_id, cwd=session.cwd)
            answer = _accord((await b.calls.resume_session(request)).meta)
    assert "endedTurns" not in answer and "turn" not in answer

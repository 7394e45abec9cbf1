"""What real agents do that well-behaved ones do not: each gets a test.

Request id 0, session/update outside any turn and right after the prompt response, -32000
until authenticate (in test_connect.py), unknown `_` notifications, a slow initialize, a crash
mid-turn, a flood of stderr. The process-level ones run the script agents of
``tests/helpers/script_agent.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from _client_agents import WireAgent, agent_text
from helpers.script_agent import script_agent
from helpers.timeouts import TIMEOUT

from accord.client import AllowAll, TextDelta, TurnEvent, TurnFinished, connect
from accord.errors import AgentProcessExited
from accord.transports import SubprocessTransport

pytestmark = pytest.mark.anyio

#: The suite's one crashing agent (shared with the command-line and TUI tests).
CRASH_AGENT = script_agent("crash")
EXAMPLES = Path(__file__).parents[2] / "examples"


# --- wire-level oddities -----------------------------------------------------------------------


async def test_request_id_zero_both_ways(wire: WireAgent) -> None:
    """The client's first request has id 0; the agent's requests may use 0 as well."""
    answers: list[dict[str, object]] = []

    async def agent_side() -> None:
        initialize = await wire.expect("initialize")
        assert initialize["id"] == 0
        await wire.reply(initialize, {"protocolVersion": 1})
        await wire.reply(await wire.expect("session/new"), {"sessionId": "s1"})
        prompt = await wire.expect("session/prompt")
        await wire.send(
            {
                "id": 0,
                "method": "session/request_permission",
                "params": {
                    "sessionId": "s1",
                    "toolCall": {"toolCallId": "t1"},
                    "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}],
                },
            }
        )
        answers.append(await wire.receive())
        await wire.reply(prompt, {"stopReason": "end_turn"})

    policy = AllowAll()
    async with wire.playing(agent_side), connect(wire.client_end, permission_policy=policy) as conn:
        session = await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            await session.prompt("go")
    assert answers == [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "result": {"outcome": {"outcome": "selected", "optionId": "ok"}},
        }
    ]


async def test_updates_right_after_the_response_are_not_the_turns(wire: WireAgent) -> None:
    """The straggler folds into the view, never into the finished turn or its result."""

    async def agent_side() -> None:
        await wire.handshake("s1")
        for _ in range(2):
            prompt = await wire.expect("session/prompt")
            await wire.update("s1", agent_text("in turn", "m1"))
            await wire.reply(prompt, {"stopReason": "end_turn"})
            for index in range(50):
                await wire.update("s1", agent_text(f" late {index}", "m1"))
        await wire.reply(await wire.expect("_ping"), {})

    async with wire.playing(agent_side), connect(wire.client_end) as conn:
        session = await conn.new_session()
        events: list[TurnEvent] = []
        with anyio.fail_after(TIMEOUT):
            async for event in session.stream("first"):
                events.append(event)
            result = await session.prompt("second")
            await conn.ext_request("_ping")
    assert events == [
        TextDelta(text="in turn", content=events[0].content, message_id="m1"),  # type: ignore[union-attr]
        TurnFinished(stop_reason="end_turn"),
    ]
    assert result.text == "in turn"
    late = "".join(f" late {i}" for i in range(50))
    assert [m.text for m in session.view.messages] == [
        "first",
        "in turn" + late + "in turn" + late,
        "second",
    ]


@pytest.mark.wire_unchecked("the agent sends an update kind the schema does not know")
async def test_unknown_updates_and_notifications_are_ignored(wire: WireAgent) -> None:
    async def agent_side() -> None:
        await wire.handshake("s1")
        prompt = await wire.expect("session/prompt")
        await wire.update("s1", {"sessionUpdate": "_vendor_update", "x": 1})
        await wire.send({"method": "_vendor/notice", "params": {"text": "hi"}})
        await wire.send({"method": "vendor/unknown", "params": {}})
        await wire.update("s1", agent_text("still here"))
        await wire.reply(prompt, {"stopReason": "end_turn"})

    async with wire.playing(agent_side), connect(wire.client_end) as conn:
        session = await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            events = [event async for event in session.stream("x")]
    assert [type(e) for e in events] == [TextDelta, TurnFinished]


# --- real processes ----------------------------------------------------------------------------


@pytest.mark.subprocess
async def test_a_spawned_agent_round_trip() -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect([sys.executable, str(EXAMPLES / "echo_agent.py")]) as conn:
            assert isinstance(conn.transport, SubprocessTransport)
            assert conn.agent_info is not None and conn.agent_info.name == "echo-agent"
            session = await conn.new_session()
            result = await session.prompt("over a real pipe")
    assert result.text == "over a real pipe"


@pytest.mark.subprocess
async def test_a_crash_mid_turn_raises_promptly_with_exit_code_and_stderr() -> None:
    async with connect(CRASH_AGENT) as conn:
        session = await conn.new_session()
        with pytest.raises(AgentProcessExited) as info, anyio.fail_after(TIMEOUT):
            await session.prompt("go")
        assert conn.closed
        with pytest.raises(AgentProcessExited), anyio.fail_after(TIMEOUT):
            await session.prompt("again")
    assert info.value.exit_code == 3
    assert "RuntimeError: model exploded" in info.value.stderr_tail
    assert [m.text for m in session.view.messages] == ["go", "partial", "again"]
    assert session.state == "idle"


@pytest.mark.subprocess
async def test_a_crash_mid_stream_ends_the_stream_with_the_error() -> None:
    events: list[TurnEvent] = []
    with pytest.raises(AgentProcessExited) as info:
        await stream_until_the_end(events)
    assert info.value.exit_code == 3
    assert [type(e) for e in events] == [TextDelta]


async def stream_until_the_end(events: list[TurnEvent]) -> None:
    async with connect(CRASH_AGENT) as conn:
        session = await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            async for event in session.stream("go"):
                events.append(event)


@pytest.mark.subprocess
async def test_a_crash_before_initialize_is_reported() -> None:
    with pytest.raises(AgentProcessExited) as info, anyio.fail_after(TIMEOUT):
        async with connect(CRASH_AGENT, env={"CRASH_AT": "start"}):
            pass
    assert info.value.exit_code == 2
    assert "unknown flag" in info.value.stderr_tail


@pytest.mark.subprocess
async def test_a_flood_of_stderr_does_not_block() -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(script_agent("noisy"), env={"NOISE_MB": "16"}) as conn:
            session = await conn.new_session()
            result = await session.prompt("speak")
            transport = conn.transport
            assert isinstance(transport, SubprocessTransport)
            assert transport.stderr_bytes >= 16 * 1024 * 1024
    assert result.text == "quiet now"


@pytest.mark.subprocess
async def test_a_slow_initialize_is_waited_for() -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(script_agent("slow_start"), env={"SLOW_START": "2"}) as conn:
            session = await conn.new_session()
            assert (await session.prompt("worth the wait")).text == "worth the wait"


@pytest.mark.subprocess
async def test_an_initialize_timeout_names_what_the_agent_said() -> None:
    with anyio.fail_after(TIMEOUT), pytest.raises(TimeoutError, match="loading the model"):
        async with connect(
            script_agent("slow_start"), env={"SLOW_START": "60"}, initialize_timeout=0.5
        ):
            pass

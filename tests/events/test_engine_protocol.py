"""The engine protocol is usable: a test engine, driven the way the runtime will drive it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.engines import (
    ROOT_AGENT_ID,
    Engine,
    EngineCapabilities,
    EngineSession,
    Event,
    PermissionAnswer,
    SessionContext,
    StateSnapshot,
    SubAgentEvent,
    SubAgentStarted,
    SubAgentStopped,
    TextChunk,
    ThinkingChunk,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    ToolCallTracker,
    TurnCompleted,
    TurnContext,
    TurnOutput,
    UserMessageChunk,
    new_id,
)
from accord.events import SessionUpdateMapper, stamp
from accord.schema import (
    AvailableCommand,
    ContentBlock,
    PermissionOption,
    SessionMode,
    TextContentBlock,
    ToolCallUpdate,
)

pytestmark = pytest.mark.anyio

OPTIONS = (
    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
)


class EchoSession(EngineSession):
    """Echoes the prompt, edits a file with permission, delegates to a sub-agent."""

    def __init__(self, context: SessionContext) -> None:
        self.context = context
        history = context.history
        self.turns = [str(t) for t in history] if isinstance(history, list) else []
        self.modes: list[str] = []

    async def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        self.turns.append(text)
        yield ThinkingChunk(message_id=new_id(), content=TextContentBlock(text="echo it"))
        reply = new_id()
        for word in text.split():
            yield TextChunk(message_id=reply, content=TextContentBlock(text=word + " "))
        if text.startswith("wait"):
            await turn.wait_cancelled()
            return
        call = new_id()
        yield ToolCallStarted(tool_call_id=call, title="Write notes", tool_kind="edit")
        decision = await turn.request_permission(ToolCallUpdate(tool_call_id=call), OPTIONS)
        if not decision.allowed:
            yield ToolCallEnded(tool_call_id=call, status="failed")
        else:
            yield ToolCallProgress(tool_call_id=call, status="in_progress")
            helper = new_id()
            yield SubAgentStarted(sub_agent_id=helper, name="helper", parent_tool_call_id=call)
            sub_turn = turn.for_sub_agent(helper)
            sub_reply = new_id()
            yield SubAgentEvent(
                agent_id=sub_turn.agent_id,
                event=TextChunk(message_id=sub_reply, content=TextContentBlock(text="sub")),
            )
            yield SubAgentStopped(sub_agent_id=helper)
            yield ToolCallEnded(tool_call_id=call, status="completed")
        yield StateSnapshot(state=list(self.turns))
        if turn.mode_id == "ask":
            yield TurnCompleted(stop_reason="refusal")

    async def set_mode(self, mode_id: str) -> None:
        self.modes.append(mode_id)


class EchoEngine:
    """The engine: offers two modes and one command."""

    capabilities = EngineCapabilities(
        image=True,
        modes=(SessionMode(id="code", name="Code"), SessionMode(id="ask", name="Ask")),
        commands=(AvailableCommand(name="echo", description="Echo the prompt"),),
    )

    async def open_session(self, context: SessionContext) -> EchoSession:
        return EchoSession(context)


class MiniRuntime:
    """The least the agent runtime does around a turn (enough to prove the protocol)."""

    def __init__(self, answer: str = "yes") -> None:
        self.seq = 0
        self.mapper = SessionUpdateMapper()
        self.updates: list[dict[str, Any]] = []
        self.stored: list[Event] = []
        self.asked: list[tuple[str, str]] = []
        self.tools = ToolCallTracker()
        self.answer = answer
        self.cancel = anyio.Event()

    async def _ask(
        self, agent_id: str, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionAnswer:
        self.asked.append((agent_id, tool_call.tool_call_id))
        chosen = next(o for o in options if o.option_id == self.answer)
        return PermissionAnswer(outcome=chosen.kind, option_id=chosen.option_id)

    async def _publish(self, event: Event, turn_id: str, agent_id: str = ROOT_AGENT_ID) -> None:
        if isinstance(event, ToolCallStarted | ToolCallProgress | ToolCallEnded):
            self.tools.apply(event)
        self.seq += 1
        envelope = stamp(
            event, session_id="s-1", seq=self.seq, epoch=0, turn_id=turn_id, agent_id=agent_id
        )
        update = self.mapper.update_wire(envelope) if agent_id == ROOT_AGENT_ID else None
        if update is not None:
            self.updates.append(update)
        self.stored.append(event)

    async def prompt(self, session: EngineSession, text: str, mode_id: str = "code") -> str:
        turn = TurnContext(
            turn_id=new_id(),
            request_permission=self._ask,
            cancel_event=self.cancel,
            mode_id=mode_id,
        )
        prompt = [TextContentBlock(text=text)]
        message = new_id()
        for block in prompt:
            await self._publish(UserMessageChunk(message_id=message, content=block), turn.turn_id)
        stop = None
        async for output in session.run_turn(prompt, turn):
            if isinstance(output, SubAgentEvent):
                await self._publish(output.event, turn.turn_id, output.agent_id)
            elif isinstance(output, TurnCompleted):
                stop = output.stop_reason
            else:
                await self._publish(output, turn.turn_id)
        if stop is None:
            stop = "cancelled" if turn.cancelled else "end_turn"
        await self._publish(TurnCompleted(stop_reason=stop), turn.turn_id)
        return stop


def _tags(updates: list[dict[str, Any]]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]


async def test_a_turn_through_the_protocol() -> None:
    engine: Engine = EchoEngine()
    runtime = MiniRuntime()
    session = await engine.open_session(SessionContext(session_id="s-1", cwd="/w"))
    with anyio.fail_after(TIMEOUT):
        stop = await runtime.prompt(session, "hello there")
    assert stop == "end_turn"
    assert _tags(runtime.updates) == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call_update",  # the sub-agent's text is not shown: only its delegating call
    ]
    reply_ids = {
        u["messageId"] for u in runtime.updates if u["sessionUpdate"] == "agent_message_chunk"
    }
    assert len(reply_ids) == 1
    assert runtime.asked == [(ROOT_AGENT_ID, runtime.updates[4]["toolCallId"])]
    assert runtime.tools.unfinished() == ()
    await session.aclose()


async def test_state_snapshot_comes_back_as_history() -> None:
    engine = EchoEngine()
    runtime = MiniRuntime()
    first = await engine.open_session(SessionContext(session_id="s-1", cwd="/w"))
    with anyio.fail_after(TIMEOUT):
        await runtime.prompt(first, "one")
    snapshot = [e for e in runtime.stored if isinstance(e, StateSnapshot)][-1]
    reloaded = await engine.open_session(
        SessionContext(session_id="s-1", cwd="/w", history=snapshot.state)
    )
    assert reloaded.turns == ["one"]


async def test_a_rejected_tool_call_fails() -> None:
    runtime = MiniRuntime(answer="no")
    session = await EchoEngine().open_session(SessionContext(session_id="s-1", cwd="/w"))
    with anyio.fail_after(TIMEOUT):
        await runtime.prompt(session, "hi")
    assert runtime.updates[-1]["status"] == "failed"


async def test_the_engine_chooses_the_stop_reason() -> None:
    runtime = MiniRuntime()
    session = await EchoEngine().open_session(SessionContext(session_id="s-1", cwd="/w"))
    with anyio.fail_after(TIMEOUT):
        assert await runtime.prompt(session, "hi", mode_id="ask") == "refusal"


async def test_cancellation_reaches_the_engine() -> None:
    runtime = MiniRuntime()
    session = await EchoEngine().open_session(SessionContext(session_id="s-1", cwd="/w"))
    result: list[str] = []

    async def run() -> None:
        result.append(await runtime.prompt(session, "wait for me"))

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            assert result == []
            runtime.cancel.set()
    assert result == ["cancelled"]


async def test_permission_after_cancel_is_cancelled_without_asking() -> None:
    asked: list[str] = []

    async def ask(
        agent_id: str, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionAnswer:
        asked.append(agent_id)
        return PermissionAnswer(outcome="allow_once", option_id="yes")

    cancel = anyio.Event()
    turn = TurnContext(turn_id="t", request_permission=ask, cancel_event=cancel)
    sub = turn.for_sub_agent("sub")
    assert (await sub.request_permission(ToolCallUpdate(tool_call_id="c"), OPTIONS)).allowed
    assert asked == ["sub"]
    cancel.set()
    assert turn.cancelled
    assert sub.cancelled
    decision = await turn.request_permission(ToolCallUpdate(tool_call_id="c"), OPTIONS)
    assert decision == PermissionAnswer(outcome="cancelled")
    assert not decision.allowed
    assert asked == ["sub"]


async def test_default_hooks() -> None:
    class Minimal(EngineSession):
        async def run_turn(
            self, prompt: Sequence[ContentBlock], turn: TurnContext
        ) -> AsyncIterator[TurnOutput]:
            yield TextChunk(message_id="m", content=TextContentBlock(text="ok"))

    session = Minimal()
    assert await session.set_mode("any") is None
    assert await session.set_config_option("opt", True) is None
    assert await session.aclose() is None


def test_capabilities() -> None:
    none = EngineCapabilities()
    assert (none.modes, none.config_options, none.commands, none.initial_mode_id) == (
        (),
        (),
        (),
        None,
    )
    modes = (SessionMode(id="a", name="A"), SessionMode(id="b", name="B"))
    assert EngineCapabilities(modes=modes).initial_mode_id == "a"
    assert EngineCapabilities(modes=modes, default_mode_id="b").initial_mode_id == "b"
    with pytest.raises(ValueError, match="not among modes"):
        EngineCapabilities(modes=modes, default_mode_id="c")

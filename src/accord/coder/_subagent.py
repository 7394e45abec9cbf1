"""Delegation: the ``delegate`` tool hands a sub-task to a read-only sub-agent.

The model calls ``delegate(task=...)``; the tool runs a second pydantic-ai agent (same model,
the read-only tools, its own short instructions, none of the conversation) through the
pydantic-ai engine adapter, as a one-turn session of its own, and returns the sub-agent's final
answer as the tool's result. What the sub-agent does is reported live, under its own
``agent_id`` (a fresh :func:`~accord.events.new_id`):

* ``SubAgentStarted`` (naming the delegating tool call) and ``SubAgentStopped`` frame it;
* its text, thinking, tool calls and model calls are published as its own events. Standard ACP
  clients see none of them (they are not the root agent's), only the one ``delegate`` tool
  call; clients that opted in to accord's extended events see everything, nested.

The sub-agent's engine state and turn end are its own business and never reach the session
(they would overwrite the parent's history or end the parent's turn). It shares the parent
turn's cancellation (cancelling the turn stops it) and asks permissions through it, attributed
to itself (its tools never need any).

This module sits on pydantic-ai, the engine adapter and the coder's tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, cast

import anyio
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.models import Model

from ..engines import (
    Event,
    ModeChanged,
    SessionContext,
    StateSnapshot,
    SubAgentEvent,
    TextChunk,
    TurnCompleted,
    TurnContext,
    new_id,
)
from ..engines.pydantic_ai import PydanticAIEngine, ToolBehaviour, ToolCallInput
from ..schema import TextContentBlock
from ._deps import CoderDeps
from ._modes import DELEGATE
from ._signals import SubAgentBegan, SubAgentEnded, SubAgentOutput
from ._tools import BEHAVIOURS, MAX_TITLE_CHARS, read_only_toolset
from ._translator import CoderTranslator

__all__ = (
    "BEHAVIOURS_WITH_DELEGATE",
    "DELEGATE_BEHAVIOUR",
    "SUB_AGENT_INSTRUCTIONS",
    "SUB_AGENT_NAME",
    "delegate",
)

SUB_AGENT_NAME: Final = "explorer"
"""The name sub-agents are announced with."""

SUB_AGENT_INSTRUCTIONS: Final = """\
You are a read-only helper of a coding agent. You get one self-contained task: explore the \
code with your tools (read_file, list_directory, find_files, grep) and answer it. You cannot \
change anything. Answer with what you found, precisely and briefly, citing file paths (relative \
to the working directory) and line numbers."""

END_TIMEOUT_SECONDS: Final = 1.0
"""Bound on reporting the sub-agent's end when the turn is being cancelled."""

_NOT_FOR_PARENT: Final = (StateSnapshot, TurnCompleted, ModeChanged)


def _title(call: ToolCallInput) -> str:
    for key in ("description", "task"):
        value = call.args.get(key)
        if isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            title = f"Delegate: {text}"
            return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"
    return "Delegate"


DELEGATE_BEHAVIOUR: Final = ToolBehaviour(kind="other", title_from_args=_title)
"""How ``delegate`` calls are shown."""


class _Answer:
    """Collects the sub-agent's reply: the text of its last message."""

    def __init__(self) -> None:
        self.message_id: str | None = None
        self.parts: list[str] = []

    def add(self, event: Event) -> None:
        if not isinstance(event, TextChunk) or not isinstance(event.content, TextContentBlock):
            return
        if event.message_id != self.message_id:
            self.message_id = event.message_id
            self.parts = []
        self.parts.append(event.content.text)

    def text(self) -> str:
        answer = "".join(self.parts).strip()
        return answer or "The helper finished without an answer."


async def delegate(ctx: RunContext[CoderDeps], task: str, description: str = "") -> str:
    """Hand a self-contained research task to a read-only helper agent and get its answer.

    Use it for questions that need a lot of reading ("where is X handled and how?"); the
    helper reads and searches the code and answers, keeping that reading out of your context.
    It cannot change files or run commands, and it does not see this conversation.

    Args:
        task: The question, with all the context the helper needs.
        description: A short title for the user, 3 to 6 words.
    """
    deps = ctx.deps
    turn = deps.turn
    if turn is None:  # pragma: lax no cover - tools run only inside turns
        raise ToolFailed("delegate needs a running turn")
    sub_agent_id = new_id()
    await ctx.emit(SubAgentBegan(sub_agent_id=sub_agent_id, agent_name=SUB_AGENT_NAME))
    answer = _Answer()
    try:
        await _run(ctx, task, turn.for_sub_agent(sub_agent_id), answer)
    except Exception as exc:
        await _end(ctx, sub_agent_id, "failed")
        raise ToolFailed(f"the helper failed: {type(exc).__name__}: {exc}") from exc
    except BaseException:
        await _end(ctx, sub_agent_id, "cancelled")
        raise
    await _end(ctx, sub_agent_id, "cancelled" if turn.cancelled else "completed")
    return answer.text()


async def _run(ctx: RunContext[CoderDeps], task: str, turn: TurnContext, answer: _Answer) -> None:
    deps = ctx.deps
    roots = deps.workspace.roots
    model = ctx.model
    if not isinstance(model, Model):  # pragma: lax no cover - a chat run always has a Model
        raise ToolFailed("delegate needs a chat model")
    agent = Agent(
        cast("Model[Any]", model),
        deps_type=CoderDeps,
        instructions=SUB_AGENT_INSTRUCTIONS,
        toolsets=[read_only_toolset()],
    )
    engine = PydanticAIEngine(
        agent, tool_behaviour=BEHAVIOURS, deps=lambda _: deps, translator=CoderTranslator
    )
    session = await engine.open_session(
        SessionContext(
            session_id=f"{deps.session_id}/{turn.agent_id}",
            cwd=roots.cwd,
            additional_directories=roots.additional,
        )
    )
    try:
        prompt: Sequence[TextContentBlock] = [TextContentBlock(text=task)]
        async for output in session.run_turn(prompt, turn):
            if isinstance(output, SubAgentEvent):
                agent_id, event = output.agent_id, output.event
            else:
                agent_id, event = turn.agent_id, output
            if isinstance(event, _NOT_FOR_PARENT):
                continue
            answer.add(event)
            await ctx.emit(SubAgentOutput(output=SubAgentEvent(agent_id=agent_id, event=event)))
    finally:
        with anyio.CancelScope(shield=True):
            await session.aclose()


async def _end(
    ctx: RunContext[CoderDeps],
    sub_agent_id: str,
    outcome: Literal["completed", "failed", "cancelled"],
) -> None:
    with anyio.CancelScope(shield=True), anyio.move_on_after(END_TIMEOUT_SECONDS):
        await ctx.emit(SubAgentEnded(sub_agent_id=sub_agent_id, outcome=outcome))


BEHAVIOURS_WITH_DELEGATE: Final = {**BEHAVIOURS, DELEGATE: DELEGATE_BEHAVIOUR}
"""Every tool's behaviour, ``delegate`` included."""

"""Helpers for the TUI tests: an app on an in-process agent, and waiting for what it shows.

Agents run in this process (``connect`` serves an :class:`accord.roles.Agent` over the
in-memory transport): the scripted engine under the real agent runtime, or a hand-written
:class:`RawAgent` that sends exactly the ``session/update`` notifications a test gives it
(for surprising agents). Waiting is by condition, never by time: :func:`until` pauses the
pilot until a predicate holds (bounded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from helpers.timeouts import TIMEOUT
from textual.pilot import Pilot

from accord.agent import AgentRuntime
from accord.client import AgentSpec
from accord.engines import EngineCapabilities
from accord.roles import Agent
from accord.schema import (
    CancelNotification,
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    SessionNotification,
    SessionUpdate,
    StopReason,
)
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine, ScriptStep
from accord.tui import ChatApp

__all__ = (
    "SIZE",
    "RawAgent",
    "RawStep",
    "chat_app",
    "options",
    "scripted_agent",
    "text_of",
    "until",
)

#: Terminal size of every headless app (fixed, so snapshots are stable).
SIZE = (100, 36)


def scripted_agent(
    turns: Sequence[Sequence[ScriptStep]] = (),
    capabilities: EngineCapabilities | None = None,
) -> tuple[AgentRuntime, ScriptedEngine]:
    """The agent runtime on a scripted engine, with a memory store."""
    engine = ScriptedEngine(turns, capabilities=capabilities or EngineCapabilities())
    return AgentRuntime(engine, store=MemorySessionStore()), engine


def chat_app(agent: AgentSpec, cwd: Path | str, **options: Any) -> ChatApp:
    """The chat app on ``agent`` (an in-process agent, or a command line)."""

    async def build() -> AgentSpec:
        return agent

    return ChatApp(build, agent_name="test agent", cwd=str(cwd), **options)


async def until(
    pilot: Pilot[Any], predicate: Callable[[], object], within: float = TIMEOUT
) -> None:
    """Let the app run until ``predicate()`` is true (fails after ``within`` seconds)."""
    with anyio.fail_after(within):
        while not predicate():
            await pilot.pause(0.02)
    await pilot.pause()


RawStep = SessionUpdate | tuple[str, RequestPermissionRequest | None] | StopReason | str
"""A step of a :class:`RawAgent` turn: an update to send, a permission request (sent and
answered before going on; the answer is recorded), the stop reason that ends the turn, or
``"wait_cancel"``: wait for ``session/cancel``, then end ``cancelled``."""


class RawAgent(Agent):
    """An agent that sends, per prompt, exactly the updates it is given.

    ``before_prompt`` updates are sent right after ``session/new`` is answered (outside any
    turn); each prompt plays the next list of ``turns``. Permission requests are given as
    ``("ask", request)`` with the session id filled in at send time.
    """

    def __init__(
        self,
        turns: Sequence[Sequence[Any]] = (),
        *,
        prompt_capabilities: PromptCapabilities | None = None,
        session_id: str = "raw-1",
    ) -> None:
        self._turns = list(turns)
        self._caps = prompt_capabilities or PromptCapabilities()
        self.session_id = session_id
        self.prompts: list[PromptRequest] = []
        self.answers: list[Any] = []
        self.cancelled = anyio.Event()

    def prompt_capabilities(self) -> PromptCapabilities:
        return self._caps

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id=self.session_id)

    async def cancel(self, notification: CancelNotification) -> None:
        self.cancelled.set()

    async def send(self, update: SessionUpdate) -> None:
        """Send one update for the session (also usable outside a turn)."""
        await self.client.session_update(
            SessionNotification(session_id=self.session_id, update=update)
        )

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        self.prompts.append(request)
        steps = self._turns.pop(0) if self._turns else ["end_turn"]
        for step in steps:
            if step == "wait_cancel":
                await self.cancelled.wait()
                return PromptResponse(stop_reason="cancelled")
            if isinstance(step, str):
                return PromptResponse(stop_reason=step)  # type: ignore[arg-type]
            if isinstance(step, tuple):
                _, ask = step
                assert isinstance(ask, RequestPermissionRequest)
                ask.session_id = self.session_id
                response = await self.client.request_permission(ask)
                self.answers.append(response.outcome)
                continue
            await self.send(step)
        return PromptResponse(stop_reason="end_turn")


def options(*kinds: str) -> list[PermissionOption]:
    """Permission options of these kinds, named after them, with ids ``opt-<n>``."""
    return [
        PermissionOption(option_id=f"opt-{n}", name=kind.replace("_", " "), kind=kind)  # type: ignore[arg-type]
        for n, kind in enumerate(kinds, 1)
    ]


def text_of(widget: Any) -> str:
    """The plain text a ``Static`` shows."""
    return str(widget.render())

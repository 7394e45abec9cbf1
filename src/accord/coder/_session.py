"""One coder session: slash commands, the stored system prompt, and the model engine's turns.

:class:`CoderSession` wraps the pydantic-ai engine's session (the *inner* session, which runs
the model) and adds what the coder needs around it:

* **slash commands** are handled before the model is called (:mod:`._commands`): ``/mode``
  switches the mode (the runtime publishes ``current_mode_update`` and stores it), ``/clear``
  replaces the inner session by a fresh one without history (and saves that at once),
  ``/compact`` has the inner session summarise the older turns (:class:`Compacts`), ``/help``
  answers; none of them is a model turn;
* **state**: every ``StateSnapshot`` of the inner session (its message history) is wrapped with
  the session's system prompt (:class:`~._prompt.CoderState`), so the prompt is stored with the
  session and reused on load, resume and fork;
* **tool context**: the tools' :class:`~._deps.CoderDeps` follow the mode and know the running
  turn (for sub-agents);
* **MCP servers**: closed with the session.

This module imports nothing of pydantic-ai itself; the inner session is opened by the caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

import anyio
from pydantic import JsonValue

from ..engines import (
    ConfigValue,
    Engine,
    EngineSession,
    ModeChanged,
    PlanChanged,
    SessionContext,
    StateSnapshot,
    TextChunk,
    TitleChanged,
    TurnContext,
    TurnOutput,
    new_id,
)
from ..schema import ContentBlock, SessionConfigOption, TextContentBlock
from ._commands import Command, decide, parse_command
from ._deps import CoderDeps
from ._prompt import CoderState

__all__ = ("CLOSE_TIMEOUT_SECONDS", "Closer", "CoderSession", "Compacts")

CLOSE_TIMEOUT_SECONDS = 10.0
"""Bound on closing the session's model clients and MCP servers (shielded)."""


class Closer(Protocol):
    """Something the session closes last (its MCP servers)."""

    async def aclose(self) -> None:
        """Release it."""
        ...


@runtime_checkable
class Compacts(Protocol):
    """An inner session that compacts its history on request (the pydantic-ai engine's)."""

    def compact(self, instruction: str, turn: TurnContext) -> AsyncIterator[TurnOutput]:
        """Compact now: the compaction's events, then the new history's snapshot."""
        ...


class CoderSession(EngineSession):
    """A coder session (module docstring).

    Args:
        context: What the runtime gave when the session opened.
        state: The session's system prompt and the history the inner session opened with.
        deps: The tools' run-time context.
        engine: The model engine that opened ``inner`` (it opens a fresh one on ``/clear``).
        inner: The model engine's session.
        resources: Closed after the inner session (the MCP connections).
    """

    def __init__(
        self,
        *,
        context: SessionContext,
        state: CoderState,
        deps: CoderDeps,
        engine: Engine,
        inner: EngineSession,
        resources: Closer | None = None,
    ) -> None:
        """Wrap ``inner``; see the class docstring for the arguments."""
        self._context = context
        self._state = state
        self._deps = deps
        self._engine = engine
        self._inner = inner
        self._resources = resources
        self._title = context.title

    @property
    def system_prompt(self) -> str:
        """The instructions this session was created with."""
        return self._state.system_prompt

    def opening_state_json(self) -> JsonValue:
        """The state the session opened with: its system prompt and the history it was given.

        Only until the first ``StateSnapshot``: the session hands each snapshot on and keeps
        no copy of the history it carries (the model engine keeps the history it runs on, the
        runtime the stored form), so after a turn this holds the system prompt alone.
        """
        return self._state.to_json()

    @property
    def inner(self) -> EngineSession:
        """The model engine's session."""
        return self._inner

    @property
    def mode_id(self) -> str | None:
        """The session's current mode, as its tools see it."""
        return self._deps.mode_id

    async def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        """Run a slash command, or a model turn with its snapshots wrapped (module docstring)."""
        self._deps.mode_id = turn.mode_id
        self._deps.turn = turn
        try:
            command = parse_command(prompt)
            if command is not None:
                async for output in self._command(command, turn):
                    yield output
                return
            async for output in self._inner.run_turn(prompt, turn):
                yield self._wrapped(output)
        finally:
            self._deps.turn = None

    def _wrapped(self, output: TurnOutput) -> TurnOutput:
        if isinstance(output, StateSnapshot):
            # Wrapped, not kept: a copy of every history as Python objects was most
            # of what a turn left behind in the agent (benchmarks/bench_soak.py).
            self._state = dataclasses.replace(self._state, engine=None)
            if output.items is not None:
                # Only the new messages: they go in the engine's state, under "engine".
                path = ("engine", *output.path)
                return StateSnapshot.appended(output.items, base=output.base, path=path)
            wrapped = dataclasses.replace(self._state, engine=output.state)
            return StateSnapshot(state=wrapped.to_json())
        if isinstance(output, TitleChanged):
            self._title = output.title
        return output

    async def _command(self, command: Command, turn: TurnContext) -> AsyncIterator[TurnOutput]:
        action = decide(command, self._deps.mode_id)
        if action.switch_mode is not None:
            await self.set_mode(action.switch_mode)
            yield ModeChanged(mode_id=action.switch_mode)
        if action.clear:
            fresh = await self._engine.open_session(
                dataclasses.replace(
                    self._context,
                    history=None,
                    mode_id=self._deps.mode_id,
                    config_values=turn.config_values,
                    title=self._title,  # a cleared conversation keeps its title
                )
            )
            previous, self._inner = self._inner, fresh
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_SECONDS):
                await previous.aclose()
            self._state = dataclasses.replace(self._state, engine=None)
            yield PlanChanged(entries=())
            yield StateSnapshot(state=self._state.to_json())
        if action.compact is not None:
            inner = self._inner
            if isinstance(inner, Compacts):
                async for output in inner.compact(action.compact, turn):
                    yield self._wrapped(output)
            else:
                yield TextChunk(
                    message_id=new_id(),
                    content=TextContentBlock(text="This session's model cannot compact."),
                )
        if action.reply:
            yield TextChunk(message_id=new_id(), content=TextContentBlock(text=action.reply))

    async def set_mode(self, mode_id: str) -> None:
        """Switch mode: the tools and the model engine's filter follow at once."""
        self._deps.mode_id = mode_id
        await self._inner.set_mode(mode_id)

    async def set_config_option(
        self, config_id: str, value: ConfigValue
    ) -> Sequence[SessionConfigOption] | None:
        """Pass the change (a model switch) to the model engine."""
        return await self._inner.set_config_option(config_id, value)

    async def aclose(self) -> None:
        """Close the model engine's session, then the MCP servers."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_SECONDS):
            try:
                await self._inner.aclose()
            finally:
                if self._resources is not None:
                    await self._resources.aclose()

"""One ACP session of a pydantic-ai agent: its model, its message history, its turns.

The session holds what outlives a turn: the agent, the model client (:class:`SessionModel`),
the message history, the deps, the current mode, the cost so far. A turn is one pydantic-ai
run (:class:`TurnRun`), driven in a task of its own and handed to the runtime through
:func:`run_in_task` (why a task: :mod:`._pipe`). Per turn the session:

1. applies the turn's model choice (building that model's client if it changed);
2. turns the prompt into pydantic-ai user content;
3. builds the turn's translator and capability (tool filter and approvals for the current
   mode) and runs the turn, continuing the session's history;
4. compacts the history first when the engine compacts and the turn's request would take
   more than its share of the model's window (:mod:`._compaction`);
5. keeps the history the run leaves, also when it was cancelled or failed.

:meth:`PydanticAISession.compact` compacts on request (the coder's ``/compact``).

This module sits on pydantic-ai, the engine protocol and the modules beside it; the engine
opens one session per ACP session.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model
from pydantic_ai.tools import ToolDefinition

from ...errors import InvalidParams
from ...schema import ContentBlock, PermissionOption, SessionConfigOption, TextContentBlock
from .. import (
    CompactionChanged,
    CompactionSummaryAdded,
    ConfigValue,
    EngineSession,
    MessagesCompacted,
    SessionContext,
    StateSnapshot,
    TitleChanged,
    TurnContext,
    TurnOutput,
    new_id,
)
from ._approval import ApprovalHook, ToolFilter, TurnCapability, TurnState, waits_for_approval
from ._compaction import (
    Compaction,
    CompactionFailed,
    compacted_history,
    estimate_tokens,
    split_history,
    summarise,
)
from ._history import CostTotal, PackedHistory, history_to_json
from ._models import MODEL_CONFIG_ID, AnyModel, SessionModel
from ._pipe import Pipe, run_in_task
from ._prompt import user_content
from ._run import TurnRun
from ._stream import EventTranslator
from ._title import prompt_text, session_title
from ._tools import BehaviourLookup

__all__ = (
    "DEFAULT_CHUNK_INTERVAL",
    "RUN_METADATA_KEY",
    "PydanticAISession",
    "SessionOptions",
    "TranslatorFactory",
)

_log = logging.getLogger("accord.engines.pydantic_ai")

DEFAULT_CHUNK_INTERVAL: Final = 0.01
"""Seconds between two chunks of one message (see :class:`PydanticAIEngine`): 100 updates a
second is smoother than any editor repaints, and a 5,000-delta reply then costs the runtime,
the store and the client a few hundred events instead of 5,000."""

RUN_METADATA_KEY: Final = "accord"
"""Key of the run metadata (``RunContext.metadata``) the session sets on every run:
``{"session_id": ..., "turn_id": ..., "mode_id": ...}`` (mode at the start of the turn)."""

TranslatorFactory = Callable[..., EventTranslator]
"""Builds a turn's translator: called with ``cwd``, ``behaviours`` and ``expects_approval``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOptions:
    """The engine's settings, shared by its sessions."""

    behaviours: BehaviourLookup | None = None
    needs_approval: ApprovalHook | None = None
    tool_filter: ToolFilter | None = None
    permission_options: tuple[PermissionOption, ...] = ()
    translator: TranslatorFactory = EventTranslator
    chunk_interval: float | None = DEFAULT_CHUNK_INTERVAL
    titles: bool = False
    compaction: Compaction | None = None


class PydanticAISession(EngineSession):
    """One session: the agent, its model client, its history; runs one pydantic-ai run per turn.

    Built by :meth:`PydanticAIEngine.open_session`; see the module docstring for a turn.
    """

    def __init__(
        self,
        *,
        agent: AbstractAgent[Any, Any],
        context: SessionContext,
        model: SessionModel,
        history: list[ModelMessage],
        deps: Any,
        options: SessionOptions,
    ) -> None:
        """Create a session (the engine builds the model and restores the history)."""
        self._agent = agent
        self._context = context
        self._model = model
        self._history = PackedHistory(history)
        # Whether the runtime holds _history as the session's last state (a loaded history,
        # or the one the last snapshot made): the next snapshot may then hold only the new
        # messages. False for a new session and after a compaction (stored whole).
        self._stored = bool(history)
        self._deps = deps
        self._options = options
        self._cost = CostTotal(history, priced=model.priced)
        self._mode_id = context.mode_id
        self._turn_state: TurnState | None = None
        # Whether the last response's usage measures the history (false after a compaction).
        self._measured = True
        # An untitled session is titled from its next prompt (when the engine titles).
        self._untitled = options.titles and context.title is None

    @property
    def history(self) -> Sequence[ModelMessage]:
        """The model's message history so far (what the next turn continues)."""
        return tuple(self._history.unpack())

    @property
    def model_id(self) -> str | None:
        """The id of the current model choice (``None``: the agent's own model)."""
        return self._model.choice_id

    @property
    def mode_id(self) -> str | None:
        """The session's current mode."""
        return self._mode_id

    async def set_mode(self, mode_id: str) -> None:
        """Switch mode; a running turn applies it from its next model request."""
        self._mode_id = mode_id
        if self._turn_state is not None:
            self._turn_state.mode_id = mode_id

    async def set_config_option(
        self, config_id: str, value: ConfigValue
    ) -> Sequence[SessionConfigOption] | None:
        """Switch model when ``model`` changes (a running turn keeps its model).

        Raises:
            InvalidParams: the model is not one of the choices.
        """
        if config_id == MODEL_CONFIG_ID and self._model.choice_id is not None:
            if not isinstance(value, str):
                raise InvalidParams(f"config option {MODEL_CONFIG_ID!r} takes a model id")
            try:
                await self._model.switch(value)
            except KeyError:
                raise InvalidParams(f"unknown model {value!r}") from None
        return None

    async def aclose(self) -> None:
        """Close the model clients this session opened."""
        await self._model.aclose()

    async def _context_window(self, model: AnyModel | None) -> int | None:
        """The turn's model's window: the choice's (see :class:`SessionModel`), else, for the
        agent's own model, pydantic-ai's."""
        if model is not None:
            return await self._model.context_window()
        own = self._agent.model
        return own.context_window if isinstance(own, Model) else None

    def _expects_approval(
        self, name: str, args: Mapping[str, Any], definition: ToolDefinition | None
    ) -> bool:
        return waits_for_approval(
            self._options.needs_approval, self._mode_id, name, args, definition
        )

    async def _prepare_turn(self, turn: TurnContext) -> None:
        self._mode_id = turn.mode_id
        wanted = turn.config_values.get(MODEL_CONFIG_ID)
        if isinstance(wanted, str) and wanted != self._model.choice_id:
            try:
                await self._model.switch(wanted)
            except KeyError:
                _log.warning("unknown model %r in the turn's config; keeping the current", wanted)

    def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        """Run one prompt turn as one pydantic-ai run (an async generator of its events)."""
        interval = self._options.chunk_interval
        return run_in_task(
            lambda pipe: self._run_turn(prompt, turn, pipe),
            coalesce=interval is not None,
            interval=interval or 0.0,
        )

    async def _run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext, pipe: Pipe
    ) -> None:
        await self._prepare_turn(turn)
        model = self._model.begin_turn()
        text = prompt_text(prompt) if self._untitled else ""
        if not text:
            await self._run_model_turn(prompt, turn, pipe, model)
            return
        error: Exception | None = None
        async with anyio.create_task_group() as titling:
            titling.start_soon(self._title, text, turn, pipe, model)
            try:
                await self._run_model_turn(prompt, turn, pipe, model)
            except Exception as exc:  # raised below, outside the group (no group wrapping)
                error = exc
                titling.cancel_scope.cancel()
            if turn.cancelled:  # a cancelled turn does not wait for its title
                titling.cancel_scope.cancel()
        if error is not None:
            raise error

    async def _title(
        self, text: str, turn: TurnContext, pipe: Pipe, model: AnyModel | None
    ) -> None:
        """Title the session from its first prompt, beside the turn (see :mod:`._title`).

        A turn that fails or is cancelled before the title is ready leaves the session
        untitled, for the next prompt to title.
        """
        self._untitled = False
        try:
            title = await session_title(model or self._agent.model, text)
            if title is None or turn.cancelled:
                self._untitled = True
                return
        except BaseException:
            self._untitled = True
            raise
        await pipe.put(TitleChanged(title=title))

    def compact(self, instruction: str, turn: TurnContext) -> AsyncIterator[TurnOutput]:
        """Compact the history now (``instruction``: what the summary should keep), as a
        turn's outputs: the compaction's events, then the history's snapshot when it changed.
        """

        async def produce(pipe: Pipe) -> None:
            await self._prepare_turn(turn)
            model = self._model.begin_turn()
            try:
                if await self._compact(pipe, turn, model, instruction, requested=True):
                    await pipe.put(StateSnapshot(state=history_to_json(self._history.unpack())))
                    self._stored = True
            finally:
                await self._model.end_turn()

        return run_in_task(produce, coalesce=False, interval=0.0)

    async def _compact(
        self,
        pipe: Pipe,
        turn: TurnContext,
        model: AnyModel | None,
        instruction: str,
        *,
        requested: bool,
        estimate: int | None = None,
    ) -> bool:
        """Summarise the older turns (see :mod:`._compaction`); whether the history changed.

        Failure (the model's, nothing to summarise on request, the turn cancelled) says so
        with a ``failed``/``cancelled`` :class:`CompactionChanged`, the history unchanged.
        """
        policy = self._options.compaction or Compaction()
        messages = self._history.unpack()
        split = split_history(messages, policy.keep_turns)
        if split is None and not requested:
            return False
        compaction_id, marker_id = new_id(), new_id()
        await pipe.put(
            CompactionChanged(
                compaction_id=compaction_id, message_id=marker_id, status="in_progress"
            )
        )
        summary: str | None = None
        error = "there are no earlier turns to summarise yet"
        cancelled = False
        if split is not None:
            system, older, kept = split
            summariser = model if model is not None else self._agent.model
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as watch:

                    async def on_cancel() -> None:
                        await turn.wait_cancelled()
                        scope.cancel()

                    watch.start_soon(on_cancel)
                    try:
                        if summariser is None:
                            raise CompactionFailed("the session has no model to summarise with")
                        summary = await summarise(
                            summariser,
                            older,
                            instruction=instruction,
                            max_tokens=policy.max_summary_tokens,
                        )
                    except CompactionFailed as exc:
                        error = str(exc)
                    watch.cancel_scope.cancel()
            cancelled = scope.cancelled_caught
            if summary is not None and not cancelled:
                compacted = compacted_history(system, summary, kept)
                self._history = PackedHistory(compacted)
                self._stored = False
                self._measured = False
                await pipe.put(
                    CompactionSummaryAdded(
                        compaction_id=compaction_id, content=TextContentBlock(text=summary)
                    )
                )
                await pipe.put(
                    MessagesCompacted(
                        messages_before=len(messages),
                        messages_after=len(compacted),
                        tokens_before=estimate,
                    )
                )
                await pipe.put(
                    CompactionChanged(
                        compaction_id=compaction_id,
                        message_id=marker_id,
                        status="completed",
                        messages_before=len(messages),
                        messages_after=len(compacted),
                    )
                )
                return True
        await pipe.put(
            CompactionChanged(
                compaction_id=compaction_id,
                message_id=marker_id,
                status="cancelled" if cancelled else "failed",
                error="the turn was cancelled" if cancelled else error,
            )
        )
        return False

    async def _run_model_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext, pipe: Pipe, model: AnyModel | None
    ) -> None:
        try:
            # Held as objects for the turn: the estimate, a compaction and the run read the
            # same ones (see PackedHistory).
            messages = self._history.hold()
            policy = self._options.compaction
            if policy is not None:
                used = estimate_tokens(messages, prompt_text(prompt), measured=self._measured)
                due = policy.due(used, await self._context_window(model))
                if due and await self._compact(
                    pipe, turn, model, "", requested=False, estimate=used
                ):
                    messages = self._history.hold()
            options = self._options
            translator = options.translator(
                cwd=self._context.cwd,
                behaviours=options.behaviours,
                expects_approval=self._expects_approval,
            )
            state = self._turn_state = TurnState(self._mode_id)
            capability = TurnCapability(
                turn=turn,
                state=state,
                translator=translator,
                pipe=pipe,
                needs_approval=options.needs_approval,
                tool_filter=options.tool_filter,
                permission_options=options.permission_options,
            )
            metadata = {
                RUN_METADATA_KEY: {
                    "session_id": self._context.session_id,
                    "turn_id": turn.turn_id,
                    "mode_id": turn.mode_id,
                }
            }
            run = TurnRun(
                agent=self._agent,
                prompt=user_content(prompt),
                history=messages,
                model=model,
                context_window=functools.partial(self._context_window, model),
                deps=self._deps,
                metadata=metadata,
                turn=turn,
                translator=translator,
                capability=capability,
                cost=self._cost,
                priced=self._model.priced,
                stored=self._stored,
            )
            try:
                await run.run(pipe)
            finally:
                self._stored = run.snapshot_put
                if run.snapshot_put and run.added is not None:
                    # Only the new messages are packed (the earlier ones are as they were).
                    self._history.extend(run.messages, run.added)
                else:
                    self._history = PackedHistory(run.messages, hot=True)
                self._measured = True
        finally:
            self._history.release()
            self._turn_state = None
            await self._model.end_turn()

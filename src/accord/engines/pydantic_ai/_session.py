"""One ACP session of a pydantic-ai agent: its model, its message history, its turns.

A turn is one pydantic-ai run, driven with ``agent.iter()`` and ``node.stream()`` in the
runtime's own task (no extra task or channel per event: the cheapest way to consume a stream,
measured in ``benchmarks/bench_pydantic_ai_alone.py``). Per turn:

1. the prompt becomes pydantic-ai user content; the run continues the session's history, with
   the session's model client, its deps, and a :class:`TurnCapability` (mode tool filter,
   approvals);
2. each model request is framed by ``ModelCallStarted`` / ``ModelCallEnded`` (observe), its
   stream goes through the :class:`EventTranslator`, and its usage becomes ``UsageReported``
   when the model's context window is known: ``used`` = the context the response leaves
   (input + output tokens), ``size`` = the window, ``cost`` = the session's cumulative cost in
   USD while every response was priced. With an unknown window nothing is sent (ACP needs
   both numbers, and accord never invents one); the token counts still reach observers on
   ``ModelCallEnded``;
3. the turn ends with a ``StateSnapshot`` of the whole history, also when it was cancelled
   (with the partial response and every finished tool result) or failed (then the exception
   propagates after the snapshot). A turn that hit a limit ends with ``TurnCompleted``:
   ``max_tokens`` (the response was cut by the output limit, or a token usage limit),
   ``max_turn_requests`` (a request or tool-call usage limit), ``refusal`` (content filter).

This module sits on pydantic-ai, the engine protocol and the modules beside it; the engine
opens one session per ACP session.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from pydantic_ai import Agent
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.exceptions import RunCancelled, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model
from pydantic_ai.run import AgentRun

from ...agent._engine import ConfigValue, EngineSession, SessionContext, TurnContext, TurnOutput
from ...errors import InvalidParams
from ...events import (
    Event,
    ModelCallEnded,
    ModelCallStarted,
    StateSnapshot,
    TurnCompleted,
    UsageReported,
    new_id,
)
from ...schema import ContentBlock, Cost, PermissionOption, SessionConfigOption, StopReason
from ._approval import ApprovalHook, ToolFilter, TurnCapability, TurnState, waits_for_approval
from ._cancel import CancelWatch
from ._history import CostTotal, context_tokens, history_to_json
from ._models import MODEL_CONFIG_ID, SessionModel
from ._prompt import user_content
from ._stream import EventTranslator
from ._tools import BehaviourLookup

__all__ = ("RUN_METADATA_KEY", "PydanticAISession", "SessionOptions", "TranslatorFactory")

_log = logging.getLogger("accord.engines.pydantic_ai")

RUN_METADATA_KEY: Final = "accord"
"""Key of the run metadata (``RunContext.metadata``) the session sets on every run:
``{"session_id": ..., "turn_id": ..., "mode_id": ...}`` (mode at the start of the turn)."""

CANCELLED_TOOL_TEXT: Final = "Cancelled."
FAILED_TOOL_TEXT: Final = "The turn failed before the tool call finished."
NOT_RUN_TOOL_TEXT: Final = "The tool call was not run."

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


def _stop_reason(messages: Sequence[ModelMessage]) -> StopReason:
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            if message.finish_reason == "length":
                return "max_tokens"
            if message.finish_reason == "content_filter":
                return "refusal"
            return "end_turn"
    return "end_turn"


def _model_name(model: Model | str | None) -> str:
    if isinstance(model, Model):
        return model.model_name
    return model or "unknown"


def _limit_reason(error: UsageLimitExceeded) -> StopReason:
    return "max_tokens" if "token" in str(error).lower() else "max_turn_requests"


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
        self._history = history
        self._deps = deps
        self._options = options
        self._cost = CostTotal(history)
        self._mode_id = context.mode_id
        self._turn_state: TurnState | None = None

    @property
    def history(self) -> Sequence[ModelMessage]:
        """The model's message history so far (what the next turn continues)."""
        return tuple(self._history)

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

    def _expects_approval(self, name: str, args: Mapping[str, Any], definition: Any) -> bool:
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

    def _usage(self, call_id: str, response: ModelResponse) -> list[Event]:
        self._cost.add(response)
        usage = response.usage
        events: list[Event] = [
            ModelCallEnded(
                call_id=call_id,
                input_tokens=usage.input_tokens or None,
                output_tokens=usage.output_tokens or None,
            )
        ]
        window = self._model.context_window
        if window and (usage.input_tokens or usage.output_tokens):
            total: Decimal | None = self._cost.total
            cost = None if total is None else Cost(amount=float(total), currency="USD")
            events.append(UsageReported(used=context_tokens(response), size=window, cost=cost))
        return events

    async def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        """Run one prompt turn as one pydantic-ai run; see the module docstring."""
        await self._prepare_turn(turn)
        model = self._model.begin_turn()
        options = self._options
        translator = options.translator(
            cwd=self._context.cwd,
            behaviours=options.behaviours,
            expects_approval=self._expects_approval,
        )
        state = self._turn_state = TurnState(self._mode_id)
        watch = CancelWatch(turn)
        capability = TurnCapability(
            turn=turn,
            state=state,
            translator=translator,
            watch=watch,
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
        model_name = _model_name(model if model is not None else self._agent.model)
        agent_run: AgentRun[Any, Any] | None = None
        call_id: str | None = None
        stop_reason: StopReason = "end_turn"
        settled = False
        pending = state.pending
        try:
            async with self._agent.iter(
                user_content(prompt),
                message_history=self._history,
                model=model,
                deps=self._deps,
                capabilities=[capability],
                metadata=metadata,
            ) as agent_run:
                watch.start(agent_run)
                async for node in agent_run:
                    if Agent.is_model_request_node(node):
                        translator.begin_response()
                        call_id = new_id()
                        watch.armed = False
                        yield ModelCallStarted(call_id=call_id, model=model_name)
                        watch.resume()
                        async with node.stream(agent_run.ctx) as stream:
                            async for event in stream:
                                produced = translator.translate(event)
                                if produced:
                                    watch.armed = False
                                    for output in produced:
                                        yield output
                                    watch.resume()
                        watch.armed = False
                        for output in self._usage(call_id, stream.response):
                            yield output
                        call_id = None
                        watch.resume()
                    elif Agent.is_call_tools_node(node):
                        async with node.stream(agent_run.ctx) as stream:
                            async for event in stream:
                                produced = translator.translate(event)
                                if pending or produced:
                                    watch.armed = False
                                    while pending:
                                        yield pending.pop(0)
                                    for output in produced:
                                        yield output
                                    watch.resume()
                        watch.armed = False
                        while pending:
                            yield pending.pop(0)
                        watch.resume()
            watch.stop()
            self._history = agent_run.all_messages()
            settled = True
            stop_reason = _stop_reason(self._history)
            result = agent_run.result
            for output in translator.on_output(None if result is None else result.output):
                yield output
            for output in translator.end_unfinished(NOT_RUN_TOOL_TEXT):
                yield output
        except RunCancelled as cancelled:
            watch.stop()
            self._history = cancelled.all_messages()
            settled = True
            if call_id is not None:
                yield ModelCallEnded(call_id=call_id, outcome="cancelled")
            for output in translator.end_unfinished(CANCELLED_TOOL_TEXT):
                yield output
            stop_reason = "cancelled"
        except UsageLimitExceeded as limit:
            watch.stop()
            if agent_run is not None:
                self._history = agent_run.all_messages()
            settled = True
            stop_reason = _limit_reason(limit)
            for output in translator.end_unfinished(str(limit)):
                yield output
        except Exception:
            watch.stop()
            if agent_run is not None:
                self._history = agent_run.all_messages()
            settled = True
            if call_id is not None:
                yield ModelCallEnded(call_id=call_id, outcome="error")
            for output in translator.end_unfinished(FAILED_TOOL_TEXT):
                yield output
            yield StateSnapshot(state=history_to_json(self._history))
            raise
        finally:
            watch.stop()
            if not settled and agent_run is not None:
                # Cancelled from outside (the runtime gave up waiting) or closed at a yield:
                # nothing more can be yielded, but the live session keeps what the run did.
                self._history = agent_run.all_messages()
            self._turn_state = None
            await self._model.end_turn()
        yield StateSnapshot(state=history_to_json(self._history))
        if stop_reason not in ("end_turn", "cancelled"):
            yield TurnCompleted(stop_reason=stop_reason)

"""One turn's pydantic-ai run, driven in the producer task: events into the pipe.

The run is consumed with ``agent.iter()`` and ``node.stream()`` (the cheapest way, measured in
``benchmarks/bench_pydantic_ai_alone.py``):

1. each model request is framed by ``ModelCallStarted`` / ``ModelCallEnded`` (observe layer,
   token counts when reported); its stream goes through the :class:`EventTranslator`; its
   usage becomes ``UsageReported`` when the context window is known: ``used`` = the context
   the response leaves (input + output tokens), ``size`` = the window, ``cost`` = the
   session's cumulative cost in USD while every response was priced. With an unknown window
   nothing is sent: ACP needs both numbers and accord never invents one (the counts still
   reach observers on ``ModelCallEnded``);
   The turn's W3C trace context (``TurnContext.trace``) goes to the model server as
   ``traceparent`` / ``tracestate`` headers;
2. tool handling goes through the translator too; approvals happen inside it (the turn's
   :class:`TurnCapability`);
3. the run ends with a ``StateSnapshot`` of the whole history, also when it was cancelled (with
   the partial response and every finished tool result) or failed (then the exception
   propagates after the snapshot). A run that hit a limit ends with ``TurnCompleted``:
   ``max_tokens`` (the output limit cut the response, or a token usage limit),
   ``max_turn_requests`` (a request or tool-call usage limit), ``refusal`` (content filter:
   a response that ends ``content_filter``, or pydantic-ai's ``ContentFilterError`` for one
   with nothing in it). A refused turn leaves the history as it was before the turn: the
   refused prompt and everything after it are not part of the next prompt (the snapshot says
   so, so it holds after ``session/load`` too); what the model said is still in the events.

Cancellation: a watcher task waits for the turn's cancel signal and calls ``AgentRun.cancel()``,
which tears down the model stream (closing the HTTP response) and running tools and raises
``RunCancelled`` with everything the run completed; the run then ends like any other, with a
snapshot. If the producer task itself is cancelled (the runtime gave up waiting), the history
so far is still kept in :attr:`TurnRun.messages` for the live session.

This module sits on pydantic-ai, the engine protocol and the modules beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Final, Literal

import anyio
from pydantic import JsonValue
from pydantic_ai import Agent
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.exceptions import ContentFilterError, RunCancelled, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, UserContent
from pydantic_ai.models import Model
from pydantic_ai.run import AgentRun
from pydantic_ai.settings import ModelSettings

from ...schema import Cost, StopReason
from .. import (
    Event,
    ModelCallEnded,
    ModelCallStarted,
    StateSnapshot,
    TurnCompleted,
    TurnContext,
    UsageReported,
    new_id,
)
from ._approval import TurnCapability
from ._history import (
    HISTORY_PATH,
    CostTotal,
    context_tokens,
    history_items,
    history_to_json,
    message_json,
)
from ._models import WindowLookup
from ._pipe import Pipe
from ._stream import EventTranslator

__all__ = ("FAILED_TOOL_TEXT", "NOT_RUN_TOOL_TEXT", "TurnRun")

FAILED_TOOL_TEXT: Final = "The turn failed before the tool call finished."
"""The content of a tool call open when the run raised."""

NOT_RUN_TOOL_TEXT: Final = "The tool call was not run."
"""The content of a call left open by a finished run (e.g. one for external execution)."""


def _model_name(model: Model[Any] | str | None) -> str:
    if isinstance(model, Model):
        return model.model_name
    return model or "unknown"


def _stop_reason(messages: Sequence[ModelMessage]) -> StopReason:
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            if message.finish_reason == "length":
                return "max_tokens"
            if message.finish_reason == "content_filter":
                return "refusal"
            return "end_turn"
    return "end_turn"


def _limit_reason(error: UsageLimitExceeded) -> StopReason:
    return "max_tokens" if "token" in str(error).lower() else "max_turn_requests"


class TurnRun:
    """One pydantic-ai run for one turn; :meth:`run` puts its events into the pipe.

    Args:
        agent: The session's agent.
        prompt: The user prompt.
        history: The session's history before the turn.
        model: The model to run with (``None``: the agent's own).
        context_window: Finds the model's context window (``None``: unknown), asked after
            each model response until it knows.
        deps: The session's deps.
        metadata: The run metadata.
        turn: The turn.
        translator: The turn's event translator.
        capability: The turn's capability (tool filter and approvals).
        cost: The session's cost total (updated with each response).
        priced: Whether the model's responses have a price (:attr:`ModelChoice.priced`).
        stored: Whether the runtime holds ``history`` as the session's last state, so the
            turn's snapshot may hold only the messages it added (``StateSnapshot.appended``).
    """

    def __init__(
        self,
        *,
        agent: AbstractAgent[Any, Any],
        prompt: str | Sequence[UserContent],
        history: list[ModelMessage],
        model: Model[Any] | None,
        context_window: WindowLookup,
        deps: Any,
        metadata: dict[str, Any],
        turn: TurnContext,
        translator: EventTranslator,
        capability: TurnCapability,
        cost: CostTotal,
        priced: bool = True,
        stored: bool = False,
    ) -> None:
        """Prepare the run; see the class docstring for the arguments."""
        self._agent = agent
        self._prompt = prompt
        self._model = model
        self._window_lookup = context_window
        self._window: int | None = None
        self._deps = deps
        self._metadata = metadata
        self._turn = turn
        self._translator = translator
        self._capability = capability
        self._cost = cost
        self._priced = priced
        self._run: AgentRun[Any, Any] | None = None
        self._call_id: str | None = None
        self.messages: list[ModelMessage] = history
        """The history: the session's before the run, everything the run did after."""
        self._before = len(history)
        self._stored = stored
        self.snapshot_put = False
        """Whether the run put its snapshot (so the runtime holds :attr:`messages`)."""
        self.added: tuple[JsonValue, ...] | None = None
        """The stored form of the messages the run added, when its snapshot held only them
        (the earlier messages left as they were)."""
        # The one message a run could change in place (pydantic-ai merges a new prompt into a
        # trailing request): its JSON, to check before yielding only the new messages.
        self._last_json = message_json(history[-1]) if stored and history else None

    async def run(self, pipe: Pipe) -> None:
        """Run the turn, putting every event into ``pipe``; see the module docstring.

        Raises:
            Exception: whatever the run raised (after the snapshot), except cancellation
                and usage limits, which end the turn normally.
        """
        translator = self._translator
        stop_reason: StopReason = "end_turn"
        ended: Sequence[Event] = ()
        error: Exception | None = None
        async with anyio.create_task_group() as watchers:
            watchers.start_soon(self._watch_cancel)
            try:
                await self._drive(pipe)
                stop_reason = _stop_reason(self.messages)
                ended = translator.end_unfinished(NOT_RUN_TOOL_TEXT)
            except RunCancelled as cancelled:
                self.messages = cancelled.all_messages()
                stop_reason = "cancelled"
                ended = (
                    *self._ended_call("cancelled"),
                    *translator.end_unfinished(None),
                )
            except ContentFilterError:
                self._keep_messages()
                stop_reason = "refusal"
                ended = (*self._ended_call("error"), *translator.end_unfinished(None))
            except UsageLimitExceeded as limit:
                self._keep_messages()
                stop_reason = _limit_reason(limit)
                ended = translator.end_unfinished(str(limit))
            except Exception as exc:  # raised below, outside the task group (no group wrapping)
                self._keep_messages()
                error = exc
                ended = (*self._ended_call("error"), *translator.end_unfinished(FAILED_TOOL_TEXT))
            except BaseException:  # cancelled from outside: nothing more can be put
                self._keep_messages()
                raise
            finally:
                watchers.cancel_scope.cancel()
        if stop_reason == "refusal":
            self.messages = self.messages[: self._before]  # the refused prompt and after
        for event in ended:
            await pipe.put(event)
        await pipe.put(self._snapshot())
        self.snapshot_put = True
        if error is not None:
            raise error
        if stop_reason not in ("end_turn", "cancelled"):
            await pipe.put(TurnCompleted(stop_reason=stop_reason))

    def _snapshot(self) -> StateSnapshot:
        """The turn's snapshot: only its new messages when the runtime holds the ones before
        (``stored``) and the run left them as they were, else the whole history."""
        before, messages = self._before, self.messages
        if (
            self._stored
            and len(messages) >= before
            and (self._last_json is None or message_json(messages[before - 1]) == self._last_json)
        ):
            self.added = tuple(history_items(messages[before:]))
            return StateSnapshot.appended(self.added, base=before, path=HISTORY_PATH)
        return StateSnapshot(state=history_to_json(messages))

    async def _drive(self, pipe: Pipe) -> None:
        translator = self._translator
        model_name = _model_name(self._model if self._model is not None else self._agent.model)
        async with self._agent.iter(
            self._prompt,
            message_history=self.messages,
            model=self._model,
            deps=self._deps,
            capabilities=[self._capability],
            metadata=self._metadata,
            model_settings=_trace_settings(self._turn),
        ) as agent_run:
            self._run = agent_run
            if self._turn.cancelled:
                agent_run.cancel()
            async for node in agent_run:
                if Agent.is_model_request_node(node):
                    translator.begin_response()
                    self._call_id = call_id = new_id()
                    await pipe.put(ModelCallStarted(call_id=call_id, model=model_name))
                    plain_text_delta, append_text = translator.plain_text_delta, pipe.append_text
                    async with node.stream(agent_run.ctx) as stream:
                        async for event in stream:
                            # Most events are text deltas merging into the queued chunk of
                            # their message: appended as text, no chunk built per delta.
                            text = plain_text_delta(event)
                            if text is not None and append_text(*text):
                                continue
                            for output in translator.translate(event):
                                if not pipe.put_nowait(output):  # no coroutine per delta
                                    await pipe.put(output)
                    self._call_id = None
                    if self._window is None:
                        self._window = await self._window_lookup()
                    for output in self._usage(call_id, stream.response):
                        await pipe.put(output)
                elif Agent.is_call_tools_node(node):
                    async with node.stream(agent_run.ctx) as stream:
                        async for event in stream:
                            for output in translator.translate(event):
                                if not pipe.put_nowait(output):  # no coroutine per delta
                                    await pipe.put(output)
            self.messages = agent_run.all_messages()
            result = agent_run.result
            for output in translator.on_output(None if result is None else result.output):
                await pipe.put(output)

    async def _watch_cancel(self) -> None:
        await self._turn.wait_cancelled()
        # A pending permission request ends by itself (the runtime answers it "cancelled");
        # cancelling the run inside it would hand the runtime's own cancel scope our CancelledError.
        await self._capability.state.wait_no_permission()
        if self._run is not None:
            self._run.cancel()

    def _keep_messages(self) -> None:
        if self._run is not None:
            self.messages = self._run.all_messages()

    def _ended_call(self, outcome: Literal["error", "cancelled"]) -> tuple[Event, ...]:
        if self._call_id is None:
            return ()
        call_id, self._call_id = self._call_id, None
        return (ModelCallEnded(call_id=call_id, outcome=outcome),)

    def _usage(self, call_id: str, response: ModelResponse) -> list[Event]:
        self._cost.add(response, priced=self._priced)
        usage = response.usage
        events: list[Event] = [
            ModelCallEnded(
                call_id=call_id,
                input_tokens=usage.input_tokens or None,
                output_tokens=usage.output_tokens or None,
            )
        ]
        window = self._window
        if window and (usage.input_tokens or usage.output_tokens):
            total: Decimal | None = self._cost.total
            cost = None if total is None else Cost(amount=float(total), currency="USD")
            events.append(UsageReported(used=context_tokens(response), size=window, cost=cost))
        return events


def _trace_settings(turn: TurnContext) -> ModelSettings | None:
    """Model settings that carry the turn's W3C trace context as HTTP headers, if it has one.

    The model server then continues the trace (the client's, or the turn's span when the
    runtime traces); providers that take no extra headers ignore them.
    """
    if turn.trace is None:
        return None
    return ModelSettings(extra_headers=turn.trace.to_meta())

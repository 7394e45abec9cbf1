"""Spans for turns, model calls and tool calls, with OpenTelemetry when it is configured.

The observe layer of the event chain made visible in a tracing backend. When tracing is on,
the runtime opens, for each prompt turn:

* an ``invoke_agent`` span (kind SERVER) whose parent is the client's span named by the
  prompt's ``_meta.traceparent`` (a new trace without one); attributes: the session and turn
  ids, the stop reason; an engine failure sets its status to error;
* a ``chat {model}`` span (kind CLIENT) per model request, from ``ModelCallStarted`` to
  ``ModelCallEnded`` (token counts, error or cancelled outcome);
* an ``execute_tool {name}`` span per tool call, from ``ToolCallStarted`` to
  ``ToolCallEnded`` (approval included; ``failed`` sets the status to error).

Names and attributes follow OpenTelemetry's GenAI conventions (``gen_ai.*``) plus ``acp.*``.
While the turn runs, its span is the current trace context (:func:`accord.roles.use_trace`):
the requests the agent sends the client during the turn and the engine's model calls
(``TurnContext.trace``) name it as their parent, so the client's trace continues through
the agent and on to the model server.

Tracing is on when the runtime is given a tracer provider (``AgentRuntime(...,
tracer_provider=provider)``), or when the environment configures OpenTelemetry
(:func:`tracing_configured`: ``OTEL_TRACES_EXPORTER`` or an OTLP endpoint is set and
``OTEL_SDK_DISABLED`` is not ``true``; the global tracer provider is used, e.g. under
``opentelemetry-instrument``). Otherwise it costs nothing: this module imports OpenTelemetry
only when tracing is on (the optional extra ``accord[otel]``), and the per-event hook is one
context-variable lookup. Trace context in ``_meta`` is passed on either way.

Below: :mod:`accord.events`, :mod:`accord.roles` (trace context). Above: the runtime, which
opens the turn span, and the turn, which reports each event (:func:`observe_event`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from ..engines import (
    Event,
    ModelCallEnded,
    ModelCallStarted,
    ToolCallEnded,
    ToolCallStarted,
    TurnCompleted,
    TurnError,
)
from ..roles import TraceContext, use_trace

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = ("OTEL_ENVIRONMENT", "Tracing", "TurnSpans", "observe_event", "tracing_configured")

#: Environment variables that say OpenTelemetry export is configured.
OTEL_ENVIRONMENT: Final = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)

_turn_spans: ContextVar[TurnSpans | None] = ContextVar("accord_turn_spans", default=None)


def tracing_configured(environ: Mapping[str, str]) -> bool:
    """Whether the environment configures OpenTelemetry and it is installed."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    if not any(environ.get(name) for name in OTEL_ENVIRONMENT):
        return False
    return importlib.util.find_spec("opentelemetry") is not None


def observe_event(event: Event, agent_id: str) -> None:
    """Report an event of the running turn to its spans (nothing when tracing is off)."""
    spans = _turn_spans.get()
    if spans is not None:
        spans.observe(event, agent_id)


class Tracing:
    """Opens turn spans with a tracer from ``tracer_provider`` (``None``: the global one).

    Raises:
        ModuleNotFoundError: OpenTelemetry is not installed (``pip install accord[otel]``).
    """

    def __init__(self, tracer_provider: Any = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        from opentelemetry import trace

        try:
            accord_version = version("accord")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            accord_version = "0"
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self._tracer: Tracer = provider.get_tracer("accord", accord_version)

    @contextmanager
    def turn(
        self, *, session_id: str, turn_id: str, parent: TraceContext | None
    ) -> Generator[TurnSpans]:
        """Open the turn's span (child of ``parent``) for the block; see the module docstring."""
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind, Status, StatusCode
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        propagator = TraceContextTextMapPropagator()
        parent_context = None if parent is None else propagator.extract(parent.to_meta())
        span = self._tracer.start_span(
            "invoke_agent",
            context=parent_context,
            kind=SpanKind.SERVER,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "accord",
                "acp.session.id": session_id,
                "acp.turn.id": turn_id,
            },
        )
        context = trace.set_span_in_context(span, parent_context)
        carrier: dict[str, str] = {}
        propagator.inject(carrier, context)
        outgoing = TraceContext(
            carrier["traceparent"],
            carrier.get("tracestate"),
            None if parent is None else parent.baggage,
        )
        spans = TurnSpans(self._tracer, span, context)
        token = _turn_spans.set(spans)
        try:
            with use_trace(outgoing):
                yield spans
        except BaseException as exc:
            if isinstance(exc, Exception):
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            _turn_spans.reset(token)
            spans.close()


class TurnSpans:
    """The spans of one turn: the turn's, and the model and tool calls still open."""

    __slots__ = ("_context", "_open", "_span", "_tracer")

    def __init__(self, tracer: Tracer, span: Span, context: Context) -> None:
        self._tracer = tracer
        self._span = span
        self._context = context
        self._open: dict[tuple[str, str, str], Span] = {}

    @property
    def span(self) -> Span:
        """The turn's span."""
        return self._span

    def observe(self, event: Event, agent_id: str) -> None:
        """Open or close the span an event starts or ends."""
        match event:
            case ModelCallStarted():
                self._start(
                    ("model", agent_id, event.call_id),
                    f"chat {event.model}",
                    client=True,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": event.model,
                        "acp.agent.id": agent_id,
                    },
                )
            case ModelCallEnded():
                span = self._open.pop(("model", agent_id, event.call_id), None)
                if span is not None:
                    if event.input_tokens is not None:
                        span.set_attribute("gen_ai.usage.input_tokens", event.input_tokens)
                    if event.output_tokens is not None:
                        span.set_attribute("gen_ai.usage.output_tokens", event.output_tokens)
                    self._end(span, event.outcome)
            case ToolCallStarted():
                tool = event.name or event.title
                self._start(
                    ("tool", agent_id, event.tool_call_id),
                    f"execute_tool {tool}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": tool,
                        "gen_ai.tool.call.id": event.tool_call_id,
                        "acp.tool.kind": event.tool_kind,
                        "acp.tool.title": event.title,
                        "acp.agent.id": agent_id,
                    },
                )
            case ToolCallEnded():
                span = self._open.pop(("tool", agent_id, event.tool_call_id), None)
                if span is not None:
                    span.set_attribute("acp.tool.status", event.status)
                    self._end(span, "error" if event.status == "failed" else "ok")
            case TurnCompleted():
                self._span.set_attribute("acp.stop_reason", event.stop_reason)
            case TurnError():
                from opentelemetry.trace import Status, StatusCode

                self._span.set_attribute("error.type", event.error_type)
                self._span.set_status(Status(StatusCode.ERROR, event.error_type))
            case _:
                pass

    def _start(
        self,
        key: tuple[str, str, str],
        name: str,
        *,
        attributes: dict[str, Any],
        client: bool = False,
    ) -> None:
        from opentelemetry.trace import SpanKind

        previous = self._open.pop(key, None)
        if previous is not None:  # an id reused: the earlier span cannot stay open
            previous.end()
        kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
        self._open[key] = self._tracer.start_span(
            name, context=self._context, kind=kind, attributes=attributes
        )

    def _end(self, span: Span, outcome: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        if outcome == "error":
            span.set_status(Status(StatusCode.ERROR))
        elif outcome == "cancelled":
            span.set_attribute("acp.cancelled", True)
        span.end()

    def close(self) -> None:
        """End the spans still open (their calls never reported an end), then the turn's."""
        for span in self._open.values():
            span.set_attribute("acp.unfinished", True)
            span.end()
        self._open.clear()
        self._span.end()

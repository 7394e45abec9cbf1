"""Trace propagation through the agent: ``_meta`` trace context in, on, and as OpenTelemetry spans.

A role-level client sends prompts with (or without) ``traceparent`` / ``tracestate`` in
``_meta``; the engine asks permission and a question, so the tests see what the agent's own
requests carry. With OpenTelemetry's SDK and its in-memory exporter, the spans of a turn are
checked for names, parents and attributes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from accord.agent import AgentRuntime
from accord.agent._tracing import tracing_configured
from accord.engines import (
    EngineCapabilities,
    EngineSession,
    ModelCallEnded,
    ModelCallStarted,
    SessionContext,
    TextChunk,
    ToolCallEnded,
    ToolCallStarted,
    TurnContext,
    TurnOutput,
    new_id,
)
from accord.roles import Client, ClientSideConnection, TraceContext
from accord.schema import (
    ContentBlock,
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationSchema,
    InitializeRequest,
    NewSessionRequest,
    PromptRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SessionNotification,
    TextContentBlock,
    ToolCallUpdate,
)
from accord.store import MemorySessionStore
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CLIENT_SPAN}-01"
TRACESTATE = "vendor=opaque"


class ToolEngine:
    """Each turn: a model call, a tool call that asks permission, a question, a reply."""

    capabilities = EngineCapabilities()

    def __init__(self) -> None:
        self.traces: list[TraceContext | None] = []

    async def open_session(self, context: SessionContext) -> EngineSession:
        return _ToolSession(self)


class _ToolSession(EngineSession):
    def __init__(self, engine: ToolEngine) -> None:
        self.engine = engine

    async def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        self.engine.traces.append(turn.trace)
        yield ModelCallStarted(call_id="m1", model="fake-model")
        yield ModelCallEnded(call_id="m1", input_tokens=12, output_tokens=3)
        yield ToolCallStarted(tool_call_id="t1", title="Edit a.py", tool_kind="edit", name="edit")
        await turn.request_permission(ToolCallUpdate(tool_call_id="t1"), ())
        if "form" in turn.elicitation_modes:
            await turn.elicit_form("Why?", ElicitationSchema())
        yield ToolCallEnded(tool_call_id="t1", status="failed")
        yield TextChunk(message_id=new_id(), content=TextContentBlock(text="done"))


class TappingClient(Client):
    """Answers everything at once and keeps the ``_meta`` of each request the agent sent."""

    def __init__(self) -> None:
        self.metas: list[tuple[str, dict[str, Any] | None]] = []

    async def session_update(self, notification: SessionNotification) -> None:
        return None

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        self.metas.append(("session/request_permission", request.meta))
        return RequestPermissionResponse(
            outcome=SelectedRequestPermissionOutcome(option_id="allow_once")
        )

    async def create_elicitation(
        self, request: CreateElicitationRequest
    ) -> CreateElicitationResponse:
        self.metas.append(("elicitation/create", request.meta))
        return CreateElicitationResponse(action="decline")


async def prompt_with(meta: dict[str, Any] | None, **runtime_options: Any) -> TappingClient:
    """Serve a ToolEngine runtime, send one prompt with ``meta``; return the client."""
    client = TappingClient()
    runtime = AgentRuntime(ToolEngine(), store=MemorySessionStore(), **runtime_options)
    prompt_with.engine = runtime.engine  # type: ignore[attr-defined]
    agent_end, client_end = memory_transport_pair()
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.serve, agent_end)
            async with ClientSideConnection(client, client_end) as conn:
                await conn.initialize(
                    InitializeRequest(
                        protocol_version=1, client_capabilities=client.client_capabilities()
                    )
                )
                new = await conn.new_session(NewSessionRequest(cwd="/tmp", mcp_servers=[]))
                request = PromptRequest(
                    session_id=new.session_id, prompt=[TextContentBlock(text="go")], meta=meta
                )
                await conn.prompt(request)
            tg.cancel_scope.cancel()
    return client


def engine_traces() -> list[TraceContext | None]:
    engine: ToolEngine = prompt_with.engine  # type: ignore[attr-defined]
    return engine.traces


async def test_the_clients_trace_context_reaches_the_engine_and_every_request_back() -> None:
    client = await prompt_with({"traceparent": TRACEPARENT, "tracestate": TRACESTATE, "x": 1})
    expected = {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
    assert client.metas == [
        ("session/request_permission", expected),
        ("elicitation/create", expected),
    ]
    assert engine_traces() == [TraceContext(TRACEPARENT, TRACESTATE)]


@pytest.mark.parametrize(
    "meta",
    [
        None,
        {"traceparent": "not-a-traceparent"},
        {"traceparent": f"00-{'0' * 32}-{CLIENT_SPAN}-01"},  # all-zero trace id
        {"traceparent": f"ff-{TRACE_ID}-{CLIENT_SPAN}-01"},  # forbidden version
        {"tracestate": TRACESTATE},  # state without a parent means nothing
    ],
)
async def test_without_a_valid_traceparent_nothing_is_invented(meta: dict[str, Any] | None) -> None:
    client = await prompt_with(meta)
    assert client.metas == [("session/request_permission", None), ("elicitation/create", None)]
    assert engine_traces() == [None]


def _exporter() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _by_name(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


async def test_spans_for_the_turn_its_model_call_and_its_tool_call_continue_the_trace() -> None:
    provider, exporter = _exporter()
    client = await prompt_with({"traceparent": TRACEPARENT}, tracer_provider=provider)
    spans = _by_name(exporter.get_finished_spans())
    assert set(spans) == {"invoke_agent", "chat fake-model", "execute_tool edit"}
    turn, model, tool = spans["invoke_agent"], spans["chat fake-model"], spans["execute_tool edit"]
    # the turn continues the client's trace, as a child of the client's span
    assert turn.context is not None and f"{turn.context.trace_id:032x}" == TRACE_ID
    assert turn.parent is not None and f"{turn.parent.span_id:016x}" == CLIENT_SPAN
    assert turn.kind == SpanKind.SERVER
    assert turn.attributes is not None and turn.attributes["acp.stop_reason"] == "end_turn"
    # model and tool calls are children of the turn
    for child in (model, tool):
        assert child.parent is not None and child.parent.span_id == turn.context.span_id
    assert model.kind == SpanKind.CLIENT
    assert model.attributes is not None
    assert model.attributes["gen_ai.request.model"] == "fake-model"
    assert model.attributes["gen_ai.usage.input_tokens"] == 12
    assert model.attributes["gen_ai.usage.output_tokens"] == 3
    assert tool.attributes is not None and tool.attributes["gen_ai.tool.call.id"] == "t1"
    assert tool.status.status_code == StatusCode.ERROR  # the tool call failed
    # requests made during the turn name the turn's span as their parent
    turn_parent = f"00-{TRACE_ID}-{turn.context.span_id:016x}-01"
    assert [meta for _, meta in client.metas] == [{"traceparent": turn_parent}] * 2
    assert engine_traces() == [TraceContext(turn_parent)]


async def test_a_turn_without_trace_context_starts_a_new_trace() -> None:
    provider, exporter = _exporter()
    client = await prompt_with(None, tracer_provider=provider)
    [turn] = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    assert turn.parent is None and turn.context is not None
    sent = client.metas[0][1]
    assert sent is not None
    ids = f"00-{turn.context.trace_id:032x}-{turn.context.span_id:016x}-"
    assert sent["traceparent"].startswith(ids)


def test_tracing_is_configured_by_the_environment_only_when_asked() -> None:
    assert not tracing_configured({})
    assert tracing_configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert tracing_configured({"OTEL_TRACES_EXPORTER": "console"})
    assert not tracing_configured({"OTEL_TRACES_EXPORTER": "none"})
    assert not tracing_configured({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"})


def test_without_tracing_opentelemetry_is_never_imported() -> None:
    script = Path(__file__).with_name("_agent_untraced_turn.py")
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, str(script), str(TIMEOUT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"

"""FakeOpenAIServer's Responses endpoint, driven by the real `openai` client and by pydantic-ai.

`POST /v1/responses` answers with the Responses API's typed events: the SDK's stream helper
builds the final response from them (reasoning summary, output text, function call, usage), and
pydantic-ai's Responses model (an ``openai:`` model name) runs a tool round trip against it.
pydantic-ai runs only on asyncio, so the async tests are pinned to it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import openai
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import PartStartEvent, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall, ScriptedUsage

pytestmark = pytest.mark.asyncio_only("the openai client and pydantic-ai run on asyncio")


def _client(server: FakeOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def test_a_stream_builds_the_response_the_script_says() -> None:
    reply = ScriptedReply(
        reasoning=["think", "ing"],
        text=["Hel", "lo"],
        tool_calls=[ScriptedToolCall(name="read", arguments={"path": "a.py"}, id="call_1")],
        usage=ScriptedUsage(prompt_tokens=40, completion_tokens=7, cached_tokens=10),
    )
    with FakeOpenAIServer([reply]) as server, _client(server) as client:
        with client.responses.stream(model="gpt-fake", input="hi") as stream:
            kinds = [event.type for event in stream]
            response = stream.get_final_response()
        (request,) = server.requests
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 2
    assert kinds.count("response.function_call_arguments.delta") == 3
    reasoning, message, call = response.output
    assert reasoning.type == "reasoning"
    assert [s.text for s in reasoning.summary] == ["thinking"]
    assert message.type == "message" and response.output_text == "Hello"
    assert call.type == "function_call" and (call.call_id, call.name) == ("call_1", "read")
    assert call.arguments == '{"path":"a.py"}'
    assert response.status == "completed"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (40, 7)
    assert response.usage.input_tokens_details.cached_tokens == 10
    assert request.path == "/v1/responses"
    assert request.body["stream"] is True


def test_a_request_without_stream_gets_one_response() -> None:
    reply = ScriptedReply(text=["one ", "body"], finish_reason="length")
    with FakeOpenAIServer([reply]) as server, _client(server) as client:
        response = client.responses.create(model="gpt-fake", input="hi")
    assert response.output_text == "one body"
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"


@asynccontextmanager
async def responses_agent(server: FakeOpenAIServer) -> AsyncGenerator[Agent[None, str]]:
    """A pydantic-ai agent on the real Responses code path, pointed at `server`."""
    provider = OpenAIProvider(base_url=server.base_url, api_key="test")
    model = OpenAIResponsesModel("gpt-fake", provider=provider)
    with override_allow_model_requests(True):
        async with provider:
            yield Agent(model)


@pytest.mark.anyio
async def test_a_pydantic_ai_agent_runs_a_tool_round_trip() -> None:
    def model(body: dict[str, Any]) -> ScriptedReply:
        outputs = [i for i in body["input"] if i.get("type") == "function_call_output"]
        if outputs:
            return ScriptedReply(text=["sum is ", outputs[0]["output"]])
        call = ScriptedToolCall(name="add", arguments={"a": 2, "b": 3}, id="call_add")
        return ScriptedReply(text=["adding"], tool_calls=[call])

    with FakeOpenAIServer(model) as server:
        async with responses_agent(server) as agent:

            @agent.tool_plain
            def add(a: int, b: int) -> int:
                """Add two numbers."""
                return a + b

            async with agent.run_stream_events("2+3?") as events:
                collected = [event async for event in events]
                assert events.result is not None
                output = events.result.output
            first, second = server.requests
    starts = [e.part for e in collected if isinstance(e, PartStartEvent)]
    assert [type(p) for p in starts[:2]] == [TextPart, ToolCallPart]
    assert output == "sum is 5"
    assert first.path == second.path == "/v1/responses"
    assert first.body["tools"][0]["name"] == "add"
    (result,) = [i for i in second.body["input"] if i.get("type") == "function_call_output"]
    assert result["call_id"] == "call_add"

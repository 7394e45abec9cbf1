"""FakeAnthropicServer, driven by the real `anthropic` client and by a real pydantic-ai `Agent`.

The server answers the Messages API as Anthropic does: the SDK's own stream accumulator builds
the message from the events (thinking, text and tool-use blocks, the stop reason, the usage),
and pydantic-ai's Anthropic model runs a tool round trip against it. pydantic-ai runs only on
asyncio, so the async tests are pinned to it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, cast

import anthropic
import pytest
from anthropic import AsyncAnthropic
from pydantic_ai import Agent
from pydantic_ai.messages import PartStartEvent, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from accord.testing import (
    FakeAnthropicServer,
    ScriptedError,
    ScriptedReply,
    ScriptedToolCall,
    ScriptedUsage,
)

pytestmark = pytest.mark.asyncio_only("the anthropic client and pydantic-ai run on asyncio")

_KEY = "sk-ant-fake-test"


def _client(server: FakeAnthropicServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key=_KEY, max_retries=0)


def test_a_stream_builds_the_message_the_script_says() -> None:
    reply = ScriptedReply(
        reasoning=["let me ", "see"],
        text=["Hel", "lo"],
        tool_calls=[ScriptedToolCall(name="read", arguments={"path": "a.py"}, id="toolu_1")],
        usage=ScriptedUsage(prompt_tokens=40, completion_tokens=7, cached_tokens=10),
    )
    with FakeAnthropicServer([reply]) as server, _client(server) as client:
        with client.messages.stream(
            model="claude-fake",
            max_tokens=100,
            messages=[{"role": "user", "content": "hi"}],
        ) as stream:
            kinds = [event.type for event in stream]
            message = stream.get_final_message()
        (request,) = server.requests
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"
    assert {"content_block_start", "content_block_delta", "content_block_stop"} <= set(kinds)
    thinking, text, tool = message.content
    assert thinking.type == "thinking" and thinking.thinking == "let me see"
    assert thinking.signature == "fake-signature-0"
    assert text.type == "text" and text.text == "Hello"
    assert tool.type == "tool_use" and (tool.id, tool.name) == ("toolu_1", "read")
    assert tool.input == {"path": "a.py"}
    assert message.stop_reason == "tool_use"
    assert message.usage.input_tokens == 30
    assert message.usage.cache_read_input_tokens == 10
    assert message.usage.output_tokens == 7
    assert request.path.startswith("/v1/messages")
    # anthropic 2.x sends the key as a bearer token (1.x sent x-api-key)
    assert request.headers["authorization"] == f"Bearer {_KEY}"
    assert "anthropic-version" in request.headers
    assert request.body["stream"] is True


def test_a_request_without_stream_gets_one_message() -> None:
    reply = ScriptedReply(text=["one ", "body"], finish_reason="length")
    with FakeAnthropicServer([reply]) as server, _client(server) as client:
        message = client.messages.create(
            model="claude-fake", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    (block,) = message.content
    assert block.type == "text" and block.text == "one body"
    assert message.stop_reason == "max_tokens"
    assert message.model == "claude-fake"


def test_errors_come_in_the_apis_shape() -> None:
    scripted = ScriptedError(status=429, message="slow down", type="rate_limit_error")
    with FakeAnthropicServer([ScriptedReply(error=scripted)]) as server, _client(server) as client:
        with pytest.raises(anthropic.RateLimitError) as raised:
            client.messages.create(
                model="claude-fake", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        with pytest.raises(anthropic.BadRequestError) as exhausted:
            client.messages.create(
                model="claude-fake", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }
    assert "FakeAnthropicServer: script exhausted" in str(exhausted.value)


def test_the_openai_endpoints_are_not_served() -> None:
    with FakeAnthropicServer([ScriptedReply(text=["x"])]) as server, _client(server) as client:
        with pytest.raises(anthropic.NotFoundError):
            client.post("/v1/chat/completions", body={"model": "m"}, cast_to=object)
        assert server.requests == ()


@asynccontextmanager
async def anthropic_agent(server: FakeAnthropicServer) -> AsyncGenerator[Agent[None, str]]:
    """A pydantic-ai agent on the real Anthropic code path, pointed at `server`."""
    client = AsyncAnthropic(base_url=server.base_url, api_key=_KEY, max_retries=0)
    model = AnthropicModel("claude-fake", provider=AnthropicProvider(anthropic_client=client))
    with override_allow_model_requests(True):
        async with client:
            yield Agent(model)


@pytest.mark.anyio
async def test_a_pydantic_ai_agent_runs_a_tool_round_trip() -> None:
    def model(body: dict[str, Any]) -> ScriptedReply:
        last: list[Any] | str = body["messages"][-1]["content"]
        results: list[dict[str, Any]] = [
            b for b in last if isinstance(b, dict) and cast(Any, b).get("type") == "tool_result"
        ]
        if results:
            content: Any = results[0]["content"]
            value = str(content if isinstance(content, str) else content[0]["text"])
            return ScriptedReply(text=["sum is ", value])
        call = ScriptedToolCall(name="add", arguments={"a": 2, "b": 3}, id="toolu_add")
        return ScriptedReply(reasoning=["adding"], text=["ok"], tool_calls=[call])

    with FakeAnthropicServer(model) as server:
        async with anthropic_agent(server) as agent:

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
    assert [type(p) for p in starts[:3]] == [ThinkingPart, TextPart, ToolCallPart]
    assert output == "sum is 5"
    assert first.body["tools"][0]["name"] == "add"
    (result,) = [b for b in second.body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["tool_use_id"] == "toolu_add"

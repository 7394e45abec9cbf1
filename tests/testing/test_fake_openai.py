"""FakeOpenAIServer, driven by the real `openai` client and by a real pydantic-ai `Agent`.

pydantic-ai 2.x runs only on asyncio (`asyncio.create_task` inside `Agent.iter`), so the async
tests here are pinned to asyncio.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeAlias

import anyio
import openai
import pytest
from helpers.timeouts import TIMEOUT
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam
from pydantic_ai import Agent, ModelMessagesTypeAdapter
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
)
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import accord.testing
from accord.testing import (
    FakeOpenAIServer,
    Outcome,
    RecordedRequest,
    ScriptedError,
    ScriptedReply,
    ScriptedToolCall,
    ScriptedUsage,
    dump_script,
    load_script,
)

USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]

ClientFactory: TypeAlias = Callable[[FakeOpenAIServer], openai.OpenAI]

pytestmark = pytest.mark.asyncio_only("the openai client and pydantic-ai run on asyncio")


@pytest.fixture
def client_factory() -> Iterator[ClientFactory]:
    """Sync `openai` clients with retries off (a scripted error must not consume the next reply)."""
    clients: list[openai.OpenAI] = []

    def make(server: FakeOpenAIServer) -> openai.OpenAI:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@asynccontextmanager
async def openai_agent(server: FakeOpenAIServer) -> AsyncGenerator[Agent[None, str]]:
    """A pydantic-ai agent on the real OpenAI chat-completions code path, pointed at `server`."""
    provider = OpenAIProvider(base_url=server.base_url, api_key="test")
    model = OpenAIChatModel("fake-model", provider=provider)
    with override_allow_model_requests(True):
        async with provider:
            yield Agent(model)


def collect_text(chunks: Iterable[ChatCompletionChunk], into: list[str] | None = None) -> str:
    """Append each chunk's text delta to `into` as it arrives; return the whole text."""
    into = [] if into is None else into
    for chunk in chunks:
        into.extend(choice.delta.content or "" for choice in chunk.choices)
    return "".join(into)


async def wait_for(
    server: FakeOpenAIServer, count: int, outcome: Outcome | None = None
) -> tuple[RecordedRequest, ...]:
    wait = functools.partial(server.wait_for_requests, count, outcome=outcome, timeout=TIMEOUT)
    return await anyio.to_thread.run_sync(wait)


# -- the openai client ---------------------------------------------------------------------------


def test_streaming_text_reasoning_and_usage(client_factory: ClientFactory) -> None:
    reply = ScriptedReply(
        reasoning=["thin", "king"],
        text=["Hel", "lo", "!"],
        usage=ScriptedUsage(prompt_tokens=11, completion_tokens=5, cached_tokens=3),
    )
    with FakeOpenAIServer([reply]) as server:
        stream = client_factory(server).chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)

    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert deltas[0].role == "assistant"
    assert [d.content for d in deltas[1:] if d.content] == ["Hel", "lo", "!"]
    reasoning = [getattr(d, "reasoning_content", None) for d in deltas]
    assert [r for r in reasoning if r] == ["thin", "king"]
    assert chunks[-2].choices[0].finish_reason == "stop"
    usage = chunks[-1].usage
    assert usage is not None and not chunks[-1].choices
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (11, 5, 16)
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 3
    assert {c.model for c in chunks} == {"m"}


def test_no_usage_chunk_unless_requested(client_factory: ClientFactory) -> None:
    script = [ScriptedReply(text=["a"]), ScriptedReply(text=["b"], include_usage=False)]
    with FakeOpenAIServer(script) as server:
        client = client_factory(server)
        first = list(client.chat.completions.create(model="m", messages=USER, stream=True))
        second = list(
            client.chat.completions.create(
                model="m", messages=USER, stream=True, stream_options={"include_usage": True}
            )
        )
    assert all(c.usage is None for c in first + second)


def test_non_streaming_completion(client_factory: ClientFactory) -> None:
    reply = ScriptedReply(
        reasoning=["why"],
        text=["Hello", " there"],
        tool_calls=[ScriptedToolCall(name="read", arguments={"path": "a.txt"}, id="call_x")],
        usage=ScriptedUsage(prompt_tokens=7, completion_tokens=2, reasoning_tokens=1),
    )
    with FakeOpenAIServer([reply]) as server:
        completion = client_factory(server).chat.completions.create(model="m", messages=USER)

    choice = completion.choices[0]
    assert choice.message.content == "Hello there"
    assert getattr(choice.message, "reasoning_content", None) == "why"
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert call.id == "call_x"
    assert call.type == "function"
    assert (call.function.name, json.loads(call.function.arguments)) == ("read", {"path": "a.txt"})
    assert completion.usage is not None
    assert completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens == 1


def test_tool_call_arguments_stream_in_pieces(client_factory: ClientFactory) -> None:
    call = ScriptedToolCall(name="write", arguments='{"path": "b.txt", "text": "x"}', pieces=4)
    with FakeOpenAIServer([ScriptedReply(tool_calls=[call])]) as server:
        chunks = list(
            client_factory(server).chat.completions.create(model="m", messages=USER, stream=True)
        )
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert calls[0].id == "call_0_0"
    assert calls[0].function is not None and calls[0].function.name == "write"
    pieces = [tc.function.arguments or "" for tc in calls[1:] if tc.function is not None]
    assert len(pieces) == 4
    assert "".join(pieces) == '{"path": "b.txt", "text": "x"}'
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_models_endpoint(client_factory: ClientFactory) -> None:
    with FakeOpenAIServer(models=["small", "large"]) as server:
        models = client_factory(server).models.list()
    assert [m.id for m in models.data] == ["small", "large"]


def test_requests_are_recorded(client_factory: ClientFactory) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["1"]), ScriptedReply(text=["2"])]) as server:
        client = client_factory(server)
        client.chat.completions.create(model="m", messages=USER)
        list(client.chat.completions.create(model="m2", messages=USER * 2, stream=True))
        # The server marks a stream completed just after its last bytes reach the client.
        first, second = server.wait_for_requests(2, outcome="completed")

    assert first.index == 0 and second.index == 1
    assert first.method == "POST" and first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer test"
    assert first.body == {"model": "m", "messages": USER}
    assert second.body["stream"] is True
    assert second.messages == USER * 2
    assert (first.outcome, second.outcome) == ("completed", "completed")


def test_exhausted_script_answers_400(client_factory: ClientFactory) -> None:
    with FakeOpenAIServer([]) as server:
        with pytest.raises(openai.BadRequestError, match="script exhausted after 0 replies"):
            client_factory(server).chat.completions.create(model="m", messages=USER)
        # The server records the outcome after the answer went out: wait for it, do not race.
        (record,) = server.wait_for_requests(1, outcome="error")
        assert record.outcome == "error"


def test_scripted_error(client_factory: ClientFactory) -> None:
    error = ScriptedError(status=401, message="bad key", type="auth", code="invalid_api_key")
    with FakeOpenAIServer([ScriptedReply(error=error), ScriptedReply(text=["ok"])]) as server:
        client = client_factory(server)
        with pytest.raises(openai.AuthenticationError, match="bad key") as caught:
            client.chat.completions.create(model="m", messages=USER)
        assert caught.value.code == "invalid_api_key"
        after = client.chat.completions.create(model="m", messages=USER)
    assert after.choices[0].message.content == "ok"


def test_reply_function_decides_from_the_conversation(client_factory: ClientFactory) -> None:
    def echo(body: dict[str, Any]) -> ScriptedReply:
        return ScriptedReply(text=[f"{len(body['messages'])}:", body["messages"][-1]["content"]])

    with FakeOpenAIServer(echo) as server:
        client = client_factory(server)
        first = client.chat.completions.create(model="m", messages=USER)
        second = client.chat.completions.create(model="m", messages=USER * 3)
    assert first.choices[0].message.content == "1:hi"
    assert second.choices[0].message.content == "3:hi"


def test_reply_function_error_is_recorded(client_factory: ClientFactory) -> None:
    def broken(body: dict[str, Any]) -> ScriptedReply:
        raise KeyError("nope")

    with FakeOpenAIServer([broken]) as server:
        with pytest.raises(openai.BadRequestError, match="reply function raised KeyError"):
            client_factory(server).chat.completions.create(model="m", messages=USER)
        assert [type(e) for e in server.errors] == [KeyError]


def test_delay_between_chunks(client_factory: ClientFactory) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["a", "b", "c"], delay=0.05)]) as server:
        started = time.monotonic()
        stream = client_factory(server).chat.completions.create(
            model="m", messages=USER, stream=True
        )
        arrivals = [
            time.monotonic() - started for c in stream if c.choices and c.choices[0].delta.content
        ]
    assert len(arrivals) == 3
    assert arrivals[2] - arrivals[0] >= 0.09


def test_a_non_streaming_reply_waits_its_deltas_delays(client_factory: ClientFactory) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["a", "b"], delay=0.1)]) as server:
        started = time.monotonic()
        completion = client_factory(server).chat.completions.create(model="m", messages=USER)
        took = time.monotonic() - started
    assert completion.choices[0].message.content == "ab"
    assert took >= 0.19


@pytest.mark.parametrize(("hang_after", "expected"), [(1, "a"), (9, "ab")])
def test_hang_times_out_and_drops_the_connection(
    client_factory: ClientFactory, hang_after: int, expected: str
) -> None:
    reply = ScriptedReply(text=["a", "b"], hang_after=hang_after, hang_timeout=0.2)
    with FakeOpenAIServer([reply]) as server:
        stream = client_factory(server).chat.completions.create(
            model="m", messages=USER, stream=True
        )
        seen: list[str] = []
        with pytest.raises(openai.APIConnectionError):
            collect_text(stream, seen)
        assert "".join(seen) == expected
        (record,) = server.wait_for_requests(1, outcome="timed_out")
        assert record.outcome == "timed_out"


def test_non_streaming_hang_meets_the_client_timeout(client_factory: ClientFactory) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["late"], hang_after=0)]) as server:
        with pytest.raises(openai.APITimeoutError):
            client_factory(server).chat.completions.create(model="m", messages=USER, timeout=0.2)
        (request,) = server.wait_for_requests(1, outcome="disconnected")
    assert request.index == 0


def test_close_interrupts_a_hang(client_factory: ClientFactory) -> None:
    server = FakeOpenAIServer([ScriptedReply(text=["a"], hang_after=0, hang_timeout=30)])
    server.start()
    try:
        stream = client_factory(server).chat.completions.create(
            model="m", messages=USER, stream=True
        )
        next(iter(stream))  # the role chunk: the server is now hanging
    finally:
        server.close()
    # Interrupted by close: a hang left to run out would say "timed_out" (after 30 s).
    assert server.requests[0].outcome == "aborted"
    with pytest.raises(openai.APIConnectionError):
        list(stream)


def test_wait_for_requests_times_out() -> None:
    with FakeOpenAIServer() as server, pytest.raises(TimeoutError, match="1 requests"):
        server.wait_for_requests(1, timeout=0.05)


def test_concurrent_streams(client_factory: ClientFactory) -> None:
    script = [ScriptedReply(text=["x"] * 20, delay=0.005) for _ in range(4)]
    results: list[str] = []

    def consume(client: openai.OpenAI) -> None:
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        results.append(collect_text(stream))

    with FakeOpenAIServer(script) as server:
        client = client_factory(server)
        threads = [threading.Thread(target=consume, args=(client,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    assert results == ["x" * 20] * 4


@pytest.mark.anyio
async def test_async_client_cancellation_disconnects() -> None:
    reply = ScriptedReply(text=["first", "never"], hang_after=1, hang_timeout=30)
    with FakeOpenAIServer([reply]) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t") as client:
            with anyio.fail_after(TIMEOUT), anyio.CancelScope() as scope:
                stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
                async with stream:
                    async for chunk in stream:
                        if chunk.choices and chunk.choices[0].delta.content == "first":
                            scope.cancel()
            assert scope.cancelled_caught
            (request,) = await wait_for(server, 1, outcome="disconnected")
    assert request.outcome == "disconnected"


# -- script files and the separate process -------------------------------------------------------


def test_script_json_round_trip() -> None:
    replies = [
        ScriptedReply(
            text=["a"],
            reasoning=["r"],
            tool_calls=[ScriptedToolCall(name="f", arguments={"x": [1]}, pieces=2)],
            usage=ScriptedUsage(prompt_tokens=1, completion_tokens=2),
            delay=0.01,
        ),
        ScriptedReply(error=ScriptedError(status=429, message="slow down")),
    ]
    assert load_script(dump_script(replies)) == replies
    assert load_script(json.dumps([{"text": ["x"]}])) == [ScriptedReply(text=["x"])]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"delay": 60}, ValueError),
        ({"hang_timeout": 0}, ValueError),
        ({"hang_after": -1}, ValueError),
        ({"text": "one string"}, TypeError),
        ({"tool_calls": [ScriptedToolCall(name="f", pieces=0)]}, ValueError),
    ],
)
def test_reply_validation(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        ScriptedReply(**kwargs)


@pytest.mark.subprocess
def test_separate_process(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(dump_script([ScriptedReply(text=["from ", "afar"])]), encoding="utf-8")
    port_file = tmp_path / "port"
    env = dict(os.environ)
    src = str(Path(accord.testing.__file__).parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "accord.testing.fake_openai", "--script", str(script)]
    command += ["--port-file", str(port_file)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True) as process:
        try:
            assert process.stdout is not None
            port = int(process.stdout.readline())
            assert int(port_file.read_text(encoding="utf-8")) == port
            base_url = f"http://127.0.0.1:{port}/v1"
            with openai.OpenAI(base_url=base_url, api_key="t", max_retries=0) as client:
                stream = client.chat.completions.create(model="m", messages=USER, stream=True)
                text = collect_text(stream)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_fake/requests") as response:
                recorded = json.load(response)
        finally:
            process.terminate()
            assert process.wait(TIMEOUT) == 0
    assert text == "from afar"
    assert recorded[0]["body"]["messages"] == USER
    assert recorded[0]["outcome"] == "completed"


# -- a real pydantic-ai Agent on the OpenAI provider ---------------------------------------------


@pytest.mark.anyio
async def test_agent_streams_text() -> None:
    with FakeOpenAIServer([ScriptedReply(text=["The ", "quick ", "fox"])]) as server:
        async with openai_agent(server) as agent, agent.run_stream_events("go") as events:
            collected = [event async for event in events]
            output = events.result.output if events.result else None

    starts = [e.part for e in collected if isinstance(e, PartStartEvent)]
    deltas = [
        e.delta.content_delta
        for e in collected
        if isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta)
    ]
    assert starts == [TextPart(content="The ")]
    assert deltas == ["quick ", "fox"]
    assert output == "The quick fox"


@pytest.mark.anyio
@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_agent_streams_thinking(field: str) -> None:
    reply = ScriptedReply(reasoning=["hmm ", "yes"], reasoning_field=field, text=["done"])
    with FakeOpenAIServer([reply, ScriptedReply(text=["again"])]) as server:
        async with openai_agent(server) as agent:
            async with agent.run_stream_events("think") as events:
                collected = [event async for event in events]
                assert events.result is not None
                history = events.result.all_messages()
            # The thinking goes back to the model on the next turn, in the same field.
            await agent.run("more", message_history=history)
            requests = server.requests

    thinking_starts = [
        e.part
        for e in collected
        if isinstance(e, PartStartEvent) and isinstance(e.part, ThinkingPart)
    ]
    assert [p.content for p in thinking_starts] == ["hmm "]
    thinking_deltas = [
        e.delta.content_delta
        for e in collected
        if isinstance(e, PartDeltaEvent) and isinstance(e.delta, ThinkingPartDelta)
    ]
    assert thinking_deltas == ["yes"]
    assistant = requests[1].messages[1]
    assert assistant["role"] == "assistant"
    assert assistant[field] == "hmm yes"


@pytest.mark.anyio
async def test_agent_tool_call_round_trip() -> None:
    def model(body: dict[str, Any]) -> ScriptedReply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return ScriptedReply(text=["sum is ", last["content"]])
        call = ScriptedToolCall(name="add", arguments={"a": 2, "b": 3}, id="call_add", pieces=3)
        return ScriptedReply(text=["adding"], tool_calls=[call])

    with FakeOpenAIServer(model) as server:
        async with openai_agent(server) as agent:
            calls: list[dict[str, int]] = []

            @agent.tool_plain
            def add(a: int, b: int) -> int:
                """Add two numbers."""
                calls.append({"a": a, "b": b})
                return a + b

            async with agent.run_stream_events("2+3?") as events:
                collected = [event async for event in events]
                assert events.result is not None
                output = events.result.output
            first, second = server.requests

    assert calls == [{"a": 2, "b": 3}]
    assert output == "sum is 5"
    tool_starts = [
        e.part
        for e in collected
        if isinstance(e, PartStartEvent) and isinstance(e.part, ToolCallPart)
    ]
    assert [(p.tool_name, p.tool_call_id) for p in tool_starts] == [("add", "call_add")]
    args_deltas = [
        e.delta.args_delta
        for e in collected
        if isinstance(e, PartDeltaEvent) and isinstance(e.delta, ToolCallPartDelta)
    ]
    assert "".join(str(d) for d in args_deltas) == '{"a":2,"b":3}'
    assert len(args_deltas) == 3
    (call_event,) = [e for e in collected if isinstance(e, FunctionToolCallEvent)]
    (result_event,) = [e for e in collected if isinstance(e, FunctionToolResultEvent)]
    assert call_event.part.args_as_dict() == {"a": 2, "b": 3}
    assert (result_event.tool_call_id, result_event.part.content) == ("call_add", 5)
    assert first.body["tools"][0]["function"]["name"] == "add"
    assert second.messages[-1] == {"role": "tool", "tool_call_id": "call_add", "content": "5"}


@pytest.mark.anyio
async def test_agent_usage_reaches_run_usage() -> None:
    def model(body: dict[str, Any]) -> ScriptedReply:
        if body["messages"][-1]["role"] == "tool":
            return ScriptedReply(
                text=["ok"], usage=ScriptedUsage(prompt_tokens=30, completion_tokens=4)
            )
        usage = ScriptedUsage(
            prompt_tokens=20, completion_tokens=6, cached_tokens=8, reasoning_tokens=2
        )
        return ScriptedReply(tool_calls=[ScriptedToolCall(name="noop")], usage=usage)

    with FakeOpenAIServer(model) as server:
        async with openai_agent(server) as agent:

            @agent.tool_plain
            def noop() -> str:
                """Do nothing."""
                return "nothing"

            result = await agent.run("go")

    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens) == (50, 10)
    assert usage.cache_read_tokens == 8
    assert usage.details["reasoning_tokens"] == 2
    assert (usage.requests, usage.tool_calls) == (2, 1)


@pytest.mark.anyio
async def test_agent_sees_restored_history() -> None:
    """The history survives JSON (as in a session store), and the model sees it on the next run."""
    script = [ScriptedReply(text=["I am fake."]), ScriptedReply(text=["You asked who I am."])]
    with FakeOpenAIServer(script) as server:
        async with openai_agent(server) as agent:
            first = await agent.run("Who are you?")
            stored = ModelMessagesTypeAdapter.dump_json(first.all_messages())
        # A new agent and provider: what a restarted process would have.
        async with openai_agent(server) as agent:
            history = ModelMessagesTypeAdapter.validate_json(stored)
            second = await agent.run("What did I ask?", message_history=history)
        requests = server.requests

    assert second.output == "You asked who I am."
    assert requests[1].messages == [
        {"role": "user", "content": "Who are you?"},
        {"role": "assistant", "content": "I am fake."},
        {"role": "user", "content": "What did I ask?"},
    ]


@pytest.mark.anyio
async def test_agent_cancellation_closes_the_http_stream() -> None:
    reply = ScriptedReply(text=["partial", "never"], hang_after=1, hang_timeout=30)
    with FakeOpenAIServer([reply]) as server:
        async with openai_agent(server) as agent:
            with anyio.fail_after(TIMEOUT), anyio.CancelScope() as scope:
                async with agent.run_stream_events("go") as events:
                    async for event in events:
                        if isinstance(event, PartStartEvent):
                            scope.cancel()
            assert scope.cancelled_caught
            (request,) = await wait_for(server, 1, outcome="disconnected")
    assert request.outcome == "disconnected"

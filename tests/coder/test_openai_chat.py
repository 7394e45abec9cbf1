"""The coder's OpenAI client sends chat messages without the SDK's type walk, and the same body.

``PlainChatOpenAI`` puts a chat request's ``messages`` into the body as given; the SDK's own
client runs them through its ``TypedDict`` transform first. The shortcut holds only while that
transform leaves every message as it is: these tests send the same requests (every role and
content part of the chat API, and a pydantic-ai conversation with tool calls) through both
clients to a fake server and compare the bodies it received, so an SDK release whose transform
starts renaming or formatting a message field fails here. The bodies' bytes are compared too
(a mock transport): each earlier message's text comes from a cache (``_chat_body``), encoded
once, and the bytes must be the SDK's all the same.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest
from openai import AsyncAzureOpenAI, AsyncOpenAI, BadRequestError
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from accord.coder import _chat_body
from accord.coder._agent import forget_models, shared_model
from accord.coder._openai_chat import PlainChatOpenAI, plain_chat
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.anyio

EVERY_SHAPE: list[dict[str, Any]] = [
    {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
    {"role": "system", "content": "you are a coder", "name": "sys"},
    {"role": "user", "content": "plain text", "name": "ada"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {
                "type": "image_url",
                "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"},
            },
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {
                "type": "file",
                "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
            },
            {"type": "file", "file": {"file_id": "file-1"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            },
            {"id": "call_2", "type": "custom", "custom": {"name": "grep", "input": "x"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')"},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "none"}]},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}, {"type": "refusal", "refusal": "no"}],
        "refusal": None,
        "audio": {"id": "audio_1"},
        "name": "coder",
    },
    {"role": "function", "name": "legacy", "content": "42"},
    {"role": "user", "content": 'unicode: é ✓ \u2028 "quoted" \\ back'},
]


def answers(count: int) -> list[ScriptedReply]:
    return [ScriptedReply(text=["fine"]) for _ in range(count)]


async def test_every_message_shape_reaches_the_server_as_the_sdk_sends_it() -> None:
    with FakeOpenAIServer(answers(4)) as server:
        sdk = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        plain = plain_chat(AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0))
        assert isinstance(plain, PlainChatOpenAI)
        for stream in (False, True):
            for client in (sdk, plain):
                create: Any = client.chat.completions.create  # raw dicts, as pydantic-ai sends
                reply: Any = await create(
                    model="fake-model",
                    messages=EVERY_SHAPE,
                    stream=stream,
                    temperature=0.5,
                    tools=[
                        {
                            "type": "function",
                            "function": {"name": "read_file", "parameters": {"type": "object"}},
                        }
                    ],
                )
                if stream:
                    chunks: Any = [chunk async for chunk in reply]
                    assert chunks
        await sdk.close()
        await plain.close()
        bodies = [request.body for request in server.requests]
    assert bodies[0] == bodies[1]
    assert bodies[2] == bodies[3]
    assert bodies[0] is not None and bodies[0]["messages"] == EVERY_SHAPE


async def test_a_pydantic_ai_conversation_sends_the_same_body() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("you code"), UserPromptPart("read a.py")]),
        ModelResponse(
            parts=[
                TextPart("reading"),
                ToolCallPart("read_file", {"path": "a.py"}, tool_call_id="c1"),
                ToolCallPart("read_file", {"path": "b.py"}, tool_call_id="c2"),
            ]
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("read_file", "x = 1", tool_call_id="c1"),
                ToolReturnPart("read_file", "no such file", tool_call_id="c2", outcome="retried"),
            ]
        ),
        ModelResponse(parts=[TextPart("a.py sets x")]),
    ]
    with FakeOpenAIServer(answers(2)) as server:
        for client in (
            AsyncOpenAI(base_url=server.base_url, api_key="k"),
            plain_chat(AsyncOpenAI(base_url=server.base_url, api_key="k")),
        ):
            model = OpenAIChatModel("fake-model", provider=OpenAIProvider(openai_client=client))
            agent = Agent(model)

            @agent.tool_plain
            def read_file(path: str) -> str:
                """Read a file."""
                return path

            async with agent.run_stream("and now?", message_history=history) as run:
                assert await run.get_output() == "fine"
            await client.close()
        sdk_body, plain_body = (request.body for request in server.requests)
    assert sdk_body == plain_body


async def test_extra_body_messages_win_as_in_the_sdk() -> None:
    with FakeOpenAIServer(answers(1)) as server:
        client = plain_chat(AsyncOpenAI(base_url=server.base_url, api_key="k"))
        create: Any = client.chat.completions.create
        await create(
            model="fake-model",
            messages=[{"role": "user", "content": "dropped"}],
            extra_body={"messages": [{"role": "user", "content": "kept"}], "top_k": 3},
        )
        await client.close()
        body = server.requests[0].body
    assert body is not None
    assert body["messages"] == [{"role": "user", "content": "kept"}]
    assert body["top_k"] == 3


async def test_a_tuple_or_generator_of_messages_is_sent_as_a_list() -> None:
    with FakeOpenAIServer(answers(2)) as server:
        client = plain_chat(AsyncOpenAI(base_url=server.base_url, api_key="k"))
        create: Any = client.chat.completions.create
        one = {"role": "user", "content": "hi"}
        await create(model="fake-model", messages=(one,))
        await create(model="fake-model", messages=(m for m in [one]))
        await client.close()
        bodies = [request.body for request in server.requests]
    assert [body["messages"] for body in bodies if body is not None] == [[one], [one]]


def test_copies_keep_the_class_and_other_clients_are_left_alone() -> None:
    client = plain_chat(AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"))
    assert type(client) is PlainChatOpenAI
    assert client.chat is client.chat and client.chat.completions is client.chat.completions
    assert type(client.with_options(max_retries=5)) is PlainChatOpenAI  # pydantic-ai's retries
    azure = AsyncAzureOpenAI(api_key="k", api_version="2024-10-21", azure_endpoint="http://h")
    assert plain_chat(azure) is azure and type(azure) is AsyncAzureOpenAI
    used = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    _ = used.chat  # its chat resource already made: swapping now would leave it behind
    assert type(plain_chat(used)) is AsyncOpenAI


def test_the_coders_models_behind_a_base_url_use_it() -> None:
    forget_models()
    try:
        plain = shared_model("http://127.0.0.1:9/v1", "local")
        routed = shared_model("http://127.0.0.1:9/v1", "local", (("authorization", "Bearer t"),))
        for model in (plain, routed):
            assert isinstance(model, OpenAIChatModel)
            assert type(model.client) is PlainChatOpenAI
    finally:
        forget_models()


def capturing_client(cls: type[AsyncOpenAI], sent: list[bytes]) -> AsyncOpenAI:
    """A client of `cls` whose requests are answered by a mock transport that keeps each
    request body's bytes."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        return httpx2.Response(400, json={"error": {"message": "kept", "type": "x"}})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    return cls(base_url="http://model/v1", api_key="k", max_retries=0, http_client=http)


async def send(client: AsyncOpenAI, messages: list[dict[str, Any]], **params: Any) -> None:
    create: Any = client.chat.completions.create
    with pytest.raises(BadRequestError):
        await create(model="fake-model", messages=messages, **params)


async def test_the_body_is_the_sdks_byte_for_byte_also_from_the_cache() -> None:
    sdk_sent: list[bytes] = []
    plain_sent: list[bytes] = []
    sdk = capturing_client(AsyncOpenAI, sdk_sent)
    plain = plain_chat(capturing_client(AsyncOpenAI, plain_sent))
    assert isinstance(plain, PlainChatOpenAI)
    odd = [{"role": "user", "content": "t", "n": True}, {"role": "user", "content": "o", "n": 1}]
    for _ in range(2):  # the second time every message's text comes from the cache
        for client in (sdk, plain):
            await send(client, [*EVERY_SHAPE, *odd], stream=True, temperature=0.5)
            await send(client, EVERY_SHAPE, extra_body={"top_k": 3, "messages": odd})
    assert plain_sent == sdk_sent and len(sdk_sent) == 4
    assert b'"n":true' in sdk_sent[0] and b'"n":1' in sdk_sent[0]


async def test_earlier_messages_are_encoded_once_and_a_changed_one_again() -> None:
    sent: list[bytes] = []
    client = plain_chat(capturing_client(AsyncOpenAI, sent))
    before = _chat_body.FRAGMENTS.misses
    history: list[dict[str, Any]] = []
    for turn in range(50):
        history.append({"role": "user", "content": f"question {turn} of a long session"})
        await send(client, history)
        history.append({"role": "assistant", "content": f"answer {turn}"})
    assert _chat_body.FRAGMENTS.misses - before == 50 + 49  # each message once, not per turn
    history[0]["content"] = "edited after it was sent"
    history[1] = {**history[1], "content": "replaced"}
    await send(client, history)
    assert _chat_body.FRAGMENTS.misses - before == 99 + 3  # the two changed and the new answer
    last = json.loads(sent[-1])["messages"]
    assert last[:2] == [history[0], history[1]] and last == history


def test_a_full_cache_starts_again_and_foreign_values_are_not_cached() -> None:
    fragments = _chat_body.Fragments(limit=100)
    big = {"role": "user", "content": "x" * 60}
    assert fragments.text(big) == fragments.text(big) and fragments.hits == 1
    other = {"role": "user", "content": "y" * 60}
    assert fragments.text(other) == json.dumps(other, separators=(",", ":")).encode()
    assert fragments.text(big) and fragments.misses == 3  # the first was forgotten
    when = {"role": "user", "content": "t", "at": datetime(2026, 1, 2, tzinfo=UTC)}
    assert fragments.text(when) == fragments.text(when)  # encoded each time, never kept
    assert (fragments.hits, fragments.misses) == (1, 3)


def test_a_long_text_is_keyed_by_its_digest_not_kept_alive_by_the_cache() -> None:
    fragments = _chat_body.Fragments(limit=1 << 20)
    text = "".join(f"line {n} of a long tool result\n" for n in range(200))
    message = {"role": "tool", "content": text, "tool_call_id": "call-1"}
    references = sys.getrefcount(text)
    first = fragments.text(message)
    assert sys.getrefcount(text) == references  # the cache holds no reference to the text
    assert fragments.text({**message, "content": text[:-1] + "!"}) != first  # the end counts
    copy = text[:-1] + text[-1:]
    assert copy is not text and fragments.text({**message, "content": copy}) == first
    assert (fragments.hits, fragments.misses) == (1, 2)
    nested = {"role": "user", "content": [{"type": "text", "text": text}, {"type": "text"}]}
    flat = {"role": "user", "content": [{"type": "text", "text": text, "type2": "text"}]}
    assert fragments.text(nested) == json.dumps(nested, separators=(",", ":")).encode()
    assert fragments.text(flat) == json.dumps(flat, separators=(",", ":")).encode()
    assert fragments.misses == 4  # the two shapes are two keys

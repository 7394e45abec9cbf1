"""End to end: ``AgentRuntime(PydanticAIEngine(...))`` driven by a client over the memory pair.

What the client receives on the wire, session/load after a "restart" (a new runtime and engine
on the same store), model switching through ``session/set_config_option``, and
``session/cancel`` in the middle of a stream.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from _engines_support import CWD, ModelCounter, wait_for_requests
from helpers.timeouts import TIMEOUT
from pydantic_ai import Agent

from accord.agent import AgentRuntime
from accord.engines.pydantic_ai import (
    MODEL_CONFIG_ID,
    PydanticAIEngine,
    ToolBehaviour,
    path_title,
    replace_diff,
)
from accord.roles import AgentSideConnection, Client, ClientSideConnection
from accord.schema import (
    CancelNotification,
    InitializeRequest,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SessionNotification,
    SetSessionConfigOptionRequest,
    TextContentBlock,
)
from accord.store import MemorySessionStore, SessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall, ScriptedUsage
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio


class Recorder(Client):
    """Records updates; allows every permission request (and records it)."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.permissions: list[RequestPermissionRequest] = []
        self._changed = anyio.Event()

    async def session_update(self, notification: SessionNotification) -> None:
        self.updates.append(notification.update.to_wire())
        self._changed.set()
        self._changed = anyio.Event()

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        self.permissions.append(request)
        option = next(o for o in request.options if o.kind == "allow_once")
        return RequestPermissionResponse(
            outcome=SelectedRequestPermissionOutcome(option_id=option.option_id)
        )

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        with anyio.fail_after(TIMEOUT):
            while not predicate():
                await self._changed.wait()

    def of(self, tag: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["sessionUpdate"] == tag]


@dataclass
class Connected:
    conn: ClientSideConnection
    client: Recorder

    async def new_session(self) -> str:
        request = NewSessionRequest(cwd=CWD, mcp_servers=[])
        with anyio.fail_after(TIMEOUT):
            return (await self.conn.new_session(request)).session_id

    async def prompt(self, session_id: str, text: str) -> str:
        request = PromptRequest(session_id=session_id, prompt=[TextContentBlock(text=text)])
        with anyio.fail_after(TIMEOUT):
            return (await self.conn.prompt(request)).stop_reason


@asynccontextmanager
async def connect(engine: PydanticAIEngine, store: SessionStore) -> AsyncGenerator[Connected]:
    runtime = AgentRuntime(engine, store=store)
    client = Recorder()
    agent_end, client_end = memory_transport_pair()
    try:
        async with (
            AgentSideConnection(runtime, agent_end),
            ClientSideConnection(client, client_end) as conn,
        ):
            capabilities = client.client_capabilities()
            with anyio.fail_after(TIMEOUT):
                await conn.initialize(
                    InitializeRequest(protocol_version=1, client_capabilities=capabilities)
                )
            yield Connected(conn, client)
    finally:
        with anyio.fail_after(TIMEOUT):
            await runtime.aclose()


def coding_agent() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(instructions="You edit files.")

    @agent.tool_plain(requires_approval=True)
    def write_file(path: str, text: str) -> str:
        return "written"

    return agent


def engine_on(server: FakeOpenAIServer, counter: ModelCounter) -> PydanticAIEngine:
    return PydanticAIEngine(
        coding_agent(),
        models=[
            counter.choice(server, "small", context_window=32_000),
            counter.choice(server, "large", context_window=128_000),
        ],
        tool_behaviour={
            "write_file": ToolBehaviour(
                kind="edit",
                title_from_args=path_title("Write"),
                diff_from_args=replace_diff("path", None, "text"),
            )
        },
    )


async def test_a_turn_on_the_wire() -> None:
    script = [
        ScriptedReply(
            reasoning=["Plan: ", "write."],
            text=["Writing ", "it."],
            tool_calls=[
                ScriptedToolCall(name="write_file", arguments={"path": "a.txt", "text": "hi"})
            ],
            usage=ScriptedUsage(prompt_tokens=100, completion_tokens=20),
        ),
        ScriptedReply(text=["Done."], usage=ScriptedUsage(prompt_tokens=150, completion_tokens=5)),
    ]
    with FakeOpenAIServer(script) as server:
        async with connect(engine_on(server, ModelCounter()), MemorySessionStore()) as c:
            session_id = await c.new_session()
            assert await c.prompt(session_id, "write a.txt") == "end_turn"
    updates = c.client.updates
    thoughts = c.client.of("agent_thought_chunk")
    messages = c.client.of("agent_message_chunk")
    assert "".join(u["content"]["text"] for u in thoughts) == "Plan: write."
    by_message: dict[str, str] = {}
    for update in messages:
        by_message[update["messageId"]] = (
            by_message.get(update["messageId"], "") + update["content"]["text"]
        )
    assert list(by_message.values()) == ["Writing it.", "Done."]
    [tool_call] = c.client.of("tool_call")
    assert (tool_call["kind"], tool_call["status"]) == ("edit", "pending")
    [permission] = c.client.permissions
    assert permission.tool_call.tool_call_id == tool_call["toolCallId"]
    assert permission.tool_call.title == "Write a.txt"
    final = [u for u in c.client.of("tool_call_update") if u.get("status") == "completed"]
    assert final[0]["content"] == [
        {"type": "diff", "path": f"{CWD}/a.txt", "oldText": None, "newText": "hi"}
    ]
    usage = c.client.of("usage_update")
    assert [(u["used"], u["size"]) for u in usage] == [(120, 32_000), (155, 32_000)]
    assert all("cost" not in u for u in usage)
    assert updates.index(thoughts[0]) < updates.index(messages[0]) < updates.index(tool_call)


async def test_load_after_a_restart_continues_the_conversation() -> None:
    store = MemorySessionStore()
    with FakeOpenAIServer([ScriptedReply(text=["Nice to meet you, Ada."])]) as server:
        async with connect(engine_on(server, ModelCounter()), store) as c:
            session_id = await c.new_session()
            await c.prompt(session_id, "I am Ada.")

    # A new process: a new engine, runtime and model server; only the store survives.
    with FakeOpenAIServer([ScriptedReply(text=["You are Ada."])]) as server:
        async with connect(engine_on(server, ModelCounter()), store) as c:
            request = LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            with anyio.fail_after(TIMEOUT):
                await c.conn.load_session(request)
            replayed = [u["content"]["text"] for u in c.client.of("agent_message_chunk")]
            assert replayed == ["Nice to meet you, Ada."]
            assert await c.prompt(session_id, "Who am I?") == "end_turn"
        [request_body] = [r.messages for r in server.requests]
    seen = [(m["role"], m.get("content")) for m in request_body]
    assert seen == [
        ("system", "You edit files."),
        ("user", "I am Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Who am I?"),
    ]


async def test_switching_model_through_the_config_option() -> None:
    counter = ModelCounter()
    script = [ScriptedReply(text=["a"]), ScriptedReply(text=["b"]), ScriptedReply(text=["c"])]
    with FakeOpenAIServer(script) as server:
        async with connect(engine_on(server, counter), MemorySessionStore()) as c:
            session_id = await c.new_session()
            await c.prompt(session_id, "one")
            request = SetSessionConfigOptionRequest(
                session_id=session_id, config_id=MODEL_CONFIG_ID, value="large"
            )
            with anyio.fail_after(TIMEOUT):
                response = await c.conn.set_session_config_option(request)
            assert response.config_options[0].current_value == "large"
            await c.prompt(session_id, "two")
            await c.prompt(session_id, "three")
        models = [r.body["model"] for r in server.requests]
    assert models == ["small", "large", "large"]
    assert counter.builds == {"small": 1, "large": 1}
    assert c.client.of("usage_update")[-1]["size"] == 128_000


async def test_cancel_mid_stream_answers_cancelled_promptly_and_keeps_the_partial_reply() -> None:
    store = MemorySessionStore()
    script = [ScriptedReply(text=["Once ", "upon ", "never"], hang_after=2)]
    with FakeOpenAIServer(script) as server:
        async with connect(engine_on(server, ModelCounter()), store) as c:
            session_id = await c.new_session()
            stop: list[str] = []
            with anyio.fail_after(TIMEOUT):
                async with anyio.create_task_group() as tg:

                    async def run() -> None:
                        stop.append(await c.prompt(session_id, "tell me a story"))

                    tg.start_soon(run)
                    await c.client.wait_until(lambda: len(c.client.of("agent_message_chunk")) == 2)
                    await c.conn.cancel(CancelNotification(session_id=session_id))
            await wait_for_requests(server, 1, outcome="disconnected")
    assert stop == ["cancelled"]

    with FakeOpenAIServer([ScriptedReply(text=["...the end."])]) as server:
        async with connect(engine_on(server, ModelCounter()), store) as c:
            request = LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            with anyio.fail_after(TIMEOUT):
                await c.conn.load_session(request)
            await c.prompt(session_id, "go on")
        [request_body] = [r.messages for r in server.requests]
    assert ("assistant", "Once upon ") in [(m["role"], m.get("content")) for m in request_body]

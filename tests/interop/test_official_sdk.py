"""Interop with the official Python SDK (``agent-client-protocol`` 0.12.1, import ``acp``).

Both directions, over real subprocess pipes:

* accord's ``ClientSideConnection`` drives ``_interop_sdk_agent.py``, an agent built on the SDK that
  streams chunks, a tool call, asks permission and answers the prompt;
* the SDK's client (``acp.spawn_agent_process``) drives ``examples/echo_agent.py``, accord's
  echo agent: echoed chunks in order, cancellation, and ``-32601`` for what it lacks.

The SDK is asyncio-only, so these tests run on asyncio alone.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp.schema import AgentMessageChunk
from acp.schema import Implementation as SdkImplementation
from acp.schema import TextContentBlock as SdkTextContentBlock
from helpers.timeouts import TIMEOUT

from accord.errors import LocalProtocolError, MethodNotFound
from accord.roles import Client, ClientSideConnection
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    CancelledRequestPermissionOutcome,
    ContentToolCallContent,
    Implementation,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SessionNotification,
    SetSessionModeRequest,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdateSessionUpdate,
)
from accord.transports import spawn_agent

pytestmark = [
    pytest.mark.asyncio_only("the official SDK runs on asyncio only"),
    pytest.mark.subprocess,
    pytest.mark.interop,
]

ROOT = Path(__file__).resolve().parents[2]
SDK_AGENT = Path(__file__).resolve().with_name("_interop_sdk_agent.py")
ECHO_AGENT = ROOT / "examples" / "echo_agent.py"


# ---------------------------------------------------------------- accord client -> SDK agent


class RecordingClient(Client):
    """Records updates and permission requests; answers permission with ``outcome``."""

    client_info = Implementation(name="accord-interop", version="0")

    def __init__(self, choose: str | None) -> None:
        self.choose = choose
        self.updates: list[SessionNotification] = []
        self.permissions: list[RequestPermissionRequest] = []

    async def session_update(self, notification: SessionNotification) -> None:
        self.updates.append(notification)

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        self.permissions.append(request)
        if self.choose is None:
            return RequestPermissionResponse(outcome=CancelledRequestPermissionOutcome())
        return RequestPermissionResponse(
            outcome=SelectedRequestPermissionOutcome(option_id=self.choose)
        )


def _text(update: Any) -> str:
    assert isinstance(update.content, TextContentBlock)
    return update.content.text


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("choose", "status", "verdict"),
    [
        ("allow", "completed", "allowed"),
        ("reject", "failed", "refused"),
        (None, "failed", "refused"),
    ],
    ids=["allow", "reject", "cancelled"],
)
async def test_accord_client_drives_an_sdk_agent(
    choose: str | None, status: str, verdict: str
) -> None:
    client = RecordingClient(choose)
    with anyio.fail_after(TIMEOUT):
        async with (
            spawn_agent([sys.executable, str(SDK_AGENT)]) as transport,
            ClientSideConnection(client, transport) as agent,
        ):
            init = await agent.initialize()
            session = await agent.new_session(NewSessionRequest(cwd=str(ROOT), mcp_servers=[]))
            response = await agent.prompt(
                PromptRequest(session_id=session.session_id, prompt=[TextContentBlock(text="hi")])
            )

    assert init.protocol_version == 1
    assert init.agent_info == Implementation(name="sdk-agent", title="SDK agent", version="0.12.1")
    assert init.agent_capabilities.load_session is False
    assert session.session_id == "sdk-session-1"
    assert response.stop_reason == "end_turn"

    assert {n.session_id for n in client.updates} == {"sdk-session-1"}
    updates = [n.update for n in client.updates]
    assert [type(u) for u in updates] == [
        AgentMessageChunkSessionUpdate,
        AgentMessageChunkSessionUpdate,
        AgentMessageChunkSessionUpdate,
        ToolCallSessionUpdate,
        ToolCallUpdateSessionUpdate,
        AgentThoughtChunkSessionUpdate,
        AgentMessageChunkSessionUpdate,
    ]
    assert [_text(u) for u in updates[:3]] == ["Hello", " from", " the SDK"]

    started = updates[3]
    assert isinstance(started, ToolCallSessionUpdate)
    assert (started.tool_call_id, started.title, started.kind, started.status) == (
        "call-1",
        "Read notes.txt",
        "read",
        "pending",
    )
    assert [(loc.path, loc.line) for loc in started.locations] == [("/tmp/sdk-agent/notes.txt", 3)]
    assert started.raw_input == {"path": "/tmp/sdk-agent/notes.txt"}

    finished = updates[4]
    assert isinstance(finished, ToolCallUpdateSessionUpdate)
    assert (finished.tool_call_id, finished.status) == ("call-1", status)
    if status == "completed":
        [content] = finished.content or []
        assert isinstance(content, ContentToolCallContent)
        assert content.content == TextContentBlock(text="file contents")
        assert finished.raw_output == {"bytes": 13}

    assert _text(updates[5]) == "thinking done"
    assert _text(updates[6]) == f" ({verdict})"

    [permission] = client.permissions
    assert permission.session_id == "sdk-session-1"
    assert permission.tool_call.tool_call_id == "call-1"
    assert permission.tool_call.title == "Read notes.txt"
    assert [(o.option_id, o.kind) for o in permission.options] == [
        ("allow", "allow_once"),
        ("reject", "reject_once"),
    ]


@pytest.mark.anyio
async def test_accord_client_extensions_and_capabilities_with_an_sdk_agent() -> None:
    with anyio.fail_after(TIMEOUT):
        async with (
            spawn_agent([sys.executable, str(SDK_AGENT)]) as transport,
            ClientSideConnection(RecordingClient("allow"), transport) as agent,
        ):
            await agent.initialize()
            echoed = await agent.ext_request("_sdk/echo", {"n": [1, 2]})
            with pytest.raises(MethodNotFound):
                await agent.ext_request("_sdk/unknown")
            # The SDK agent said loadSession: false, so accord refuses to ask.
            with pytest.raises(LocalProtocolError, match="loadSession"):
                await agent.load_session(
                    LoadSessionRequest(session_id="sdk-session-1", cwd=str(ROOT), mcp_servers=[])
                )
    assert echoed == {"echoed": {"n": [1, 2]}}


@pytest.mark.anyio
async def test_sdk_agent_answers_success_for_methods_it_does_not_implement() -> None:
    """A known divergence of SDK 0.12.1, pinned so that accord keeps coping with it.

    An agent that subclasses ``acp.Agent`` (as the SDK's examples do) inherits the
    protocol's stub methods, which return ``None``: the SDK answers success (``{}`` or even
    ``null``) for ``session/set_mode`` or ``session/load`` it does not implement, where the
    spec wants -32601. accord's typed call reads a ``null``/``{}`` empty result as the empty
    response.
    """
    with anyio.fail_after(TIMEOUT):
        async with (
            spawn_agent([sys.executable, str(SDK_AGENT)]) as transport,
            ClientSideConnection(RecordingClient("allow"), transport) as agent,
        ):
            await agent.initialize()
            session = await agent.new_session(NewSessionRequest(cwd=str(ROOT), mcp_servers=[]))
            mode = await agent.set_session_mode(
                SetSessionModeRequest(session_id=session.session_id, mode_id="none")
            )
            raw_load = await agent.connection.request(
                "session/load",
                {"sessionId": session.session_id, "cwd": str(ROOT), "mcpServers": []},
            )
    assert mode.to_wire() == {}
    assert raw_load == {}


# ---------------------------------------------------------------- SDK client -> accord echo agent


class SdkRecordingClient(acp.Client):
    """A client on the official SDK that records the agent's message chunks."""

    def __init__(self) -> None:
        self.chunks: list[AgentMessageChunk] = []
        self.session_ids: set[str] = set()
        self.first_chunk = anyio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.session_ids.add(session_id)
        if isinstance(update, AgentMessageChunk):
            self.chunks.append(update)
            self.first_chunk.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the echo agent never asks for permission")

    def texts(self) -> list[str]:
        texts: list[str] = []
        for chunk in self.chunks:
            assert isinstance(chunk.content, SdkTextContentBlock)
            texts.append(chunk.content.text)
        return texts


def _echo_env(delay: str) -> dict[str, str]:
    env = {"ECHO_DELAY": delay}
    # The SDK trims the child's environment; keep what makes this interpreter work.
    for name in ("PYTHONPATH", "VIRTUAL_ENV"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


@pytest.mark.anyio
async def test_sdk_client_drives_the_echo_agent() -> None:
    client = SdkRecordingClient()
    with anyio.fail_after(TIMEOUT):
        async with acp.spawn_agent_process(
            client, sys.executable, str(ECHO_AGENT), env=_echo_env("0"), cwd=str(ROOT)
        ) as (conn, _process):
            init = await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_info=SdkImplementation(name="sdk-client", version="0.12.1"),
            )
            session = await conn.new_session(cwd=str(ROOT), mcp_servers=[])
            response = await conn.prompt(
                session_id=session.session_id,
                prompt=[acp.text_block("hello there general kenobi")],
            )
            with pytest.raises(acp.RequestError) as missing:
                await conn.list_sessions()

    assert init.protocol_version == 1
    assert init.agent_info is not None
    assert init.agent_info.name == "echo-agent"
    assert init.agent_capabilities is not None
    assert init.agent_capabilities.load_session is False
    assert response.stop_reason == "end_turn"
    assert client.texts() == ["hello", " there", " general", " kenobi"]
    assert client.session_ids == {session.session_id}
    assert len({chunk.message_id for chunk in client.chunks}) == 1
    # What accord's echo agent does not implement is -32601, not a silent success.
    assert missing.value.code == -32601


@pytest.mark.anyio
async def test_sdk_client_cancels_a_slow_echo() -> None:
    client = SdkRecordingClient()
    results: list[Any] = []
    with anyio.fail_after(TIMEOUT):
        async with acp.spawn_agent_process(
            client, sys.executable, str(ECHO_AGENT), env=_echo_env("60"), cwd=str(ROOT)
        ) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(ROOT), mcp_servers=[])

            async def run_prompt() -> None:
                results.append(
                    await conn.prompt(
                        session_id=session.session_id,
                        prompt=[acp.text_block("one two three four")],
                    )
                )

            async with anyio.create_task_group() as group:
                group.start_soon(run_prompt)
                # The agent pauses 60 s after each word: cancel during the first pause.
                await client.first_chunk.wait()
                await conn.cancel(session_id=session.session_id)

    [response] = results
    assert response.stop_reason == "cancelled"
    assert client.texts() == ["one"]

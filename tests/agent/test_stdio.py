"""The runtime as a real stdio process: equal sequences to the in-memory pair; kill -9.

The agent is ``_agent_over_stdio.py``: ``run_agent_stdio(AgentRuntime(ScriptedEngine(...),
store=SqliteSessionStore(path)))``.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from _agent_support import CWD, FULL, RecordingClient, command_steps, message_texts, text
from helpers.fold import fold
from helpers.processes import child_env
from helpers.raw_wire import raw_agent
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.agent import AgentRuntime
from accord.engines import ToolCallEnded, TurnCompleted
from accord.errors import ConnectionClosed
from accord.events import event_from_json
from accord.roles import AgentSideConnection, ClientSideConnection
from accord.schema import (
    InitializeRequest,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    SetSessionConfigOptionRequest,
    SetSessionModeRequest,
)
from accord.store import SqliteSessionStore
from accord.testing import (
    HOSTILE_IDS,
    ScriptedEngine,
    check_answer,
    check_refusal,
    id_request,
    next_answer,
    play_hostile_ids,
)
from accord.transports import Transport, memory_transport_pair, spawn_agent

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.subprocess,
    pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL"),
]

_AGENT = Path(__file__).with_name("_agent_over_stdio.py")
#: Message chunks the client must have seen before the agent is killed: mid-stream.
_SEEN_BEFORE_KILL = 300


@asynccontextmanager
async def _stdio_agent(path: Path, backend: str) -> AsyncGenerator[Transport]:
    command = [sys.executable, str(_AGENT), str(path), backend]
    async with spawn_agent(command, env=child_env(_AGENT)) as transport:
        yield transport


@asynccontextmanager
async def _memory_agent(path: Path) -> AsyncGenerator[Transport]:
    engine = ScriptedEngine(respond=command_steps, capabilities=FULL)
    agent_end, client_end = memory_transport_pair()
    async with (
        SqliteSessionStore(path) as store,
        AgentSideConnection(AgentRuntime(engine, store=store), agent_end),
    ):
        yield client_end


async def _initialize(conn: ClientSideConnection, client: RecordingClient, extended: bool) -> None:
    meta = {"accord": {"events": True}} if extended else None
    await conn.initialize(
        InitializeRequest(
            protocol_version=1, client_capabilities=client.client_capabilities(), meta=meta
        )
    )


async def _drive(transport: Transport, extended: bool) -> list[tuple[str, Any]]:
    """One scripted conversation; returns every notification the client received."""
    client = RecordingClient()
    async with ClientSideConnection(client, transport) as conn:
        with anyio.fail_after(TIMEOUT):
            await _initialize(conn, client, extended)
            session_id = (
                await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
            ).session_id
            await conn.prompt(PromptRequest(session_id=session_id, prompt=text("rich")))
            await conn.set_session_mode(
                SetSessionModeRequest(session_id=session_id, mode_id="code")
            )
            await conn.set_session_config_option(
                SetSessionConfigOptionRequest(
                    session_id=session_id, config_id="model", value="smart"
                )
            )
            await conn.prompt(PromptRequest(session_id=session_id, prompt=text("stream 40")))
    received: list[tuple[str, Any]] = [
        ("session/update", n.to_wire()) for n in client.notifications
    ]
    if extended:
        # Interleave is not recorded across handlers; compare the two streams separately.
        received += [(method, params) for method, params in client.ext]
    return received


def _normalized(messages: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Ids the agent makes up (session, message, turn) and times, numbered by appearance."""
    seen: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            mapping = cast(dict[str, Any], value)
            for key, item in mapping.items():
                if key in ("sessionId", "messageId", "turnId") and isinstance(item, str):
                    out[key] = seen.setdefault(item, f"<{key}-{len(seen)}>")
                elif key == "updatedAt":
                    out[key] = "<time>"
                elif key == "acp/cursor" and isinstance(item, str):
                    # The cursor names the session (a tag of its id), then epoch and seq.
                    out[key] = "<cursor " + ".".join(item.split(".")[2:]) + ">"
                else:
                    out[key] = walk(item)
            return out
        if isinstance(value, list):
            return [walk(item) for item in cast(list[Any], value)]
        return value

    return [(method, walk(params)) for method, params in messages]


@pytest.mark.parametrize("extended", [False, True], ids=["standard", "extended"])
async def test_memory_and_stdio_deliver_equal_sequences(
    tmp_path: Path, anyio_backend: str, extended: bool
) -> None:
    async with _memory_agent(tmp_path / "memory.sqlite3") as transport:
        over_memory = _normalized(await _drive(transport, extended))
    async with _stdio_agent(tmp_path / "stdio.sqlite3", anyio_backend) as transport:
        over_stdio = _normalized(await _drive(transport, extended))
    assert over_memory == over_stdio
    kinds = {
        params["update"]["sessionUpdate"] for m, params in over_memory if m == "session/update"
    }
    # the prompting client is not sent its own prompt (only an extended one, which gets the
    # whole chain)
    assert ("user_message_chunk" in kinds) is extended
    assert kinds >= {
        "available_commands_update",
        "session_info_update",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "usage_update",
        "current_mode_update",
        "config_option_update",
    }
    assert any(m == "_accord/event" for m, _ in over_memory) == extended


def _integrity(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        db.close()


def _messages(updates: list[dict[str, Any]]) -> list[tuple[str, str | None, str]]:
    """``(kind, messageId, text)`` per message, after folding merged chunks."""
    out: list[tuple[str, str | None, str]] = []
    for message in fold(updates)["messages"]:
        kind, message_id = message["key"]
        out.append((kind, message_id, "".join(b.get("text", "") for b in message["blocks"])))
    return out


async def test_kill_9_mid_turn_then_load_replays_everything_the_client_saw(
    tmp_path: Path, anyio_backend: str
) -> None:
    path = tmp_path / "agent.sqlite3"
    client = RecordingClient()
    with anyio.fail_after(SCENARIO_TIMEOUT):  # two agent processes, a kill and a replay
        async with _stdio_agent(path, anyio_backend) as transport:
            async with ClientSideConnection(client, transport) as conn:
                await _initialize(conn, client, extended=False)
                session_id = (
                    await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
                ).session_id
                await conn.prompt(PromptRequest(session_id=session_id, prompt=text("hello")))

                async def stream() -> None:
                    with pytest.raises(ConnectionClosed):
                        await conn.prompt(
                            PromptRequest(session_id=session_id, prompt=text("stream 3000 0.002"))
                        )

                async with anyio.create_task_group() as tg:
                    tg.start_soon(stream)

                    def enough() -> bool:
                        chunks = client.kinds(session_id).count("agent_message_chunk")
                        return chunks >= _SEEN_BEFORE_KILL

                    await client.wait_until(enough)
                    os.kill(transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]
            received = client.updates(session_id)

        assert _integrity(path) == "ok"
        async with SqliteSessionStore(path) as store:
            assert await store.get_session(session_id) is not None

        restarted = RecordingClient()
        async with (
            _stdio_agent(path, anyio_backend) as transport,
            ClientSideConnection(restarted, transport) as conn,
        ):
            await _initialize(conn, restarted, extended=False)
            await conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
            replayed = restarted.updates(session_id)
            await conn.prompt(PromptRequest(session_id=session_id, prompt=text("still here")))
            assert message_texts(restarted.updates(session_id))[-1] == (
                "agent_message_chunk",
                "still here",
            )

    def transcript(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            u
            for u in updates
            # the client that prompted was not sent its prompts back: replay has them
            if u["sessionUpdate"] in ("agent_message_chunk", "tool_call")
            or u["sessionUpdate"] == "tool_call_update"
        ]

    seen = _messages(transcript(received))
    stored = _messages(transcript(replayed))
    streamed = seen[-1]
    assert streamed[0] == "agent_message_chunk"
    assert streamed[2].count(" ") >= _SEEN_BEFORE_KILL - 1  # one chunk answered "hello"
    # Everything but the message cut by the kill is replayed exactly ...
    assert stored[: len(seen) - 1] == seen[:-1]
    # ... and the cut message's text is a prefix of what the store kept.
    kind, message_id, kept = stored[len(seen) - 1]
    assert (kind, message_id) == streamed[:2]
    assert kept.startswith(streamed[2])
    assert kept.count(" ") < 3000  # the kill did cut the turn short


async def test_a_client_leaving_mid_turn_leaves_no_error_in_the_agent_s_log(
    tmp_path: Path, anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The client of a real stdio agent goes away mid-turn (its tool call open, the engine
    ignoring cancel): the agent ends the turn by itself, its stderr has no warning, error or
    traceback, and the stored chain is gap-free and closes the turn (the tool call ended as
    cancelled, the turn completed ``cancelled``)."""
    path = tmp_path / "agent.sqlite3"
    client = RecordingClient()
    caplog.set_level(logging.INFO, logger="accord.agent.stderr")
    with anyio.fail_after(SCENARIO_TIMEOUT):
        async with _stdio_agent(path, anyio_backend) as transport:
            async with ClientSideConnection(client, transport) as conn:
                await _initialize(conn, client, extended=False)
                session_id = (
                    await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
                ).session_id

                async def hang() -> None:
                    with pytest.raises(ConnectionClosed):
                        await conn.prompt(PromptRequest(session_id=session_id, prompt=text("hang")))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(hang)
                    await client.wait_until(
                        lambda: client.kinds(session_id).count("agent_message_chunk") == 3
                    )
                    tg.cancel_scope.cancel()
            # Leaving the connection closed the agent's stdin; it must exit by itself.
            with anyio.fail_after(TIMEOUT):
                await transport.process.wait()  # type: ignore[attr-defined]
            assert transport.process.returncode == 0  # type: ignore[attr-defined]
    agent_log = [r.getMessage() for r in caplog.records if r.name == "accord.agent.stderr"]
    assert not [line for line in agent_log if any(w in line for w in _NOISE)], agent_log
    async with SqliteSessionStore(path) as store:
        stored = await store.read_events(session_id)
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    kinds = [e.kind for e in stored]
    assert kinds[-2:] == ["tool_call_ended", "turn_completed"]
    assert event_from_json(stored[-2].payload) == ToolCallEnded(
        tool_call_id="hung", status="cancelled"
    )
    assert event_from_json(stored[-1].payload) == TurnCompleted(stop_reason="cancelled")


#: What must not appear in the agent's stderr when its client merely went away.
_NOISE = ("WARNING", "ERROR", "Traceback", "WriterClosed")


async def test_a_permission_question_with_a_repeated_option_id_never_reaches_the_wire(
    tmp_path: Path,
) -> None:
    """The engine offers "Deny" and "Allow always" under one id: the runtime refuses to ask
    (the prompt is answered with an error saying why), no ``session/request_permission`` is
    written at all, the tool never runs, and the connection serves the next prompt."""
    command = [sys.executable, str(_AGENT), str(tmp_path / "store.db")]
    async with raw_agent(command, env=child_env(_AGENT)) as agent:
        capabilities = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
        init = {"protocolVersion": 1, "clientCapabilities": capabilities}
        assert "result" in await agent.request(1, "initialize", init)
        created = await agent.request(2, "session/new", {"cwd": CWD, "mcpServers": []})
        session_id = created["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "ambiguous"}]}
        refused = await agent.request(3, "session/prompt", prompt)
        assert refused["error"]["code"] == -32603
        assert refused["error"]["data"] == {
            "error": "ValueError",
            "message": "permission options must have distinct option ids: ['x']",
        }
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "still here"}]}
        answered = await agent.request(4, "session/prompt", prompt)
        assert answered["result"]["stopReason"] == "end_turn"
    assert agent.requests == []
    assert not any("session/request_permission" in line for line in agent.lines)
    assert any("still here" in line for line in agent.lines)


@pytest.mark.wire_unchecked("ids of every wrong kind on purpose")
async def test_hostile_request_ids_over_stdio_are_answered_as_json_rpc_says(
    tmp_path: Path,
) -> None:
    """accord.testing's ``HOSTILE_IDS`` against the agent process: valid ids (a 1 MiB string,
    2**63, null...) come back exactly, the rest get -32600 with id null and a short message;
    a duplicate of a prompt's id while the prompt runs is refused and the prompt goes on to
    its own answer; the agent serves on and its stderr never quotes an id whole."""
    command = [sys.executable, str(_AGENT), str(tmp_path / "store.db")]
    held = HOSTILE_IDS["huge-string"]
    async with raw_agent(command, env=child_env(_AGENT)) as agent:
        init = {"protocolVersion": 1, "clientCapabilities": {}}
        assert "result" in await agent.request(1, "initialize", init)
        problems = await play_hostile_ids(agent)
        assert problems == dict.fromkeys(HOSTILE_IDS, ""), problems
        created = await agent.request(2, "session/new", {"cwd": CWD, "mcpServers": []})
        session_id = created["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "wait"}]}
        await agent.send(id_request(held, "session/prompt", prompt))
        while (await agent.receive()).get("method") != "session/update":
            pass  # the turn streams: the prompt is in flight
        await agent.send(id_request(held, "session/prompt", prompt))
        refusal = await next_answer(agent)
        assert check_refusal(refusal) == "", refusal
        await agent.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
        )
        answer = await next_answer(agent)
        assert check_answer(held, answer) == ""
        assert answer["result"]["stopReason"] == "cancelled"
        assert "result" in await agent.request(3, "session/list", {})
    assert len(agent.stderr) < 64 * 1024, len(agent.stderr)

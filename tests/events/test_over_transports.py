"""The same events reach a client through the delivery pipeline as equal sequences over the
in-memory and stdio transports."""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import Attachment, ClientChannel, DeliveryPipeline
from accord.engines import (
    Event,
    PlanChanged,
    SubAgentStarted,
    TextChunk,
    ThinkingChunk,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    TurnCompleted,
    UsageReported,
)
from accord.events import EXT_EVENT_METHOD
from accord.jsonrpc import Connection
from accord.schema import DiffToolCallContent, PlanEntry, TextContentBlock
from accord.store import MemorySessionStore, SessionRecord
from accord.transports import (
    FdReceiveStream,
    FdSendStream,
    StreamTransport,
    Transport,
    memory_transport_pair,
    stdio_transport,
)

pytestmark = pytest.mark.anyio


def _script() -> list[Event]:
    events: list[Event] = [
        ThinkingChunk(message_id="m0", content=TextContentBlock(text="thinking...")),
        *(TextChunk(message_id="m1", content=TextContentBlock(text=f"{i} ")) for i in range(300)),
        ToolCallStarted(tool_call_id="c1", title="Edit", tool_kind="edit"),
        SubAgentStarted(sub_agent_id="sub", name="helper", parent_tool_call_id="c1"),
        ToolCallProgress(tool_call_id="c1", status="in_progress"),
        ToolCallEnded(
            tool_call_id="c1",
            status="completed",
            content=(DiffToolCallContent(path="/w/a.py", old_text="a", new_text="b\u00e9\n"),),
        ),
        PlanChanged(entries=(PlanEntry(content="ship", priority="high", status="completed"),)),
        UsageReported(used=10, size=100),
        TurnCompleted(stop_reason="end_turn"),
    ]
    return events


@asynccontextmanager
async def _memory() -> AsyncGenerator[tuple[Transport, Transport]]:
    agent, client = memory_transport_pair()
    yield agent, client


@asynccontextmanager
async def _stdio() -> AsyncGenerator[tuple[Transport, Transport]]:
    """The agent's real ``stdio_transport`` over pipes standing in for fds 0 and 1."""
    agent_in, client_out = os.pipe()
    client_in, agent_out = os.pipe()
    agent = stdio_transport(stdin_fd=agent_in, stdout_fd=agent_out, protect_stdout=False)
    os.close(agent_out)  # stdio_transport writes to its own duplicate
    client = StreamTransport(FdReceiveStream(client_in), FdSendStream(client_out))
    try:
        yield agent, client
    finally:
        for fd in (agent_in, client_in):
            os.close(fd)


def _is_last(method: str, params: Any, extended: bool) -> bool:
    """The last notification of the script: the completion header, or the usage update."""
    if extended:
        return method == EXT_EVENT_METHOD and params["kind"] == "turn_completed"
    return params["update"]["sessionUpdate"] == "usage_update"


async def _run(pair: Any, extended: bool) -> list[tuple[str, Any]]:
    received: list[tuple[str, Any]] = []
    done = anyio.Event()

    async def on_notification(method: str, params: Any) -> None:
        received.append((method, params))
        if _is_last(method, params, extended):
            done.set()

    async with (
        pair as (agent_transport, client_transport),
        Connection(client_transport, on_notification=on_notification),
        Connection(agent_transport) as agent,
        anyio.create_task_group() as tg,
    ):
        store = MemorySessionStore()
        now = datetime.now(UTC)
        await store.create_session(
            SessionRecord(session_id="s-1", cwd="/", created_at=now, updated_at=now)
        )
        pipeline = DeliveryPipeline("s-1", store, epoch=0, next_seq=1)
        channel = ClientChannel(agent.notify, extended=extended, boolean_options=False)
        attachment = Attachment(pipeline, channel, cursor=0)
        pipeline.attach(attachment)
        tg.start_soon(attachment.run)
        with anyio.fail_after(TIMEOUT):
            for event in _script():
                await pipeline.publish(event, epoch=0, turn_id="t-1")
            await done.wait()
        tg.cancel_scope.cancel()
    return received


@pytest.mark.parametrize("extended", [False, True], ids=["standard", "extended"])
async def test_memory_and_stdio_deliver_equal_sequences(extended: bool) -> None:
    over_memory = await _run(_memory(), extended)
    over_stdio = await _run(_stdio(), extended)
    assert over_memory == over_stdio
    updates = [m for m, _ in over_memory if m == "session/update"]
    assert len(updates) == 1 + 300 + 3 + 1 + 1  # thought, text, tool x3, plan, usage
    if extended:
        # every event, the observe layer (the sub-agent's start) included
        assert [m for m, _ in over_memory].count(EXT_EVENT_METHOD) == len(_script())

"""A tool call cut short by a cancelled turn ends with a final v1 status, live and when
``session/load`` replays it: the same end update, in the same place (issue 26)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _agent_support import CWD, Harness, RecordingClient, scripted, serve
from helpers.timeouts import TIMEOUT

from accord.engines import ToolCallStarted
from accord.schema import CancelNotification, LoadSessionRequest
from accord.store import MemorySessionStore
from accord.testing import Emit, Say, WaitForCancel

pytestmark = pytest.mark.anyio

_CANCELLED_END = {
    "sessionUpdate": "tool_call_update",
    "toolCallId": "t1",
    "status": "failed",
    "_meta": {"accord": {"status": "cancelled"}},
}


async def _cancel_once_shown(h: Harness, session_id: str) -> str:
    """Prompt, cancel once the tool call ``t1`` has arrived, return the stop reason."""
    result: list[str] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            result.append((await h.prompt(session_id, "go")).stop_reason)

        tg.start_soon(run)
        await h.client.wait_until(
            lambda: any(u.get("toolCallId") == "t1" for u in h.client.updates(session_id))
        )
        await h.conn.cancel(CancelNotification(session_id=session_id))
    return result[0]


def _transcript(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool-call and message updates (no announcements, no usage)."""
    kept = ("tool_call", "tool_call_update", "agent_message_chunk")
    return [u for u in updates if u["sessionUpdate"] in kept]


@pytest.mark.parametrize("status", ["in_progress", "pending"])
async def test_a_cancelled_tool_call_replays_ended_in_order(status: str) -> None:
    store = MemorySessionStore()
    started = ToolCallStarted(tool_call_id="t1", title="Long", status=status)  # type: ignore[arg-type]
    engine = scripted([Say("working"), Emit(started), WaitForCancel()], [Say("after")])
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        assert await _cancel_once_shown(h, session_id) == "cancelled"
        assert (await h.prompt(session_id, "more")).stop_reason == "end_turn"
        live = _transcript(h.client.updates(session_id))
    # The live end update is a final v1 status (with accord's marker), before what follows.
    tool = [u for u in live if u.get("toolCallId") == "t1"]
    assert tool[0]["status"] == status
    assert tool[-1] == _CANCELLED_END
    assert live.index(tool[-1]) < len(live) - 1  # the next turn's message comes after it

    # A fresh client loads the session: the same updates, the call ended where it ended.
    client = RecordingClient()
    async with serve(scripted(), store=store, client=client) as h:
        request = LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
        with anyio.fail_after(TIMEOUT):
            await h.conn.load_session(request)
        replayed = _transcript(client.updates(session_id))
    assert [u for u in replayed if u.get("toolCallId") == "t1"] == tool
    assert [u["sessionUpdate"] for u in replayed] == [u["sessionUpdate"] for u in live]
    assert replayed[-1]["content"]["text"] == "after"

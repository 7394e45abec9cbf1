"""The activity log: one privacy-safe NDJSON record per committed event, after a real turn."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from _agent_support import RecordingClient, scripted, serve

from accord.agent import ActivityLog, AgentRuntime
from accord.engines import (
    MessagesCompacted,
    ModelCallEnded,
    ModelCallStarted,
    StateSnapshot,
    SubAgentEvent,
    SubAgentStarted,
    TextChunk,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    new_id,
)
from accord.events import ACTIVITY_SCHEMA_VERSION
from accord.schema import (
    ContentToolCallContent,
    PlanEntry,
    TextContentBlock,
    ToolCallLocation,
)
from accord.store import MemorySessionStore
from accord.testing import Emit, Fail, Say, SetPlan, SetTitle, Think, UseTool

pytestmark = pytest.mark.anyio

SECRETS = {
    "text": "the launch code is 0000-SECRET-TEXT",
    "prompt": "please read my diary SECRET-PROMPT",
    "reasoning": "I should not reveal SECRET-REASONING",
    "path": "/home/alice/.ssh/id_secret_path",
    "url": "https://internal.example.com/secret-url?token=sk-live-123",
    "input": "sk-live-SECRET-INPUT",
    "output": "SECRET-OUTPUT-contents of the file",
    "error": "password=hunter2 SECRET-ERROR",
    "title": "Refactor alice's SECRET-TITLE",
    "plan": "exfiltrate SECRET-PLAN",
    "state": "SECRET-STATE-history",
}


def _secret_turn() -> list[object]:
    return [
        Think(SECRETS["reasoning"]),
        Say(SECRETS["text"]),
        UseTool(
            title=SECRETS["title"],
            kind="read",
            name="read_file",
            raw_input={"path": SECRETS["path"], "token": SECRETS["input"]},
            ask=True,
            result=SECRETS["output"],
        ),
        Emit(
            ToolCallStarted(
                tool_call_id="fetch-1",
                title=f"Fetch {SECRETS['url']}",
                tool_kind="fetch",
                status="in_progress",
                raw_input={"url": SECRETS["url"]},
                locations=(ToolCallLocation(path=SECRETS["path"], line=3),),
            )
        ),
        Emit(
            ToolCallProgress(
                tool_call_id="fetch-1",
                content=(ContentToolCallContent(content=TextContentBlock(text=SECRETS["output"])),),
            )
        ),
        Emit(
            ToolCallEnded(tool_call_id="fetch-1", status="completed", raw_output=SECRETS["output"])
        ),
        SetPlan(entries=(PlanEntry(content=SECRETS["plan"], priority="high", status="pending"),)),
        SetTitle(SECRETS["title"]),
        Emit(ModelCallStarted(call_id="mc-1", model=SECRETS["url"])),
        Emit(ModelCallEnded(call_id="mc-1", input_tokens=10, output_tokens=2)),
        Emit(
            MessagesCompacted(messages_before=9, messages_after=2, tokens_before=90, tokens_after=9)
        ),
        Emit(SubAgentStarted(sub_agent_id="sub", name=SECRETS["path"], parent_tool_call_id="x")),
        Emit(
            SubAgentEvent(
                agent_id="sub",
                event=TextChunk(
                    message_id=new_id(), content=TextContentBlock(text=SECRETS["text"])
                ),
            )
        ),
        Emit(StateSnapshot(state={"messages": [SECRETS["state"], SECRETS["prompt"]]})),
        Fail(message=SECRETS["error"]),
    ]


async def test_a_real_turn_with_secrets_everywhere_leaves_none_in_the_log(tmp_path: Path) -> None:
    log_path = tmp_path / "activity.ndjson"
    store = MemorySessionStore()
    engine = scripted(_secret_turn())  # type: ignore[arg-type]
    client = RecordingClient(answers=["allow_once"])
    async with serve(engine, store=store, client=client, activity=log_path) as h:
        session_id = await h.new_session()
        with pytest.raises(Exception, match="prompt turn failed"):
            await h.prompt(session_id, SECRETS["prompt"])
        stored = await store.read_events(session_id, limit=1000)
    data = log_path.read_bytes()
    for name, secret in SECRETS.items():
        assert secret.encode() not in data, f"the {name} leaked into the activity log"
        assert b"sk-live" not in data and b"alice" not in data and b"hunter2" not in data
    records = [orjson.loads(line) for line in data.splitlines()]
    assert data.endswith(b"\n")
    # one record per committed event, in seq order, each with its schema version
    assert [r["seq"] for r in records] == [e.seq for e in stored]
    assert [r["kind"] for r in records] == [e.kind for e in stored]
    assert {r["schema_version"] for r in records} == {ACTIVITY_SCHEMA_VERSION}
    kinds = {r["kind"] for r in records}
    assert {
        "user_message_chunk",
        "thinking_chunk",
        "text_chunk",
        "tool_call_started",
        "tool_call_ended",
        "permission_pending",
        "plan_updated",
        "title_changed",
        "model_call_started",
        "messages_compacted",
        "sub_agent_started",
        "state_snapshot",
        "turn_error",
    } <= kinds
    text = next(
        r for r in records if r["kind"] == "text_chunk" and r["agent"] == records[0]["agent"]
    )
    assert text["size"] == len(SECRETS["text"].encode())  # sizes, never the text


async def test_runtimes_sharing_one_log_append_whole_lines(tmp_path: Path) -> None:
    log = ActivityLog(tmp_path / "shared.ndjson")
    try:
        for _ in range(2):
            async with serve(scripted([Say("hi")]), activity=log) as h:
                await h.prompt(await h.new_session())
    finally:
        log.close()
    lines = (tmp_path / "shared.ndjson").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]  # every line whole
    assert len(records) == log.written
    first, second = (
        [r["kind"] for r in records if r["session"] == s]
        for s in {r["session"]: None for r in records}
    )
    assert first == second
    assert first[:2] == ["user_message_chunk", "text_chunk"] and first[-1] == "turn_completed"


def test_an_activity_path_that_cannot_be_opened_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        AgentRuntime(scripted(), store=MemorySessionStore(), activity=tmp_path)


class _Broken(io.BytesIO):
    def write(self, data: object) -> int:  # type: ignore[override]
        raise OSError(28, "No space left on device")


async def test_a_failing_log_stops_itself_and_never_fails_a_turn() -> None:
    log = ActivityLog(_Broken())
    async with serve(scripted([Say("hi")]), activity=log) as h:
        response = await h.prompt(await h.new_session())
    assert response.stop_reason == "end_turn"
    assert log.failed and log.written == 0

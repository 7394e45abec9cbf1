"""The mapping to ``session/update``: exhaustive, stable-schema valid, ids and fields exact."""

from __future__ import annotations

import typing

import pytest
from _events_samples import sample_events
from _events_schema import stable_validator

from accord.engines import (
    BudgetWarning,
    CompactionChanged,
    CompactionSummaryAdded,
    Event,
    TextChunk,
    ThinkingChunk,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    UsageReported,
    new_id,
)
from accord.events import COMPACTED_MARKER, SessionUpdateMapper, to_session_update
from accord.schema import SessionNotification, SessionUpdate, TextContentBlock

SAMPLES = sample_events()

NO_UPDATE = {
    "permission_pending",
    "budget_warning",
    "turn_completed",
    "state_snapshot",
    "model_call_started",
    "model_call_ended",
    "messages_compacted",
    "turn_error",
    "sub_agent_started",
    "sub_agent_stopped",
    "compaction_summary_chunk",
}

UPDATE_TAG = {
    "user_message_chunk": "user_message_chunk",
    "text_chunk": "agent_message_chunk",
    "thinking_chunk": "agent_thought_chunk",
    "tool_call_started": "tool_call",
    "tool_call_progress": "tool_call_update",
    "tool_call_ended": "tool_call_update",
    "plan_updated": "plan",
    "mode_changed": "current_mode_update",
    "config_changed": "config_option_update",
    "commands_changed": "available_commands_update",
    "title_changed": "session_info_update",
    "usage_reported": "usage_update",
    "compaction_changed": "agent_message_chunk",  # the marker at its end; nothing before
}


def test_every_event_class_has_a_decided_mapping() -> None:
    kinds = {cls.__dataclass_fields__["kind"].default for cls in typing.get_args(Event)}
    assert kinds == NO_UPDATE | UPDATE_TAG.keys()
    assert not NO_UPDATE & UPDATE_TAG.keys()


def test_every_event_class_has_a_hook() -> None:
    for cls in typing.get_args(Event):
        kind = cls.__dataclass_fields__["kind"].default
        assert callable(getattr(SessionUpdateMapper, kind)), kind


def test_an_unknown_event_is_rejected_at_run_time() -> None:
    with pytest.raises(AssertionError):
        SessionUpdateMapper().map(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.kind)
def test_sample_maps_as_decided(event: Event) -> None:
    update = to_session_update(event)
    if event.kind in NO_UPDATE or (
        isinstance(event, CompactionChanged) and event.status == "in_progress"
    ):
        assert update is None
        return
    assert update is not None
    wire = update.to_wire()
    assert wire["sessionUpdate"] == UPDATE_TAG[event.kind]
    notification = SessionNotification(session_id="s", update=update).to_wire()
    assert SessionNotification.model_validate(notification).to_wire() == notification


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.kind)
def test_default_mapping_emits_only_the_stable_schema(event: Event) -> None:
    validator = stable_validator()
    if validator is None:
        pytest.skip("official schema not fetched (scripts/fetch_schema.sh)")
    update = to_session_update(event)
    if update is not None:
        validator.validate(SessionNotification(session_id="s", update=update).to_wire())


def _wire(event: Event) -> dict[str, object]:
    update = to_session_update(event)
    assert update is not None
    return update.to_wire()


def test_chunks_of_one_message_share_its_id_and_a_new_message_gets_a_new_one() -> None:
    first, second = new_id(), new_id()
    chunks = [
        TextChunk(message_id=first, content=TextContentBlock(text="Hel")),
        TextChunk(message_id=first, content=TextContentBlock(text="lo")),
        ThinkingChunk(message_id=second, content=TextContentBlock(text="hmm")),
    ]
    ids = [_wire(chunk)["messageId"] for chunk in chunks]
    assert ids == [first, first, second]
    assert first != second


def test_progress_carries_only_changed_fields() -> None:
    assert _wire(ToolCallProgress(tool_call_id="c", status="in_progress")) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "status": "in_progress",
    }
    assert _wire(ToolCallProgress(tool_call_id="c", content=())) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "content": [],
    }


def test_ended_carries_status_and_what_is_set() -> None:
    assert _wire(ToolCallEnded(tool_call_id="c", status="failed")) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "status": "failed",
    }
    wire = _wire(ToolCallEnded(tool_call_id="c", status="completed", raw_output={"n": 1}))
    assert wire["rawOutput"] == {"n": 1}


def test_started_leaves_out_empty_collections() -> None:
    assert _wire(ToolCallStarted(tool_call_id="c", title="Run", tool_kind="execute")) == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c",
        "title": "Run",
        "kind": "execute",
        "status": "pending",
    }


def test_started_names_the_tool_when_known() -> None:
    wire = _wire(ToolCallStarted(tool_call_id="c", title="Read a.py", name="read_file"))
    assert wire["name"] == "read_file"


def test_usage_has_cost_only_when_reported() -> None:
    assert "cost" not in _wire(UsageReported(used=1, size=10))


def test_budget_warning_has_no_stable_update() -> None:
    warning = BudgetWarning(resource="cost", used=9.0, limit=10.0)
    assert to_session_update(warning) is None


def test_a_subclass_overrides_one_kind() -> None:
    class Quiet(SessionUpdateMapper):
        def thinking_chunk(self, event: ThinkingChunk) -> SessionUpdate | None:
            return None

    thought = ThinkingChunk(message_id="m", content=TextContentBlock(text="..."))
    text = TextChunk(message_id="m", content=TextContentBlock(text="hi"))
    assert Quiet().map(thought) is None
    assert Quiet().map(text) == to_session_update(text)


def test_a_client_without_compaction_sees_only_the_marker_message() -> None:
    mapper = SessionUpdateMapper()
    started = CompactionChanged(compaction_id="c", message_id="m", status="in_progress")
    chunk = CompactionSummaryAdded(compaction_id="c", content=TextContentBlock(text="sum"))
    done = CompactionChanged(compaction_id="c", message_id="m", status="completed")
    failed = CompactionChanged(compaction_id="d", message_id="n", status="failed", error="boom")
    assert mapper.map(started) is None
    assert mapper.map(chunk) is None
    done_update = mapper.map(done)
    assert done_update is not None
    assert done_update.to_wire() == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": COMPACTED_MARKER},
        "messageId": "m",
    }
    failed_update = mapper.map(failed)
    assert failed_update is not None
    text = failed_update.to_wire()["content"]["text"]
    assert "boom" in text and "kept as it was" in text


def test_a_client_with_compaction_gets_the_unstable_updates() -> None:
    mapper = SessionUpdateMapper(compaction=True)
    events = [
        CompactionChanged(compaction_id="c", message_id="m", status="in_progress"),
        CompactionSummaryAdded(compaction_id="c", content=TextContentBlock(text="sum")),
        CompactionChanged(compaction_id="c", message_id="m", status="completed"),
        CompactionChanged(compaction_id="d", message_id="n", status="failed", error="boom"),
    ]
    wires = [update.to_wire() for event in events if (update := mapper.map(event)) is not None]
    assert wires == [
        {"sessionUpdate": "compaction_update", "compactionId": "c", "status": "in_progress"},
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "c",
            "content": {"type": "text", "text": "sum"},
        },
        {"sessionUpdate": "compaction_update", "compactionId": "c", "status": "completed"},
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "d",
            "status": "failed",
            "error": "boom",
        },
    ]

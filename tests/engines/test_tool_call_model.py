"""One model of a tool call, one status table, one merge rule, pinned field kind by field kind.

ACP's rule for updates of a tool call: later wins; a field present replaces the earlier value;
a collection replaces the whole collection (no append); ``null`` or absent leaves the value.
The agent runtime (tracker), the replay, the client view and the test helpers all use
:func:`accord.engines.merge_tool_call`; the last test checks the agent's and the client's
snapshots agree after the same events went over the wire mapping.
"""

from __future__ import annotations

from typing import Any

import pytest

from accord.client import SessionView
from accord.engines import (
    TOOL_CALL_TRANSITIONS,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    ToolCallState,
    ToolCallTracker,
    merge_tool_call,
    tool_call_changes,
)
from accord.errors import LocalProtocolError
from accord.events import to_session_update
from accord.schema import (
    ContentToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    ToolCallUpdateSessionUpdate,
)


def _text(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(content=TextContentBlock(text=text))


BASE = ToolCallState(
    tool_call_id="t1",
    title="Read a.py",
    kind="read",
    status="pending",
    content=(_text("one"), _text("two")),
    locations=(ToolCallLocation(path="/w/a.py"),),
    raw_input={"path": "a.py", "limit": 10},
    raw_output={"ok": True},
    name="read_file",
)


@pytest.mark.parametrize(
    ("field", "later"),
    [
        ("title", "Read b.py"),  # a string
        ("kind", "edit"),  # a literal
        ("status", "in_progress"),  # the status
        ("name", "open_file"),  # an optional string
    ],
)
def test_a_present_scalar_replaces_and_none_or_absent_keeps(field: str, later: str) -> None:
    assert getattr(merge_tool_call(BASE, {field: later}), field) == later
    assert merge_tool_call(BASE, {field: None}) is BASE
    assert merge_tool_call(BASE, {}) is BASE


@pytest.mark.parametrize("field", ["content", "locations"])
def test_a_collection_replaces_the_whole_collection(field: str) -> None:
    replacement = [_text("three")] if field == "content" else [ToolCallLocation(path="/w/b.py")]
    merged = merge_tool_call(BASE, {field: replacement})
    assert getattr(merged, field) == tuple(replacement)  # not appended, and kept as a tuple
    emptied = merge_tool_call(BASE, {field: []})
    assert getattr(emptied, field) == ()  # an empty collection clears it
    assert getattr(merge_tool_call(BASE, {field: None}), field) == getattr(BASE, field)


@pytest.mark.parametrize("field", ["raw_input", "raw_output"])
def test_raw_json_is_replaced_whole_not_merged_key_by_key(field: str) -> None:
    merged = merge_tool_call(BASE, {field: {"other": 1}})
    assert getattr(merged, field) == {"other": 1}


def test_the_rule_is_the_same_on_wire_dicts_and_on_events() -> None:
    wire = {"toolCallId": "t1", "title": "A", "content": [{"type": "content"}], "status": "pending"}
    merged = merge_tool_call(wire, {"title": None, "content": [], "status": "in_progress"})
    assert merged == {"toolCallId": "t1", "title": "A", "content": [], "status": "in_progress"}
    assert wire["status"] == "pending"  # the input is not changed
    started = ToolCallStarted(tool_call_id="t1", title="A", content=(_text("x"),))
    folded = merge_tool_call(started, {"title": "B", "tool_kind": None, "content": ()})
    assert folded == ToolCallStarted(tool_call_id="t1", title="B", content=())


def test_wire_updates_carry_only_what_is_present_and_not_null() -> None:
    update = ToolCallUpdate.model_validate(
        {"toolCallId": "t1", "title": None, "status": "completed", "content": []}
    )
    assert tool_call_changes(update) == {"status": "completed", "content": ()}
    repeated = ToolCallSessionUpdate(tool_call_id="t1", title="Again")
    assert tool_call_changes(repeated) == {"title": "Again"}  # defaults it did not send: absent
    cancelled = ToolCallUpdate.model_validate(
        {"toolCallId": "t1", "_meta": {"accord": {"status": "cancelled"}}}
    )
    assert tool_call_changes(cancelled) == {"status": "cancelled"}
    failed = ToolCallUpdate.model_validate(
        {"toolCallId": "t1", "status": "failed", "_meta": {"accord": {"status": "cancelled"}}}
    )
    assert tool_call_changes(failed) == {"status": "cancelled"}


def test_the_status_table_refuses_a_finished_call_and_a_second_start() -> None:
    tracker = ToolCallTracker()
    tracker.apply(ToolCallStarted(tool_call_id="t1", title="A"))
    with pytest.raises(LocalProtocolError, match="illegal tool-call transition"):
        tracker.apply(ToolCallStarted(tool_call_id="t1", title="A"))
    tracker.apply(ToolCallEnded(tool_call_id="t1", status="completed"))
    with pytest.raises(LocalProtocolError, match="while completed"):
        tracker.apply(ToolCallProgress(tool_call_id="t1", title="late"))
    assert TOOL_CALL_TRANSITIONS.step("completed", "update") is None
    assert TOOL_CALL_TRANSITIONS.triggers("pending") == {
        "update",
        "run",
        "complete",
        "fail",
        "cancel",
    }


def test_the_agent_and_the_client_end_with_the_same_snapshot() -> None:
    events: list[ToolCallStarted | ToolCallProgress | ToolCallEnded] = [
        ToolCallStarted(
            tool_call_id="t1", title="Edit a.py", tool_kind="edit", raw_input={"path": "a.py"}
        ),
        ToolCallProgress(tool_call_id="t1", status="in_progress", content=(_text("half"),)),
        ToolCallProgress(tool_call_id="t1", title="Edit a.py (2 hunks)"),
        ToolCallProgress(tool_call_id="t1", locations=(ToolCallLocation(path="/w/a.py"),)),
        ToolCallEnded(tool_call_id="t1", status="completed", content=(_text("done"),)),
    ]
    tracker = ToolCallTracker()
    view = SessionView("s")
    for event in events:
        tracker.apply(event)
        update = to_session_update(event)
        assert isinstance(update, ToolCallSessionUpdate | ToolCallUpdateSessionUpdate)
        view.apply(update)
    agent_side = tracker.get("t1")
    assert agent_side is not None
    assert view.tool_calls["t1"] == agent_side
    assert agent_side.content == (_text("done"),)
    assert agent_side.title == "Edit a.py (2 hunks)"


def _fold_wire(updates: list[dict[str, Any]]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for update in updates:
        fields = merge_tool_call(fields, update)
    return fields


def test_folding_wire_updates_in_order_is_later_wins() -> None:
    assert _fold_wire([{"title": "a", "content": [1]}, {"content": [2]}, {"title": None}]) == {
        "title": "a",
        "content": [2],
    }

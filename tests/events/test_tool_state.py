"""The tool-call lifecycle table: legal paths pass, everything else raises."""

from __future__ import annotations

import pytest

from accord.engines import TOOL_CALL_TRANSITIONS as TRANSITIONS
from accord.engines import (
    ToolCallEnded,
    ToolCallEvent,
    ToolCallProgress,
    ToolCallStarted,
    ToolCallTracker,
)
from accord.engines import tool_call_transition_diagram as transition_diagram
from accord.errors import LocalProtocolError

START = ToolCallStarted(tool_call_id="c", title="Read")
START_RUNNING = ToolCallStarted(tool_call_id="c", title="Read", status="in_progress")
UPDATE = ToolCallProgress(tool_call_id="c", title="Read more")
RUN = ToolCallProgress(tool_call_id="c", status="in_progress")
COMPLETE = ToolCallEnded(tool_call_id="c", status="completed")
FAIL = ToolCallEnded(tool_call_id="c", status="failed")


@pytest.mark.parametrize(
    ("events", "final"),
    [
        ([START, RUN, UPDATE, COMPLETE], "completed"),
        ([START, UPDATE, RUN, FAIL], "failed"),
        ([START, COMPLETE], "completed"),
        ([START, FAIL], "failed"),
        ([START_RUNNING, UPDATE, UPDATE, COMPLETE], "completed"),
        ([START, UPDATE], "pending"),
        ([START_RUNNING], "in_progress"),
    ],
)
def test_legal_paths(events: list[ToolCallEvent], final: str) -> None:
    tracker = ToolCallTracker()
    for event in events:
        tracker.apply(event)
    assert tracker.state("c") == final


@pytest.mark.parametrize(
    ("before", "illegal"),
    [
        ([], UPDATE),
        ([], RUN),
        ([], COMPLETE),
        ([START], START),
        ([START, RUN], RUN),
        ([START_RUNNING], RUN),
        ([START, COMPLETE], UPDATE),
        ([START, COMPLETE], COMPLETE),
        ([START, FAIL], RUN),
        ([START, FAIL], START),
    ],
)
def test_illegal_transitions_raise_and_change_nothing(
    before: list[ToolCallEvent], illegal: ToolCallEvent
) -> None:
    tracker = ToolCallTracker()
    for event in before:
        tracker.apply(event)
    state = tracker.state("c")
    with pytest.raises(LocalProtocolError, match="illegal tool-call transition"):
        tracker.apply(illegal)
    assert tracker.state("c") == state


def test_check_does_not_apply() -> None:
    tracker = ToolCallTracker()
    assert tracker.check(START) == "pending"
    assert tracker.state("c") is None


def test_unfinished_lists_live_calls_in_order() -> None:
    tracker = ToolCallTracker()
    for call_id in ("a", "b", "c"):
        tracker.apply(ToolCallStarted(tool_call_id=call_id, title=call_id))
    tracker.apply(ToolCallEnded(tool_call_id="b", status="completed"))
    assert tracker.unfinished() == ("a", "c")


def test_terminal_states_have_no_way_out() -> None:
    assert not [key for key in TRANSITIONS if key[0] in ("completed", "failed")]


def test_diagram_is_drawn_from_the_table() -> None:
    diagram = transition_diagram()
    assert diagram.startswith("stateDiagram-v2")
    for (state, trigger), target in TRANSITIONS.items():
        assert f"{state or '[*]'} --> {target}: {trigger}" in diagram

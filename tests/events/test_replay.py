"""Replay compaction: thousands of deltas come back as a handful of equal notifications."""

from __future__ import annotations

import random

from _events_samples import envelope
from helpers.fold import fold

from accord.engines import (
    Event,
    ModelCallEnded,
    ModelCallStarted,
    PermissionPending,
    TextChunk,
    ThinkingChunk,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    TurnCompleted,
    UserMessageChunk,
)
from accord.events import Envelope, compact_for_replay, to_session_update
from accord.schema import (
    Annotations,
    ContentToolCallContent,
    ImageContentBlock,
    TextContentBlock,
    ToolCallLocation,
)


def _chain(events: list[Event], agents: list[str] | None = None) -> list[Envelope]:
    return [
        envelope(event, seq, agent_id=agents[seq - 1] if agents else "root")
        for seq, event in enumerate(events, start=1)
    ]


def _updates(envelopes: list[Envelope]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for env in envelopes:
        update = to_session_update(env.event)
        if update is not None:
            out.append(update.to_wire())
    return out


def _text(message_id: str, text: str) -> TextChunk:
    return TextChunk(message_id=message_id, content=TextContentBlock(text=text))


def test_five_thousand_deltas_become_one_notification() -> None:
    rng = random.Random(7)
    deltas = ["".join(rng.choices("abcdef ", k=rng.randint(1, 8))) for _ in range(5000)]
    events: list[Event] = [
        UserMessageChunk(message_id="u", content=TextContentBlock(text="write a story")),
        ModelCallStarted(call_id="c", model="m"),
        *(_text("reply", delta) for delta in deltas),
        ModelCallEnded(call_id="c"),
        TurnCompleted(stop_reason="end_turn"),
    ]
    chain = _chain(events)
    replay = compact_for_replay(chain)
    updates = _updates(replay)
    assert len(updates) == 2
    assert updates[1] == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "".join(deltas)},
        "messageId": "reply",
    }
    assert fold(updates) == fold(_updates(chain))


def test_observe_events_are_dropped_and_seq_still_increases() -> None:
    events: list[Event] = [
        _text("a", "x"),
        ModelCallStarted(call_id="c", model="m"),
        _text("a", "y"),
        TurnCompleted(stop_reason="end_turn"),
    ]
    replay = compact_for_replay(_chain(events))
    assert [env.event.kind for env in replay] == ["text_chunk", "turn_completed"]
    assert [env.seq for env in replay] == [1, 4]
    first = replay[0].event
    assert isinstance(first, TextChunk)
    assert first.content == TextContentBlock(text="xy")


def test_only_same_message_same_kind_same_agent_plain_text_merges() -> None:
    annotated = TextContentBlock(text="!", annotations=Annotations(priority=1.0))
    events: list[Event] = [
        _text("a", "1"),
        _text("a", "2"),
        _text("b", "3"),  # another message
        ThinkingChunk(message_id="b", content=TextContentBlock(text="4")),  # another kind
        _text("b", "5"),
        _text("b", "6"),  # from a sub-agent, below
        TextChunk(message_id="b", content=annotated),  # annotated: kept apart
        TextChunk(message_id="b", content=ImageContentBlock(data="AA==", mime_type="image/png")),
        _text("b", "7"),
    ]
    agents = ["root"] * 5 + ["sub"] + ["root"] * 3
    chain = _chain(events, agents)
    replay = compact_for_replay(chain)
    assert len(replay) == 8
    assert replay[0].event == _text("a", "12")
    assert fold(_updates(replay)) == fold(_updates(chain))


def test_tool_progress_folds_into_its_start_within_a_run() -> None:
    loc = ToolCallLocation(path="/src/a.py", line=3)
    out = (ContentToolCallContent(content=TextContentBlock(text="ok")),)
    events: list[Event] = [
        ToolCallStarted(tool_call_id="a", title="Read a"),
        ToolCallStarted(tool_call_id="b", title="Read b"),
        ToolCallProgress(tool_call_id="a", status="in_progress"),
        ToolCallProgress(tool_call_id="b", status="in_progress", locations=(loc,)),
        ToolCallProgress(tool_call_id="a", title="Reading a", content=out),
        ToolCallEnded(tool_call_id="a", status="completed"),
        ToolCallProgress(tool_call_id="b", title="still b"),
    ]
    chain = _chain(events)
    replay = compact_for_replay(chain)
    assert [env.event.kind for env in replay] == [
        "tool_call_started",
        "tool_call_started",
        "tool_call_ended",
    ]
    assert replay[0].event == ToolCallStarted(
        tool_call_id="a", title="Reading a", status="in_progress", content=out
    )
    assert replay[1].event == ToolCallStarted(
        tool_call_id="b", title="still b", status="in_progress", locations=(loc,)
    )
    assert fold(_updates(replay)) == fold(_updates(chain))


def test_other_events_end_a_tool_run() -> None:
    events: list[Event] = [
        ToolCallStarted(tool_call_id="a", title="Edit"),
        PermissionPending(tool_call_id="a", options=()),
        ToolCallProgress(tool_call_id="a", status="in_progress"),
        ToolCallProgress(tool_call_id="a", title="Editing"),
        _text("m", "done"),
        ToolCallEnded(tool_call_id="a", status="completed"),
    ]
    chain = _chain(events)
    replay = compact_for_replay(chain)
    assert [env.event.kind for env in replay] == [
        "tool_call_started",
        "permission_pending",
        "tool_call_progress",
        "text_chunk",
        "tool_call_ended",
    ]
    assert replay[2].event == ToolCallProgress(
        tool_call_id="a", status="in_progress", title="Editing"
    )
    assert fold(_updates(replay)) == fold(_updates(chain))


def test_compaction_is_pure() -> None:
    chain = _chain([_text("a", "1"), _text("a", "2")])
    before = list(chain)
    compact_for_replay(chain)
    assert chain == before
    assert compact_for_replay([]) == []

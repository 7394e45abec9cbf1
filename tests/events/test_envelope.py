"""Envelopes and their JSON form: lossless for every event kind, strict on bad input."""

from __future__ import annotations

import orjson
import pytest

from accord.events import (
    ENVELOPE_FORMAT,
    Envelope,
    Event,
    TextChunk,
    envelope_from_json,
    envelope_to_json,
    event_from_json,
    event_to_json,
)
from accord.schema import TextContentBlock

from ._samples import envelope, sample_events

SAMPLES = sample_events()


def _id(event: Event) -> str:
    return event.kind


@pytest.mark.parametrize("event", SAMPLES, ids=_id)
def test_event_round_trip(event: Event) -> None:
    data = event_to_json(event)
    back = event_from_json(data)
    assert back == event
    assert type(back) is type(event)
    assert event_to_json(back) == data


@pytest.mark.parametrize("event", SAMPLES, ids=_id)
def test_envelope_round_trip(event: Event) -> None:
    original = Envelope(
        session_id="sess",
        session_seq=42,
        session_epoch=3,
        turn_id=None if event.layer == "observe" else "turn-1",
        agent_id="sub-7",
        event=event,
    )
    data = envelope_to_json(original)
    back = envelope_from_json(data)
    assert back == original
    assert back.layer == event.layer
    assert envelope_to_json(back) == data


def test_json_layout_is_documented_one() -> None:
    env = envelope(TextChunk(message_id="m", content=TextContentBlock(text="hi")), seq=5)
    assert orjson.loads(envelope_to_json(env)) == {
        "format": ENVELOPE_FORMAT,
        "sessionId": "s-1",
        "seq": 5,
        "epoch": 0,
        "turnId": "t-1",
        "agentId": "root",
        "event": {
            "kind": "text_chunk",
            "message_id": "m",
            "content": {"type": "text", "text": "hi"},
        },
    }


def test_envelope_has_no_default_seq_or_epoch() -> None:
    event = TextChunk(message_id="m", content=TextContentBlock(text="hi"))
    with pytest.raises(TypeError):
        Envelope(session_id="s", turn_id=None, agent_id="root", event=event)  # type: ignore[call-arg]


@pytest.mark.parametrize(("seq", "epoch"), [(0, 0), (-1, 0), (1, -1)])
def test_envelope_refuses_impossible_positions(seq: int, epoch: int) -> None:
    event = TextChunk(message_id="m", content=TextContentBlock(text="hi"))
    with pytest.raises(ValueError, match="session_seq must be"):
        Envelope(
            session_id="s",
            session_seq=seq,
            session_epoch=epoch,
            turn_id=None,
            agent_id="root",
            event=event,
        )


def test_layer_comes_from_the_event() -> None:
    for event in SAMPLES:
        assert envelope(event).layer == event.layer


def _good() -> dict[str, object]:
    env = envelope(TextChunk(message_id="m", content=TextContentBlock(text="hi")))
    return orjson.loads(envelope_to_json(env))


@pytest.mark.parametrize(
    "change",
    [
        {"format": 2},
        {"seq": "1"},
        {"seq": True},
        {"epoch": None},
        {"seq": 0},
        {"sessionId": 5},
        {"turnId": 7},
        {"agentId": None},
        {"event": {"kind": "no_such_kind"}},
        {"event": {"kind": "text_chunk", "message_id": "m"}},
    ],
)
def test_bad_envelopes_are_refused(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError subclass is the contract
        envelope_from_json(orjson.dumps({**_good(), **change}))


@pytest.mark.parametrize("data", [b"[]", b"not json", b'"text"'])
def test_non_objects_are_refused(data: bytes) -> None:
    with pytest.raises(ValueError):  # noqa: PT011
        envelope_from_json(data)

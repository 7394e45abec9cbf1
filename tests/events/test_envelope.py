"""Envelopes: stamped once, the store's record, lossless for every kind, strict on bad input."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import orjson
import pytest
from _events_samples import envelope, sample_events

from accord.engines import Event, TextChunk
from accord.events import envelope_from_stored, event_from_json, event_to_json, stamp
from accord.schema import TextContentBlock
from accord.store import StoredEvent

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
def test_a_stamped_envelope_is_the_stores_record_and_reads_back_equal(event: Event) -> None:
    original = stamp(
        event,
        session_id="sess",
        seq=42,
        epoch=3,
        turn_id=None if event.layer == "observe" else "turn-1",
        agent_id="sub-7",
    )
    assert isinstance(original, StoredEvent)
    assert (original.kind, original.layer) == (event.kind, event.layer)
    assert original.payload == event_to_json(event)
    plain = StoredEvent(
        session_id=original.session_id,
        seq=original.seq,
        epoch=original.epoch,
        turn_id=original.turn_id,
        agent_id=original.agent_id,
        kind=original.kind,
        layer=original.layer,
        payload=original.payload,
        created_at=original.created_at,
    )
    back = envelope_from_stored(plain)
    assert back == original
    assert back.data is None and original.data == orjson.loads(original.payload)


def test_payload_layout_is_the_documented_one() -> None:
    env = envelope(TextChunk(message_id="m", content=TextContentBlock(text="hi")), seq=5)
    assert (env.session_id, env.seq, env.epoch, env.turn_id, env.agent_id) == (
        "s-1",
        5,
        0,
        "t-1",
        "root",
    )
    assert orjson.loads(env.payload) == {
        "kind": "text_chunk",
        "message_id": "m",
        "content": {"type": "text", "text": "hi"},
    }


def test_envelope_has_no_default_seq_or_epoch() -> None:
    event = TextChunk(message_id="m", content=TextContentBlock(text="hi"))
    with pytest.raises(TypeError):
        stamp(event, session_id="s", turn_id=None, agent_id="root")  # type: ignore[call-arg]


@pytest.mark.parametrize(("seq", "epoch"), [(0, 0), (-1, 0), (1, -1)])
def test_envelope_refuses_impossible_positions(seq: int, epoch: int) -> None:
    event = TextChunk(message_id="m", content=TextContentBlock(text="hi"))
    with pytest.raises(ValueError, match="seq must be"):
        stamp(event, session_id="s", seq=seq, epoch=epoch, turn_id=None, agent_id="root")


def test_an_envelope_whose_kind_disagrees_with_its_event_is_refused() -> None:
    env = envelope(TextChunk(message_id="m", content=TextContentBlock(text="hi")))
    with pytest.raises(ValueError, match="kind"):
        dataclasses.replace(env, kind="thinking_chunk")


def test_layer_comes_from_the_event() -> None:
    for event in SAMPLES:
        assert envelope(event).layer == event.layer


@pytest.mark.parametrize(
    "payload",
    [
        b"[]",
        b"not json",
        b'"text"',
        orjson.dumps({"kind": "no_such_kind"}),
        orjson.dumps({"kind": "text_chunk", "message_id": "m"}),
    ],
)
def test_bad_payloads_are_refused(payload: bytes) -> None:
    stored = StoredEvent(
        session_id="s",
        seq=1,
        epoch=0,
        turn_id=None,
        agent_id="root",
        kind="text_chunk",
        layer="render",
        payload=payload,
        created_at=datetime.now(UTC),
    )
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError subclass is the contract
        envelope_from_stored(stored)

"""``session/load``'s replay merges runs of plain-text chunks straight from their stored JSON;
what it sends must be exactly what decoding every event and compacting would send."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from accord.agent._restore import Replay, RestoredState
from accord.engines import (
    EngineCapabilities,
    Event,
    ModelCallStarted,
    TextChunk,
    ThinkingChunk,
    ToolCallTracker,
    UserMessageChunk,
)
from accord.events import Envelope, compact_for_replay, envelope_from_stored, event_to_json
from accord.schema import Annotations, TextContentBlock
from accord.store import MemorySessionStore, SessionRecord, StoredEvent

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _random_event(rng: random.Random) -> tuple[Event, bytes | None]:
    """An event, and sometimes a hand-written payload for it that is not the plain shape."""
    message_id = rng.choice(["m1", "m2"])
    chunk = rng.choice([TextChunk, ThinkingChunk, UserMessageChunk])
    roll = rng.random()
    if roll < 0.05:
        return ModelCallStarted(call_id="c", model="m"), None
    if roll < 0.1:
        annotated = TextContentBlock(text="a", annotations=Annotations(priority=0.5))
        return chunk(message_id=message_id, content=annotated), None
    if roll < 0.15:  # decodes to a plain chunk, but its payload has one more key
        event = chunk(message_id=message_id, content=TextContentBlock(text="n"))
        data: dict[str, Any] = orjson.loads(event_to_json(event))
        data["content"]["annotations"] = None
        return event, orjson.dumps(data)
    return chunk(message_id=message_id, content=TextContentBlock(text=rng.choice("xyz"))), None


def _chain(seed: int, length: int) -> list[StoredEvent]:
    rng = random.Random(seed)
    chain: list[StoredEvent] = []
    for seq in range(1, length + 1):
        event, payload = _random_event(rng)
        chain.append(
            StoredEvent(
                session_id="s",
                seq=seq,
                epoch=rng.choice([0, 1]),
                turn_id=rng.choice(["t1", "t1", "t1", "t2", None]),
                agent_id=rng.choice(["root", "root", "root", "sub"]),
                kind=event.kind,
                layer=event.layer,
                payload=payload if payload is not None else event_to_json(event),
                created_at=NOW,
            )
        )
    return chain


@pytest.mark.parametrize("seed", range(20))
async def test_replay_sends_what_decoding_and_compacting_every_event_sends(seed: int) -> None:
    chain = _chain(seed, 300)
    record = SessionRecord(session_id="s", cwd="/tmp", created_at=NOW, updated_at=NOW)
    async with MemorySessionStore() as store:
        await store.create_session(record)
        await store.append_events(chain)
        restored = RestoredState(record, EngineCapabilities())
        replay = Replay(store, "s", restored=restored, tracker=ToolCallTracker())
        sent: list[tuple[Envelope, tuple[int, int]]] = [pair async for pair in replay]
        count = replay.read
    expected = compact_for_replay(
        envelope_from_stored(stored) for stored in chain if stored.layer != "observe"
    )
    assert count == len(chain)
    assert [(e.seq, e.event, e.payload) for e, _ in sent] == [
        (e.seq, e.event, e.payload) for e in expected
    ]
    # Each cursor is the last stored event the envelope stands for.
    seqs = [e.seq for e in expected]
    covered = [next_seq - 1 for next_seq in seqs[1:]] + [chain[-1].seq]
    assert [cursor for _, cursor in sent] == [(chain[seq - 1].epoch, seq) for seq in covered]

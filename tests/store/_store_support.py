"""Builders shared by the store tests (records, events, realistic payloads)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson

from accord.store import SessionRecord, StoredEvent

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """A fixed, timezone-aware instant ``seconds`` after ``T0``."""
    return T0 + timedelta(seconds=seconds)


def record(
    session_id: str,
    *,
    cwd: str = "/work/project",
    updated: float = 0,
    title: str | None = None,
) -> SessionRecord:
    """A session record created at ``T0`` and last updated ``updated`` seconds later."""
    return SessionRecord(
        session_id=session_id,
        cwd=cwd,
        created_at=T0,
        updated_at=at(updated),
        title=title,
    )


def delta_payload(seq: int, text: str = "some streamed words ") -> bytes:
    """A realistic ~150-byte serialized message delta."""
    return orjson.dumps(
        {
            "format": 1,
            "event": {"kind": "text_chunk", "message_id": "0196-msg", "index": 0},
            "content": {"type": "text", "text": f"{text}{seq}"},
        }
    )


def events(
    session_id: str,
    first: int,
    count: int,
    *,
    turn_id: str | None = "turn-1",
    when: float = 1,
) -> list[StoredEvent]:
    """``count`` consecutive message deltas for ``session_id`` starting at seq ``first``."""
    return [
        StoredEvent(
            session_id=session_id,
            seq=seq,
            epoch=0,
            turn_id=turn_id,
            agent_id="root",
            kind="text_chunk",
            layer="transcript",
            payload=delta_payload(seq),
            created_at=at(when),
        )
        for seq in range(first, first + count)
    ]

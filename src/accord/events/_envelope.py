"""Envelopes: an event stamped with its place in the session, in the form the store keeps.

An :class:`Envelope` is built once, when the runtime stamps an event (:func:`stamp`): that is
when the session's sequence number and epoch are known, so neither has a default. It *is* the
store's record (:class:`~accord.store.StoredEvent`: session, ``seq``, ``epoch``, turn, agent,
kind, layer, the JSON ``payload``, the time) with the decoded ``event`` beside it, so the one
stamped object is appended to the store, handed back by the group-commit writer once durable,
and fanned out to the clients without being copied or re-encoded.

The payload is the event's JSON object (``event_to_json``); ``data`` keeps that object before
it became bytes, so the ``session/update`` of a chunk reuses the content's wire form instead
of dumping the content model a second time. Layout::

    {"kind": "text_chunk", "message_id": "...", "content": {"type": "text", "text": "..."}}

Event fields keep their Python names; schema payloads inside them are in wire form
(``to_wire()``), so a stored event reads like the ACP it came from. The codec is lossless for
every event kind (a test round-trips each one).

This module sits on the event classes, :mod:`accord.schema` and the store's record type; the
agent runtime stamps envelopes, the mapping and the replay read them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, final

import orjson
from pydantic import Field, JsonValue, TypeAdapter

from ..engines import Event, StateSnapshot
from ..schema import WireModel
from ..store import StoredEvent
from ._state_chain import STATE_APPENDED, appended_part

__all__ = (
    "Envelope",
    "envelope_from_stored",
    "event_from_json",
    "event_to_json",
    "restamp",
    "stamp",
)

_EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Annotated[Event, Field(discriminator="kind")])


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope(StoredEvent):
    """One stamped event: the store's record of it plus the event itself.

    Attributes (beyond :class:`~accord.store.StoredEvent`'s ``session_id``, ``seq``,
    ``epoch``, ``turn_id``, ``agent_id``, ``kind``, ``layer``, ``payload``, ``created_at``):
        event: The event itself (``payload`` is its JSON).
        data: The JSON object ``payload`` encodes, when the envelope was stamped in this
            process (``None`` when it was read back from a store); not compared.

    ``seq`` is the position in the session's chain: strictly increasing per session (across
    epochs), starting at 1; ``epoch`` is bumped on every load or resume, and an event of an
    older epoch is never delivered into a newer one; ``turn_id`` is ``None`` outside a turn.
    """

    event: Event
    data: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Refuse positions that cannot occur: ``seq`` < 1 or ``epoch`` < 0.

        Raises:
            ValueError: a position is out of range, ``created_at`` is naive, or ``kind``
                is not the event's.
        """
        if self.seq < 1 or self.epoch < 0:
            raise ValueError(f"seq must be >= 1 and epoch >= 0, got {self.seq} and {self.epoch}")
        if self.created_at.tzinfo is None:
            raise ValueError(f"created_at must be timezone-aware, got {self.created_at!r}")
        if self.kind != self.event.kind and not (
            self.kind == STATE_APPENDED and isinstance(self.event, StateSnapshot)
        ):
            raise ValueError(f"kind {self.kind!r} is not the event's ({self.event.kind!r})")


def stamp(
    event: Event,
    *,
    session_id: str,
    seq: int,
    epoch: int,
    turn_id: str | None,
    agent_id: str,
    created_at: datetime | None = None,
    state_before: JsonValue = None,
) -> Envelope:
    """Stamp ``event`` into its envelope, serializing it once (payload and ``data``).

    A ``StateSnapshot`` in its appended form, or a whole one that appends to
    ``state_before`` (the state the session's chain stored last, if any), is stored in the
    compact ``state_appended`` form (:mod:`._state_chain`); its envelope still carries the
    snapshot as ``event``.

    Raises:
        ValueError: ``seq`` < 1 or ``epoch`` < 0.
    """
    kind = event.kind
    part = None
    if isinstance(event, StateSnapshot):
        if event.items is not None:
            part = {"path": list(event.path), "base": event.base, "items": list(event.items)}
        elif state_before is not None:
            part = appended_part(state_before, event.state)
    if part is not None:
        kind = STATE_APPENDED
        data = {"kind": STATE_APPENDED, **part}
    else:
        data = _event_dict(event)
    return Envelope(
        session_id=session_id,
        seq=seq,
        epoch=epoch,
        turn_id=turn_id,
        agent_id=agent_id,
        kind=kind,
        layer=event.layer,
        payload=orjson.dumps(data),
        created_at=created_at if created_at is not None else datetime.now(UTC),
        event=event,
        data=data,
    )


def restamp(envelope: Envelope, event: Event) -> Envelope:
    """The same header around another event (replay compaction merges events)."""
    data = _event_dict(event)
    return dataclasses.replace(
        envelope, event=event, kind=event.kind, payload=orjson.dumps(data), data=data
    )


def envelope_from_stored(stored: StoredEvent, *, state: JsonValue = None) -> Envelope:
    """Rebuild the envelope a stored event was made from (itself, if it is one).

    A ``state_appended`` event holds only what it appends to the state before it: its
    envelope's ``StateSnapshot`` carries ``state``, the whole state once the caller folded it
    (:func:`~._state_chain.apply_appended`); without it, ``None`` (enough to deliver the
    event, which has no ``session/update``; never enough to restore from).

    Raises:
        ValueError: the payload is not a valid event.
    """
    if isinstance(stored, Envelope):
        return stored
    if stored.kind == STATE_APPENDED:
        event: Event = StateSnapshot(state=state)
    else:
        event = event_from_json(stored.payload)
    return Envelope(
        session_id=stored.session_id,
        seq=stored.seq,
        epoch=stored.epoch,
        turn_id=stored.turn_id,
        agent_id=stored.agent_id,
        kind=stored.kind,
        layer=stored.layer,
        payload=stored.payload,
        created_at=stored.created_at,
        event=event,
    )


def _encode(value: object) -> Any:
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, tuple):
        items: tuple[object, ...] = value  # pyright: ignore[reportUnknownVariableType]
        return [_encode(item) for item in items]
    return value


#: Field names per event class, in declaration order (``dataclasses.fields`` rebuilds its
#: tuple on every call, a noticeable cost when a turn streams thousands of events).
#: A whole StateSnapshot is stored as its state alone (the appended form has its own).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {StateSnapshot: ("kind", "state")}


def _event_dict(event: Event) -> dict[str, Any]:
    names = _FIELD_NAMES.get(type(event))
    if names is None:
        names = _FIELD_NAMES[type(event)] = tuple(f.name for f in dataclasses.fields(event))
    return {name: _encode(getattr(event, name)) for name in names}


def event_to_json(event: Event) -> bytes:
    """Serialize one event (without envelope) to JSON bytes; the store's ``payload``."""
    return orjson.dumps(_event_dict(event))


def event_from_json(data: bytes | str) -> Event:
    """Parse what :func:`event_to_json` wrote.

    Raises:
        ValueError: not JSON, or not a valid event (a pydantic ``ValidationError`` is a
            ``ValueError``).
    """
    return _EVENT_ADAPTER.validate_python(orjson.loads(data))

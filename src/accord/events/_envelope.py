"""Envelopes (an event plus where and when in the session it happened) and their JSON form.

An :class:`Envelope` is built only when the runtime publishes an event: that is when the
session's sequence number and epoch are known, so neither has a default. The JSON codec is the
store's format: lossless for every event kind (a test round-trips each one).

JSON layout (``ENVELOPE_FORMAT`` = 1)::

    {"format": 1, "sessionId": "...", "seq": 7, "epoch": 0, "turnId": "...", "agentId": "root",
     "event": {"kind": "text_chunk", "message_id": "...", "content": {"type": "text", ...}}}

Event fields keep their Python names; schema payloads inside them are in wire form
(``to_wire()``), so a stored event reads like the ACP it came from.

This module sits on the event classes and :mod:`accord.schema`; the store and the sinks above
it move envelopes around without looking inside events.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Any, Final, TypeVar, final

import orjson
from pydantic import Field, JsonValue, TypeAdapter

from ..schema import WireModel
from ._events import Event, Layer

__all__ = (
    "ENVELOPE_FORMAT",
    "Envelope",
    "SubAgentEvent",
    "envelope_from_json",
    "envelope_to_json",
    "event_from_json",
    "event_to_json",
)

_T = TypeVar("_T")

ENVELOPE_FORMAT: Final = 1
"""Version of the envelope JSON layout; bump it (and keep a reader) if the layout changes."""

_EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Annotated[Event, Field(discriminator="kind")])


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """One published event with its place in the session.

    Attributes:
        session_id: The ACP session id.
        session_seq: Position in the session's chain; strictly increasing per session (across
            epochs), starting at 1. There is no default: only the publisher assigns it.
        session_epoch: Bumped on every load or resume; an event of an older epoch is never
            delivered into a newer one.
        turn_id: The prompt turn (UUID v7) the event belongs to; ``None`` outside any turn
            (e.g. a mode change while the session is idle).
        agent_id: Who produced it: :data:`ROOT_AGENT_ID` or a sub-agent's id.
        event: The event itself.
    """

    session_id: str
    session_seq: int
    session_epoch: int
    turn_id: str | None
    agent_id: str
    event: Event

    def __post_init__(self) -> None:
        """Refuse positions that cannot occur: ``session_seq`` < 1 or ``session_epoch`` < 0.

        Raises:
            ValueError: a position is out of range.
        """
        if self.session_seq < 1 or self.session_epoch < 0:
            raise ValueError(
                f"session_seq must be >= 1 and session_epoch >= 0, "
                f"got {self.session_seq} and {self.session_epoch}"
            )

    @property
    def layer(self) -> Layer:
        """The event's layer (fixed by its class, so it cannot disagree with the event)."""
        return self.event.layer


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubAgentEvent:
    """An event an engine yields on behalf of one of its sub-agents.

    The runtime publishes ``event`` with ``agent_id`` as the envelope's agent. Announce the
    sub-agent first with :class:`SubAgentStarted` (from the parent) so observers can nest it.
    """

    agent_id: str
    event: Event


def _encode(value: object) -> Any:
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, tuple):
        items: tuple[object, ...] = value  # pyright: ignore[reportUnknownVariableType]
        return [_encode(item) for item in items]
    return value


#: Field names per event class, in declaration order (``dataclasses.fields`` rebuilds its
#: tuple on every call, a noticeable cost when a turn streams thousands of events).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


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


def envelope_to_json(envelope: Envelope) -> bytes:
    """Serialize an envelope to JSON bytes (the layout in the module docstring)."""
    return orjson.dumps(
        {
            "format": ENVELOPE_FORMAT,
            "sessionId": envelope.session_id,
            "seq": envelope.session_seq,
            "epoch": envelope.session_epoch,
            "turnId": envelope.turn_id,
            "agentId": envelope.agent_id,
            "event": _event_dict(envelope.event),
        }
    )


def envelope_from_json(data: bytes | str) -> Envelope:
    """Parse what :func:`envelope_to_json` wrote.

    Raises:
        ValueError: not JSON, an unknown format, a missing or mistyped header field, or an
            invalid event.
    """
    raw: JsonValue = orjson.loads(data)
    if not isinstance(raw, dict):
        raise ValueError("an envelope must be a JSON object")
    if raw.get("format") != ENVELOPE_FORMAT:
        raise ValueError(f"unknown envelope format {raw.get('format')!r}")
    turn_id = raw.get("turnId")
    if turn_id is not None and not isinstance(turn_id, str):
        raise ValueError("turnId must be a string or null")
    return Envelope(
        session_id=_field(raw, "sessionId", str),
        session_seq=_field(raw, "seq", int),
        session_epoch=_field(raw, "epoch", int),
        turn_id=turn_id,
        agent_id=_field(raw, "agentId", str),
        event=_EVENT_ADAPTER.validate_python(raw.get("event")),
    )


def _field(raw: dict[str, JsonValue], name: str, kind: type[_T]) -> _T:
    value = raw.get(name)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ValueError(f"{name} must be a {kind.__name__}")
    return value

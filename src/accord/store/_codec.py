"""Encodings every store shares: timestamps, JSON columns, session rows, ``update_session``'s
arguments, list cursors, batch checks.

Keeping these in one place is what makes the stores behave alike: memory, SQLite and
PostgreSQL order sessions by the same integer timestamp, decode a session row the same way,
take the same fields from an ``update_session`` call, accept and reject the same cursors, and
refuse the same malformed batches. Above: the store implementations. Below: ``_protocol``'s
``Unchanged``, ``_records``, ``_errors``, orjson.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import orjson

from ._errors import EventOrderError, InvalidCursor
from ._protocol import UNCHANGED, Unchanged
from ._records import JsonObject, SessionRecord, SessionSummary, StoredEvent

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
#: First element of every cursor; bump it if the cursor's content ever changes.
_CURSOR_TAG = "s1"


def to_micros(value: datetime) -> int:
    """Return a timezone-aware datetime as integer microseconds since the Unix epoch (exact)."""
    return (value - _EPOCH) // _MICROSECOND


def from_micros(micros: int) -> datetime:
    """Return the UTC datetime for integer microseconds since the Unix epoch (exact)."""
    return _EPOCH + timedelta(0, 0, micros)  # positional: twice as fast as microseconds=


def dump_json(value: Any) -> bytes:
    """Serialize a JSON value; raises ``TypeError`` for anything JSON cannot hold."""
    return orjson.dumps(value)


def copy_json(value: Any) -> Any:
    """Return a deep copy of a JSON value through its serialized form (validates it too)."""
    return orjson.loads(orjson.dumps(value))


#: The columns of a session row, in the order :func:`record_from_row` reads them; JSON columns
#: are text or bytes, timestamps integer microseconds since the epoch.
SESSION_COLUMNS: Final = (
    "session_id",
    "cwd",
    "additional_directories",
    "mcp_servers",
    "title",
    "created_at",
    "updated_at",
    "epoch",
    "last_seq",
    "state",
    "archived",
    "title_by_client",
)
#: The columns of a listing row, in the order :func:`summary_from_row` reads them.
SUMMARY_COLUMNS: Final = (
    "session_id",
    "cwd",
    "additional_directories",
    "title",
    "created_at",
    "updated_at",
    "last_seq",
    "archived",
)
#: The session columns that hold JSON.
JSON_COLUMNS: Final = frozenset({"additional_directories", "mcp_servers", "state"})


def record_from_row(row: Sequence[Any]) -> SessionRecord:
    """Decode a session row (the :data:`SESSION_COLUMNS`, in order)."""
    return SessionRecord(
        session_id=row[0],
        cwd=row[1],
        additional_directories=tuple(orjson.loads(row[2])),
        mcp_servers=tuple(orjson.loads(row[3])),
        title=row[4],
        created_at=from_micros(row[5]),
        updated_at=from_micros(row[6]),
        epoch=row[7],
        last_seq=row[8],
        state=orjson.loads(row[9]),
        archived=bool(row[10]),
        title_by_client=bool(row[11]),
    )


def summary_from_row(row: Sequence[Any]) -> SessionSummary:
    """Decode a listing row (the :data:`SUMMARY_COLUMNS`, in order)."""
    return SessionSummary(
        session_id=row[0],
        cwd=row[1],
        additional_directories=tuple(orjson.loads(row[2])),
        title=row[3],
        created_at=from_micros(row[4]),
        updated_at=from_micros(row[5]),
        last_seq=row[6],
        archived=bool(row[7]),
    )


def given_fields(
    *,
    cwd: str | Unchanged,
    additional_directories: Sequence[str] | Unchanged,
    mcp_servers: Sequence[JsonObject] | Unchanged,
    title: str | Unchanged | None,
    state: JsonObject | Unchanged,
    epoch: int | Unchanged,
    updated_at: datetime | Unchanged,
    archived: bool | Unchanged = UNCHANGED,
    title_by_client: bool | Unchanged = UNCHANGED,
) -> dict[str, Any]:
    """The fields an ``update_session`` call changes, as :class:`SessionRecord` values
    (sequences as tuples); the ``UNCHANGED`` ones are left out."""
    fields: dict[str, Any] = {}
    if not isinstance(cwd, Unchanged):
        fields["cwd"] = cwd
    if not isinstance(additional_directories, Unchanged):
        fields["additional_directories"] = tuple(additional_directories)
    if not isinstance(mcp_servers, Unchanged):
        fields["mcp_servers"] = tuple(mcp_servers)
    if not isinstance(title, Unchanged):
        fields["title"] = title
    if not isinstance(state, Unchanged):
        fields["state"] = state
    if not isinstance(epoch, Unchanged):
        fields["epoch"] = epoch
    if not isinstance(updated_at, Unchanged):
        fields["updated_at"] = updated_at
    if not isinstance(archived, Unchanged):
        fields["archived"] = archived
    if not isinstance(title_by_client, Unchanged):
        fields["title_by_client"] = title_by_client
    return fields


def encode_fields(fields: dict[str, Any]) -> dict[str, object]:
    """Column -> stored value for :func:`given_fields`: JSON columns serialized (bytes),
    timestamps as integer microseconds.

    Raises:
        TypeError: a JSON field does not serialize.
    """
    encoded: dict[str, object] = {}
    for column, value in fields.items():
        if column in JSON_COLUMNS:
            encoded[column] = dump_json(value)  # orjson writes tuples as arrays
        elif isinstance(value, datetime):
            encoded[column] = to_micros(value)
        else:
            encoded[column] = value
    return encoded


def encode_cursor(updated_at: int, session_id: str) -> str:
    """Return the opaque cursor for "the sessions after this sort key"."""
    raw = orjson.dumps([_CURSOR_TAG, updated_at, session_id])
    return base64.urlsafe_b64encode(raw).decode("ascii")


def decode_cursor(cursor: str) -> tuple[int, str]:
    """Return the sort key ``(updated_at_micros, session_id)`` inside a cursor.

    Raises:
        InvalidCursor: the string is not a cursor this module encoded.
    """
    try:
        raw = base64.b64decode(cursor.encode("ascii"), altchars=b"-_", validate=True)
        decoded: Any = orjson.loads(raw)
    except (ValueError, binascii.Error) as exc:
        raise InvalidCursor(f"invalid session list cursor: {cursor!r}") from exc
    match decoded:
        case [str(tag), int(updated_at), str(session_id)] if tag == _CURSOR_TAG and not isinstance(
            updated_at, bool
        ):
            return updated_at, session_id
        case _:
            raise InvalidCursor(f"invalid session list cursor: {cursor!r}")


def group_events(events: Iterable[StoredEvent]) -> dict[str, list[StoredEvent]]:
    """Split a batch by session (first-appearance order), checking seqs increase in each.

    Raises:
        EventOrderError: a session's seqs in the batch are not strictly increasing.
    """
    groups: dict[str, list[StoredEvent]] = {}
    for event in events:
        group = groups.get(event.session_id)
        if group is None:
            groups[event.session_id] = [event]
        elif event.seq <= group[-1].seq:
            raise EventOrderError(
                f"session {event.session_id!r}: seq {event.seq} follows seq {group[-1].seq}"
                " in the same batch; seqs must strictly increase"
            )
        else:
            group.append(event)
    return groups


def check_follows(session_id: str, last_seq: int, group: Sequence[StoredEvent]) -> None:
    """Check that the first event of ``group`` comes after the stored ``last_seq``.

    Raises:
        EventOrderError: it does not.
    """
    if group[0].seq <= last_seq:
        raise EventOrderError(
            f"session {session_id!r}: seq {group[0].seq} is not after the stored"
            f" last_seq {last_seq}"
        )


def check_lease(lease_seconds: float) -> None:
    """Refuse a lease that is not a positive number of seconds.

    Raises:
        ValueError: it is zero, negative or not a number.
    """
    if not lease_seconds > 0:
        raise ValueError(f"lease_seconds must be positive, got {lease_seconds!r}")

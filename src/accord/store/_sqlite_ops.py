"""The SQLite store's operations: plain synchronous functions on one ``sqlite3`` connection.

Each function is one public store operation, run whole in a worker thread by
``SqliteSessionStore`` (above), which owns the connection and the threading. Writes are one
``BEGIN IMMEDIATE`` transaction each; multi-statement reads run in one read transaction, so
they see one snapshot even while another process writes. Label numbering (see ``_schema``)
lives here: turn ids, agent ids, kinds and layers go in as per-session numbers and come back
as strings. Below: ``sqlite3``, ``_codec``, ``_records``, ``_errors``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Generator, Iterable, Sequence
from typing import Any, Final

import orjson

from . import _codec as codec
from ._codec import check_follows, encode_cursor, from_micros, group_events, to_micros
from ._codec import record_from_row as _record
from ._codec import summary_from_row as _summary
from ._errors import SessionExists, UnknownSession
from ._records import SessionClaim, SessionPage, SessionRecord, StoredEvent

#: Bound parameters per ``IN (...)`` list; SQLite builds before 3.32 allow 999 in a statement.
_IN_CHUNK: Final = 500

SESSION_COLUMNS: Final = ", ".join(codec.SESSION_COLUMNS)
_SUMMARY_COLUMNS: Final = ", ".join(codec.SUMMARY_COLUMNS)
_INSERT_EVENT = (
    "INSERT INTO events (sid, seq, epoch, turn, agent, kind, layer, payload, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_EVENTS = (
    "SELECT seq, epoch, turn, agent, kind, layer, payload, created_at FROM events"
    " WHERE sid = ? AND seq > ? ORDER BY seq LIMIT ?"
)


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Generator[None]:
    """One transaction. Writes use ``BEGIN IMMEDIATE``: it takes the write lock up front, so
    the busy timeout applies and two writers never deadlock upgrading a read lock."""
    db.execute(begin)
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start : start + _IN_CHUNK]


def _sid(db: sqlite3.Connection, session_id: str) -> int | None:
    row = db.execute("SELECT sid FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return None if row is None else int(row[0])


def select_record(db: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    """Return the stored session, or ``None``."""
    row = db.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else _record(row)


def _insert_session(db: sqlite3.Connection, record: SessionRecord) -> int:
    if _sid(db, record.session_id) is not None:
        raise SessionExists(f"session {record.session_id!r} is already stored")
    cursor = db.execute(
        f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            record.session_id,
            record.cwd,
            orjson.dumps(list(record.additional_directories)),
            orjson.dumps(list(record.mcp_servers)),
            record.title,
            to_micros(record.created_at),
            to_micros(record.updated_at),
            record.epoch,
            record.last_seq,
            orjson.dumps(record.state),
            int(record.archived),
            int(record.title_by_client),
        ),
    )
    sid = cursor.lastrowid
    assert sid is not None
    return sid


def create(db: sqlite3.Connection, record: SessionRecord) -> None:
    """Store a new session."""
    with _transaction(db):
        _insert_session(db, record)


def update(db: sqlite3.Connection, session_id: str, changes: dict[str, object]) -> SessionRecord:
    """Set ``changes`` (column -> encoded value) and return the updated session."""
    with _transaction(db):
        if changes:
            assignments = ", ".join(f"{column} = ?" for column in changes)
            db.execute(
                f"UPDATE sessions SET {assignments} WHERE session_id = ?",
                (*changes.values(), session_id),
            )
        record = select_record(db, session_id)
        if record is None:
            raise UnknownSession(f"no stored session {session_id!r}")
        return record


def set_engine_title(db: sqlite3.Connection, session_id: str, title: str | None) -> bool:
    """Set a generated title unless a client set one; return whether it was set."""
    with _transaction(db):
        changed = db.execute(
            "UPDATE sessions SET title = ? WHERE session_id = ? AND title_by_client = 0",
            (title, session_id),
        ).rowcount
        if not changed and _sid(db, session_id) is None:
            raise UnknownSession(f"no stored session {session_id!r}")
        return bool(changed)


def _label_numbers(db: sqlite3.Connection, sid: int, texts: Sequence[str]) -> dict[str, int]:
    """Number every text for the session, adding the ones it has not numbered yet."""
    numbers: dict[str, int] = {}
    for chunk in _chunks(texts):
        marks = ", ".join("?" * len(chunk))
        numbers.update(
            db.execute(
                f"SELECT text, label FROM labels WHERE sid = ? AND text IN ({marks})",
                (sid, *chunk),
            ).fetchall()
        )
    missing = [text for text in texts if text not in numbers]
    if missing:
        (highest,) = db.execute(
            "SELECT coalesce(max(label), 0) FROM labels WHERE sid = ?", (sid,)
        ).fetchone()
        added = {text: highest + n for n, text in enumerate(missing, start=1)}
        db.executemany(
            "INSERT INTO labels (sid, label, text) VALUES (?, ?, ?)",
            [(sid, label, text) for text, label in added.items()],
        )
        numbers.update(added)
    return numbers


def _label_texts(db: sqlite3.Connection, sid: int, labels: Sequence[int]) -> dict[int, str]:
    texts: dict[int, str] = {}
    for chunk in _chunks(labels):
        marks = ", ".join("?" * len(chunk))
        texts.update(
            db.execute(
                f"SELECT label, text FROM labels WHERE sid = ? AND label IN ({marks})",
                (sid, *chunk),
            ).fetchall()
        )
    return texts


def append(db: sqlite3.Connection, events: Sequence[StoredEvent]) -> None:
    """Store a batch of events (see ``SessionStore.append_events``)."""
    groups = group_events(events)
    if not groups:
        return
    with _transaction(db):
        for session_id, group in groups.items():
            row = db.execute(
                "SELECT sid, last_seq FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row is None:
                raise UnknownSession(f"no stored session {session_id!r}")
            sid, last_seq = row
            check_follows(session_id, last_seq, group)
            texts: dict[str, None] = {}  # ordered set
            for event in group:
                if event.turn_id is not None:
                    texts[event.turn_id] = None
                texts[event.agent_id] = None
                texts[event.kind] = None
                texts[event.layer] = None
            label = _label_numbers(db, sid, list(texts))
            db.executemany(
                _INSERT_EVENT,
                [
                    (
                        sid,
                        event.seq,
                        event.epoch,
                        None if event.turn_id is None else label[event.turn_id],
                        label[event.agent_id],
                        label[event.kind],
                        label[event.layer],
                        event.payload,
                        to_micros(event.created_at),
                    )
                    for event in group
                ],
            )
            last = group[-1]
            db.execute(
                "UPDATE sessions SET last_seq = ?, updated_at = max(updated_at, ?) WHERE sid = ?",
                (last.seq, to_micros(last.created_at), sid),
            )


def read(db: sqlite3.Connection, session_id: str, after_seq: int, limit: int) -> list[StoredEvent]:
    """Return up to ``limit`` events after ``after_seq`` (see ``SessionStore.read_events``)."""
    with _transaction(db, "BEGIN"):
        sid = _sid(db, session_id)
        if sid is None:
            return []
        rows = db.execute(_SELECT_EVENTS, (sid, after_seq, limit)).fetchall()
        used: set[int | None] = set()
        for row in rows:
            used.update(row[2:6])
        used.discard(None)
        text = _label_texts(db, sid, [label for label in used if label is not None])
    event = StoredEvent
    at = from_micros
    return [
        event(
            session_id=session_id,
            seq=seq,
            epoch=epoch,
            turn_id=None if turn is None else text[turn],
            agent_id=text[agent],
            kind=text[kind],
            layer=text[layer],
            payload=payload,
            created_at=at(created_at),
        )
        for seq, epoch, turn, agent, kind, layer, payload, created_at in rows
    ]


def fork(db: sqlite3.Connection, source_id: str, new_record: SessionRecord) -> SessionRecord:
    """Copy a session under a new identity (see ``SessionStore.fork_session``)."""
    with _transaction(db):
        source = db.execute(
            "SELECT sid, state, epoch, last_seq FROM sessions WHERE session_id = ?", (source_id,)
        ).fetchone()
        if source is None:
            raise UnknownSession(f"no stored session {source_id!r}")
        source_sid, state, epoch, last_seq = source
        new_sid = _insert_session(db, new_record)
        db.execute(
            "UPDATE sessions SET state = ?, epoch = ?, last_seq = ? WHERE sid = ?",
            (state, epoch, last_seq, new_sid),
        )
        db.execute(
            "INSERT INTO labels (sid, label, text) SELECT ?, label, text FROM labels"
            " WHERE sid = ? ORDER BY label",
            (new_sid, source_sid),
        )
        db.execute(
            "INSERT INTO events"
            " (sid, seq, epoch, turn, agent, kind, layer, payload, created_at)"
            " SELECT ?, seq, epoch, turn, agent, kind, layer, payload, created_at"
            " FROM events WHERE sid = ? ORDER BY seq",
            (new_sid, source_sid),
        )
        record = select_record(db, new_record.session_id)
        assert record is not None
        return record


def list_page(
    db: sqlite3.Connection,
    cwd: str | None,
    after: tuple[int, str] | None,
    limit: int,
    archived: str = "include",
) -> SessionPage:
    """Return one page of sessions (see ``SessionStore.list_sessions``)."""
    clauses: list[str] = []
    params: list[object] = []
    if cwd is not None:
        clauses.append("cwd = ?")
        params.append(cwd)
    if archived != "include":
        clauses.append("archived = ?")
        params.append(int(archived == "only"))
    if after is not None:
        clauses.append("(updated_at, session_id) < (?, ?)")
        params.extend(after)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = db.execute(
        f"SELECT {_SUMMARY_COLUMNS} FROM sessions {where}"
        " ORDER BY updated_at DESC, session_id DESC LIMIT ?",
        (*params, limit + 1),
    ).fetchall()
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1][5], page[-1][0]) if len(rows) > limit else None
    return SessionPage(sessions=tuple(_summary(row) for row in page), next_cursor=next_cursor)


def delete(db: sqlite3.Connection, session_id: str) -> None:
    """Remove a session with its labels and events; unknown ids are ignored."""
    with _transaction(db):
        db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))


def claim(
    db: sqlite3.Connection,
    session_id: str,
    owner: str,
    now: int,
    lease: int,
    replacing: str | None,
) -> SessionClaim:
    """Take or renew ``owner``'s lease (times in microseconds; see ``claim_session``)."""
    with _transaction(db):
        db.execute(
            "UPDATE sessions SET owner = ?, owner_expires_at = ? WHERE session_id = ?"
            " AND (owner IS NULL OR owner = ? OR owner = ? OR owner_expires_at <= ?)",
            (owner, now + lease, session_id, owner, replacing, now),
        )
        row = db.execute(
            "SELECT owner, owner_expires_at, last_seq FROM sessions WHERE session_id = ?",
            (session_id,),
        ).fetchone()
    if row is None:
        raise UnknownSession(f"no stored session {session_id!r}")
    return SessionClaim(owner=row[0], expires_at=from_micros(row[1]), last_seq=row[2])


def release(db: sqlite3.Connection, session_id: str, owner: str) -> None:
    """Drop ``owner``'s lease, if it holds it."""
    with _transaction(db):
        db.execute(
            "UPDATE sessions SET owner = NULL, owner_expires_at = NULL"
            " WHERE session_id = ? AND owner = ?",
            (session_id, owner),
        )

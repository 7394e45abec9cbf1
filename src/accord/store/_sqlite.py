"""``SqliteSessionStore``: the default ``SessionStore``, an embedded SQLite file in WAL mode.

One ``sqlite3`` connection per store, used from anyio worker threads one call at a time (a
``CapacityLimiter(1)``), so the event loop never blocks on disk and the store runs on asyncio
and trio alike (aiosqlite is asyncio-only). Every public method is one worker-thread call and
every write is one ``BEGIN IMMEDIATE`` transaction. The schema and its migrations live in
``_schema``. Above: the agent runtime and ``GroupCommitWriter``. Below: ``sqlite3``,
``_schema``, ``_codec``, ``_records``, ``_errors``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Generator, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Self, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import orjson
import platformdirs

from ._codec import (
    check_follows,
    decode_cursor,
    dump_json,
    encode_cursor,
    from_micros,
    group_events,
    to_micros,
)
from ._errors import SessionExists, StoreClosed, StoreError, UnknownSession
from ._protocol import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    READ_BATCH_SIZE,
    UNCHANGED,
    Unchanged,
)
from ._records import JsonObject, SessionPage, SessionRecord, SessionSummary, StoredEvent
from ._schema import migrate

_T = TypeVar("_T")

#: How long a write waits for another process's write lock (``PRAGMA busy_timeout``). Another
#: accord process on the same file (a second agent, ``accord sessions``) holds the lock for one
#: transaction, a few milliseconds; 5 s rides out a slow disk without hanging forever.
BUSY_TIMEOUT_SECONDS: Final = 5.0
#: Once a checkpoint has emptied the WAL, SQLite truncates the file to at most this size, so a
#: burst of writes does not leave a large ``-wal`` file behind for the life of the process.
WAL_SIZE_LIMIT_BYTES: Final = 64 * 1024 * 1024

_SESSION_COLUMNS = (
    "session_id, cwd, additional_directories, mcp_servers, title,"
    " created_at, updated_at, epoch, last_seq, state"
)
_SUMMARY_COLUMNS = (
    "session_id, cwd, additional_directories, title, created_at, updated_at, last_seq"
)
_INSERT_EVENT = (
    "INSERT INTO events (sid, seq, epoch, turn_id, agent_id, kind, layer, payload, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_EVENTS = (
    "SELECT seq, epoch, turn_id, agent_id, kind, layer, payload, created_at FROM events"
    " WHERE sid = (SELECT sid FROM sessions WHERE session_id = ?) AND seq > ?"
    " ORDER BY seq LIMIT ?"
)


def default_store_path() -> Path:
    """Return the default database path, ``<user data dir>/accord/sessions.sqlite3``.

    The directory (from ``platformdirs.user_data_dir("accord")``, e.g.
    ``~/.local/share/accord`` on Linux) is created, readable by the user only, if missing.
    """
    directory = Path(platformdirs.user_data_dir("accord", appauthor=False))
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory / "sessions.sqlite3"


def _record(row: Any) -> SessionRecord:
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
    )


def _summary(row: Any) -> SessionSummary:
    return SessionSummary(
        session_id=row[0],
        cwd=row[1],
        additional_directories=tuple(orjson.loads(row[2])),
        title=row[3],
        created_at=from_micros(row[4]),
        updated_at=from_micros(row[5]),
        last_seq=row[6],
    )


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Generator[None]:
    """A write transaction: ``BEGIN IMMEDIATE`` takes the write lock up front, so the busy
    timeout applies and two writers never deadlock upgrading a read lock."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _select_record(db: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = db.execute(
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else _record(row)


def _insert_session(db: sqlite3.Connection, record: SessionRecord) -> int:
    if db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (record.session_id,)).fetchone():
        raise SessionExists(f"session {record.session_id!r} is already stored")
    cursor = db.execute(
        f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            record.session_id,
            record.cwd,
            dump_json(list(record.additional_directories)),
            dump_json(list(record.mcp_servers)),
            record.title,
            to_micros(record.created_at),
            to_micros(record.updated_at),
            record.epoch,
            record.last_seq,
            dump_json(record.state),
        ),
    )
    sid = cursor.lastrowid
    assert sid is not None
    return sid


def _create(db: sqlite3.Connection, record: SessionRecord) -> None:
    with _transaction(db):
        _insert_session(db, record)


def _update(db: sqlite3.Connection, session_id: str, changes: dict[str, object]) -> SessionRecord:
    with _transaction(db):
        if changes:
            assignments = ", ".join(f"{column} = ?" for column in changes)
            cursor = db.execute(
                f"UPDATE sessions SET {assignments} WHERE session_id = ?",
                (*changes.values(), session_id),
            )
            found = cursor.rowcount > 0
        else:
            found = True
        record = _select_record(db, session_id) if found else None
        if record is None:
            raise UnknownSession(f"no stored session {session_id!r}")
        return record


def _append(db: sqlite3.Connection, events: Sequence[StoredEvent]) -> None:
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
            db.executemany(
                _INSERT_EVENT,
                [
                    (
                        sid,
                        event.seq,
                        event.epoch,
                        event.turn_id,
                        event.agent_id,
                        event.kind,
                        event.layer,
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


def _read(db: sqlite3.Connection, session_id: str, after_seq: int, limit: int) -> list[StoredEvent]:
    rows = db.execute(_SELECT_EVENTS, (session_id, after_seq, limit)).fetchall()
    event = StoredEvent
    at = from_micros
    return [
        event(
            session_id=session_id,
            seq=seq,
            epoch=epoch,
            turn_id=turn_id,
            agent_id=agent_id,
            kind=kind,
            layer=layer,
            payload=payload,
            created_at=at(created_at),
        )
        for seq, epoch, turn_id, agent_id, kind, layer, payload, created_at in rows
    ]


def _fork(db: sqlite3.Connection, source_id: str, new_record: SessionRecord) -> SessionRecord:
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
            "INSERT INTO events"
            " (sid, seq, epoch, turn_id, agent_id, kind, layer, payload, created_at)"
            " SELECT ?, seq, epoch, turn_id, agent_id, kind, layer, payload, created_at"
            " FROM events WHERE sid = ? ORDER BY seq",
            (new_sid, source_sid),
        )
        record = _select_record(db, new_record.session_id)
        assert record is not None
        return record


def _list(
    db: sqlite3.Connection, cwd: str | None, after: tuple[int, str] | None, limit: int
) -> SessionPage:
    clauses: list[str] = []
    params: list[object] = []
    if cwd is not None:
        clauses.append("cwd = ?")
        params.append(cwd)
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


def _delete(db: sqlite3.Connection, session_id: str) -> None:
    with _transaction(db):
        db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))


class SqliteSessionStore:
    """The default :class:`SessionStore`: one SQLite file in WAL mode.

    Durability: with ``synchronous="normal"`` (the default) a commit has written the
    transaction to the write-ahead log through the operating system before it returns, but does
    not wait for ``fsync``. Everything committed survives the process being killed (``kill -9``,
    a crash, the OOM killer), which is what the tests check; a power cut or kernel crash may
    roll back the last few transactions, never corrupting the file. ``synchronous="full"``
    fsyncs the log at every commit and survives power loss too, at a throughput cost (see
    ``benchmarks/bench_store.py``).

    Nothing happens on construction; the file is opened (created, and migrated to the current
    schema) by ``async with`` or by the first call. The file is created readable by its owner
    only, since sessions hold private conversations. Several processes may share one file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        synchronous: Literal["normal", "full"] = "normal",
    ) -> None:
        """Prepare a store on ``path`` (default: :func:`default_store_path`).

        Args:
            path: the database file; ``":memory:"`` makes a private in-memory database.
            synchronous: ``"normal"`` (durable against process crashes) or ``"full"``
                (durable against power loss too).
        """
        self._path: Path | None = None if path is None else Path(path)
        self._synchronous = synchronous
        self._limiter: anyio.CapacityLimiter | None = None
        self._db: sqlite3.Connection | None = None
        self._closed = False

    @property
    def path(self) -> Path | None:
        """The database file (``None`` until opened when the default path is used)."""
        return self._path

    def _open(self) -> sqlite3.Connection:
        if self._path is None:
            self._path = default_store_path()
        path = self._path
        try:
            if str(path) != ":memory:" and not path.exists():
                # Create it private before SQLite does; its -wal and -shm files copy the mode.
                os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            db = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the session database {str(path)!r}: {exc}") from exc
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute(f"PRAGMA synchronous = {self._synchronous.upper()}")
            db.execute("PRAGMA foreign_keys = ON")
            db.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT_BYTES:d}")
            migrate(db)
        except sqlite3.Error as exc:
            db.close()
            raise StoreError(f"cannot open the session database {str(path)!r}: {exc}") from exc
        except BaseException:
            db.close()
            raise
        return db

    def _in_thread(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise StoreClosed("the session store is closed")
        db = self._db
        if db is None:
            db = self._db = self._open()
        try:
            return operation(db)
        except sqlite3.Error as exc:
            raise StoreError(f"session database error: {exc}") from exc

    async def _call(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise StoreClosed("the session store is closed")
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        # Not abandoned on cancellation: a cancelled write has either committed or not by the
        # time the cancellation is delivered, never half-done in a thread nobody waits for.
        return await anyio.to_thread.run_sync(self._in_thread, operation, limiter=self._limiter)

    async def create_session(self, record: SessionRecord) -> None:
        """See :meth:`SessionStore.create_session`."""
        await self._call(lambda db: _create(db, record))

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionStore.get_session`."""
        return await self._call(lambda db: _select_record(db, session_id))

    async def update_session(
        self,
        session_id: str,
        *,
        cwd: str | Unchanged = UNCHANGED,
        additional_directories: Sequence[str] | Unchanged = UNCHANGED,
        mcp_servers: Sequence[JsonObject] | Unchanged = UNCHANGED,
        title: str | Unchanged | None = UNCHANGED,
        state: JsonObject | Unchanged = UNCHANGED,
        epoch: int | Unchanged = UNCHANGED,
        updated_at: datetime | Unchanged = UNCHANGED,
    ) -> SessionRecord:
        """See :meth:`SessionStore.update_session`."""
        changes: dict[str, object] = {}
        if not isinstance(cwd, Unchanged):
            changes["cwd"] = cwd
        if not isinstance(additional_directories, Unchanged):
            changes["additional_directories"] = dump_json(list(additional_directories))
        if not isinstance(mcp_servers, Unchanged):
            changes["mcp_servers"] = dump_json(list(mcp_servers))
        if not isinstance(title, Unchanged):
            changes["title"] = title
        if not isinstance(state, Unchanged):
            changes["state"] = dump_json(state)
        if not isinstance(epoch, Unchanged):
            changes["epoch"] = epoch
        if not isinstance(updated_at, Unchanged):
            changes["updated_at"] = to_micros(updated_at)
        return await self._call(lambda db: _update(db, session_id, changes))

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        """See :meth:`SessionStore.append_events`."""
        if events:
            await self._call(lambda db: _append(db, events))
        else:
            await anyio.lowlevel.checkpoint()

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, limit: int = READ_BATCH_SIZE
    ) -> list[StoredEvent]:
        """See :meth:`SessionStore.read_events`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        return await self._call(lambda db: _read(db, session_id, after_seq, limit))

    async def fork_session(self, source_id: str, new_record: SessionRecord) -> SessionRecord:
        """See :meth:`SessionStore.fork_session`."""
        return await self._call(lambda db: _fork(db, source_id, new_record))

    async def list_sessions(
        self, *, cwd: str | None = None, cursor: str | None = None, limit: int = DEFAULT_PAGE_SIZE
    ) -> SessionPage:
        """See :meth:`SessionStore.list_sessions`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        after = None if cursor is None else decode_cursor(cursor)
        page_size = min(limit, MAX_PAGE_SIZE)
        return await self._call(lambda db: _list(db, cwd, after, page_size))

    async def delete_session(self, session_id: str) -> None:
        """See :meth:`SessionStore.delete_session`."""
        await self._call(lambda db: _delete(db, session_id))

    async def aclose(self) -> None:
        """Close the database (waiting for a running call to finish); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._limiter is None:
            return
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._close_db, limiter=self._limiter)

    def _close_db(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            # Best effort: refreshes the query planner's statistics; a busy file skips it.
            with contextlib.suppress(sqlite3.Error):
                db.execute("PRAGMA optimize")
            db.close()

    async def __aenter__(self) -> Self:
        """Open the database (creating and migrating it as needed) and return the store.

        Raises:
            SchemaVersionError: the file was written by a newer accord.
            StoreError: the file cannot be opened or is not an SQLite database.
        """
        await self._call(lambda db: None)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the database."""
        await self.aclose()

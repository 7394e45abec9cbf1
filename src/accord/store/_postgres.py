"""``PostgresSessionStore``: the ``SessionStore`` that several server processes share.

SQLite stays the embedded default; this store is for a team that runs several ``accord serve``
processes, on one machine or several, over one PostgreSQL database. It is built on psycopg 3
and its connection pool, used from anyio worker threads (psycopg's async API is asyncio-only),
so it runs on asyncio and trio alike, like the SQLite store.

Guarantees, beyond the ``SessionStore`` contract:

* every write is one transaction; appends take the session row's lock only for the short
  append transaction, and reads of history never lock anything;
* a conflicting append (another process appended the same seqs) is refused with
  :class:`EventOrderError` and nothing of it is stored; the store never reloads and continues,
  which is how histories get corrupted;
* each append ends with a ``NOTIFY`` on :data:`EVENTS_CHANNEL` (``"<session id> <last seq>"``),
  delivered on commit, so another process can wake up and read the new events
  (``follow_events`` shares one listening connection among all the store's followers;
  :meth:`PostgresSessionStore.listen` opens a dedicated one);
* a lost connection (the database restarted) surfaces as a :class:`StoreError` that names the
  server, never the password, and the next call reconnects.

Above: the agent runtime and ``GroupCommitWriter``. Below: ``_postgres_schema``, ``_codec``,
psycopg and psycopg_pool (imported lazily: the ``postgres`` extra).
"""

from __future__ import annotations

import contextlib
import threading
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import orjson

from ._codec import (
    JSON_COLUMNS,
    SESSION_COLUMNS,
    SUMMARY_COLUMNS,
    check_follows,
    check_lease,
    decode_cursor,
    encode_cursor,
    encode_fields,
    from_micros,
    given_fields,
    group_events,
    to_micros,
)
from ._codec import record_from_row as _record
from ._codec import summary_from_row as _summary
from ._errors import (
    EventOrderError,
    SessionExists,
    StoreClosed,
    StoreError,
    StoreUnavailable,
    UnknownSession,
)
from ._follow import Wakeups, check_follow_args, follow_session
from ._postgres_listen import LISTEN_APPLICATION_NAME, NoteDispatcher, parse_note
from ._protocol import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    READ_BATCH_SIZE,
    UNCHANGED,
    ArchiveFilter,
    Unchanged,
)
from ._records import (
    JsonObject,
    SessionClaim,
    SessionPage,
    SessionRecord,
    StoredEvent,
)

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

_T = TypeVar("_T")


#: The channel every append notifies, with ``"<session id> <last seq>"`` as the payload.
EVENTS_CHANNEL: Final = "accord_events"
#: Connections the pool keeps open at most (and worker threads used at once).
DEFAULT_POOL_SIZE: Final = 4
#: How long opening the store waits for the database before giving up.
CONNECT_TIMEOUT_SECONDS: Final = 10.0
#: How often a follower reads the events table even without a notification: the safety net
#: for a ``NOTIFY`` that never arrived (a listening connection lost and re-established).
FOLLOW_POLL_SECONDS: Final = 1.0

_SESSION_COLUMNS: Final = ", ".join(
    f"{column}::text" if column in JSON_COLUMNS else column for column in SESSION_COLUMNS
)
_SUMMARY_COLUMNS: Final = ", ".join(
    f"{column}::text" if column in JSON_COLUMNS else column for column in SUMMARY_COLUMNS
)

# The statements of the hot paths, as constants: psycopg prepares a statement on the server
# once it has run a few times on a connection, and keys that on the text.
_MOVE_HEAD: Final = (
    b"UPDATE accord_sessions SET last_seq = %s, updated_at = greatest(updated_at, %s),"
    b" version = version + 1 WHERE session_id = %s AND last_seq < %s"
)
#: Binary COPY: nothing to quote or escape on this side, nothing to parse on the server's.
_COPY_EVENTS: Final = (
    b"COPY accord_events (session_id, seq, epoch, turn_id, agent_id, kind, layer, payload,"
    b" created_at) FROM STDIN (FORMAT BINARY)"
)
_EVENT_TYPES: Final = ("text", "int8", "int4", "text", "text", "text", "text", "bytea", "int8")
_NOTIFY: Final = b"SELECT pg_notify(%s, %s)"
#: Read in binary: integers and bytea arrive as they are stored, no text to parse.
_READ_EVENTS: Final = (
    b"SELECT seq, epoch, turn_id, agent_id, kind, layer, payload, created_at"
    b" FROM accord_events WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s"
)


def describe_url(url: str) -> str:
    """Return ``url`` as it may be shown to a person: host, port and database, no password."""
    if not url.startswith(("postgresql://", "postgres://")):
        return "PostgreSQL (from a connection string)"
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or 5432
    except ValueError:
        port = "?"
    host = parts.hostname or "localhost"
    database = parts.path.lstrip("/")
    return f"PostgreSQL at {host}:{port}/{database}"


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


class PostgresSessionStore:
    """A :class:`~accord.store.SessionStore` on PostgreSQL, shared by several processes.

    Nothing happens on construction; the pool is opened and the schema migrated by
    ``async with`` or by the first call. Needs the ``postgres`` extra
    (``pip install "accord[postgres]"``: psycopg 3 with its pool).
    """

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        follow_poll_seconds: float = FOLLOW_POLL_SECONDS,
    ) -> None:
        """Prepare a store on the database at ``url`` (a ``postgresql://`` URL or a libpq
        connection string).

        Args:
            url: where the database is; a password in it is never shown or logged.
            pool_size: connections kept open at most, and operations run at once.
            follow_poll_seconds: how often ``follow_events`` reads the table without a
                notification (the safety net for a lost ``NOTIFY``).
        """
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {pool_size}")
        check_follow_args(0, follow_poll_seconds)
        self._follow_poll_seconds = follow_poll_seconds
        self._wakeups = Wakeups()
        self._url = url
        self._pool_size = pool_size
        self._pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] | None = None
        self._open_lock = threading.Lock()
        self._limiter: anyio.CapacityLimiter | None = None
        self._closed = False
        self._where = describe_url(url)
        self._dispatcher = NoteDispatcher(
            self._listening_connection,
            self._wakeups,
            where=self._where,
            retry_seconds=follow_poll_seconds,
        )

    @property
    def where(self) -> str:
        """The database as it may be shown to a person (no password)."""
        return self._where

    # -- plumbing --------------------------------------------------------------------------

    def _open_pool(self) -> psycopg_pool.ConnectionPool[psycopg.Connection[Any]]:
        try:
            import psycopg
            import psycopg_pool
        except ImportError as exc:  # pragma: no cover - the extra is installed in tests
            raise StoreError(
                'the PostgreSQL store needs psycopg: pip install "accord[postgres]"'
            ) from exc
        from ._postgres_schema import migrate

        pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] = psycopg_pool.ConnectionPool(
            self._url,
            min_size=1,
            max_size=self._pool_size,
            kwargs={"autocommit": True},
            check=psycopg_pool.ConnectionPool.check_connection,
            open=False,
            name="accord-store",
        )
        try:
            pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)
            with pool.connection() as conn:
                migrate(conn)
        except psycopg_pool.PoolTimeout as exc:
            pool.close()
            raise StoreUnavailable(
                f"cannot connect to {self._where} within {CONNECT_TIMEOUT_SECONDS:g} s;"
                " is the server running and the URL right?"
            ) from exc
        except psycopg.Error as exc:
            pool.close()
            raise StoreError(f"cannot open the session database on {self._where}: {exc}") from exc
        except BaseException:
            pool.close()
            raise
        return pool

    def _in_thread(self, operation: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        import psycopg
        import psycopg_pool

        if self._closed:
            raise StoreClosed("the session store is closed")
        with self._open_lock:
            pool = self._pool
            if pool is None:
                pool = self._pool = self._open_pool()
        try:
            with pool.connection(timeout=CONNECT_TIMEOUT_SECONDS) as conn:
                return operation(conn)
        except psycopg_pool.PoolTimeout as exc:
            raise StoreUnavailable(
                f"the session database is unreachable: no connection to {self._where} within"
                f" {CONNECT_TIMEOUT_SECONDS:g} s"
            ) from exc
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"lost the connection to {self._where}: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"session database error on {self._where}: {exc}") from exc

    async def _call(self, operation: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        if self._closed:
            raise StoreClosed("the session store is closed")
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self._pool_size)
        # Not abandoned on cancellation: a cancelled write has either committed or not by the
        # time the cancellation is delivered, never half-done in a thread nobody waits for.
        return await anyio.to_thread.run_sync(self._in_thread, operation, limiter=self._limiter)

    # -- the SessionStore protocol ---------------------------------------------------------

    async def create_session(self, record: SessionRecord) -> None:
        """See :meth:`SessionStore.create_session`."""
        values = (
            record.session_id,
            record.cwd,
            _json_text(list(record.additional_directories)),
            _json_text(list(record.mcp_servers)),
            record.title,
            to_micros(record.created_at),
            to_micros(record.updated_at),
            record.epoch,
            record.last_seq,
            _json_text(record.state),
            record.archived,
            record.title_by_client,
        )

        def create(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                inserted = conn.execute(
                    "INSERT INTO accord_sessions (session_id, cwd, additional_directories,"
                    " mcp_servers, title, created_at, updated_at, epoch, last_seq, state,"
                    " archived, title_by_client)"
                    " VALUES (%s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s, %s, %s::jsonb, %s,"
                    " %s)"
                    " ON CONFLICT (session_id) DO NOTHING",
                    values,
                ).rowcount
                if inserted != 1:
                    raise SessionExists(f"session {record.session_id!r} is already stored")

        await self._call(create)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionStore.get_session`."""
        if _unstorable(session_id):
            return None

        def get(conn: psycopg.Connection[Any]) -> SessionRecord | None:
            row = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM accord_sessions WHERE session_id = %s",
                (session_id,),
            ).fetchone()
            return None if row is None else _record(row)

        return await self._call(get)

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
        archived: bool | Unchanged = UNCHANGED,
        title_by_client: bool | Unchanged = UNCHANGED,
    ) -> SessionRecord:
        """See :meth:`SessionStore.update_session`."""
        changes = encode_fields(
            given_fields(
                cwd=cwd,
                additional_directories=additional_directories,
                mcp_servers=mcp_servers,
                title=title,
                state=state,
                epoch=epoch,
                updated_at=updated_at,
                archived=archived,
                title_by_client=title_by_client,
            )
        )
        assignments = [
            f"{column} = %s::jsonb" if column in JSON_COLUMNS else f"{column} = %s"
            for column in changes
        ]
        params = [
            value.decode() if column in JSON_COLUMNS and isinstance(value, bytes) else value
            for column, value in changes.items()
        ]
        assignments.append("version = version + 1")
        statement = (
            f"UPDATE accord_sessions SET {', '.join(assignments)} WHERE session_id = %s"
            f" RETURNING {_SESSION_COLUMNS}"
        )

        def update(conn: psycopg.Connection[Any]) -> SessionRecord:
            row = conn.execute(statement.encode(), (*params, session_id)).fetchone()
            if row is None:
                raise UnknownSession(f"no stored session {session_id!r}")
            return _record(row)

        return await self._call(update)

    async def set_engine_title(self, session_id: str, title: str | None) -> bool:
        """See :meth:`SessionStore.set_engine_title`."""
        if _unstorable(session_id):
            raise UnknownSession(f"no stored session {session_id!r}")

        def set_title(conn: psycopg.Connection[Any]) -> bool:
            with conn.transaction():
                changed = conn.execute(
                    "UPDATE accord_sessions SET title = %s, version = version + 1"
                    " WHERE session_id = %s AND NOT title_by_client",
                    (title, session_id),
                ).rowcount
                if changed:
                    return True
                found = conn.execute(
                    "SELECT 1 FROM accord_sessions WHERE session_id = %s", (session_id,)
                ).fetchone()
                if found is None:
                    raise UnknownSession(f"no stored session {session_id!r}")
                return False

        return await self._call(set_title)

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        """See :meth:`SessionStore.append_events`.

        One transaction for the whole batch: per session, one ``UPDATE`` locks the row,
        checks the seqs against its ``last_seq`` and moves the head; the events follow in one
        binary ``COPY``; the ``NOTIFY`` goes out when it commits.
        """
        groups = group_events(events)
        if not groups:
            await anyio.lowlevel.checkpoint()
            return

        def append(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                for session_id, group in groups.items():
                    first, last = group[0], group[-1]
                    # The head moves first: the UPDATE takes the row lock and checks the seqs
                    # in one round trip; the events follow it under the lock.
                    moved = conn.execute(
                        _MOVE_HEAD,
                        (last.seq, to_micros(last.created_at), session_id, first.seq),
                    ).rowcount
                    if moved != 1:
                        row = conn.execute(
                            "SELECT last_seq FROM accord_sessions WHERE session_id = %s",
                            (session_id,),
                        ).fetchone()
                        if row is None:
                            raise UnknownSession(f"no stored session {session_id!r}")
                        check_follows(session_id, int(row[0]), group)
                        raise EventOrderError(  # the head moved between the two statements
                            f"session {session_id!r}: seq {first.seq} is not after the stored"
                            f" last_seq {row[0]}"
                        )
                    with conn.cursor().copy(_COPY_EVENTS) as copy:
                        copy.set_types(_EVENT_TYPES)
                        write = copy.write_row
                        micros = to_micros
                        for event in group:
                            write(
                                (
                                    session_id,
                                    event.seq,
                                    event.epoch,
                                    event.turn_id,
                                    event.agent_id,
                                    event.kind,
                                    event.layer,
                                    event.payload,
                                    micros(event.created_at),
                                )
                            )
                    conn.execute(_NOTIFY, (EVENTS_CHANNEL, f"{session_id} {last.seq}"))

        await self._call(append)
        for session_id in groups:
            self._wakeups.notify(session_id)

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, limit: int = READ_BATCH_SIZE
    ) -> list[StoredEvent]:
        """See :meth:`SessionStore.read_events`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        if _unstorable(session_id):
            return []

        def read(conn: psycopg.Connection[Any]) -> list[StoredEvent]:
            rows = conn.execute(
                _READ_EVENTS, (session_id, after_seq, limit), binary=True
            ).fetchall()
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

        return await self._call(read)

    async def fork_session(self, source_id: str, new_record: SessionRecord) -> SessionRecord:
        """See :meth:`SessionStore.fork_session`."""
        if _unstorable(source_id):
            raise UnknownSession(f"no stored session {source_id!r}")

        def fork(conn: psycopg.Connection[Any]) -> SessionRecord:
            with conn.transaction():
                inserted = conn.execute(
                    "INSERT INTO accord_sessions (session_id, cwd, additional_directories,"
                    " mcp_servers, title, created_at, updated_at, epoch, last_seq, state,"
                    " archived, title_by_client)"
                    " SELECT %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, epoch, last_seq, state,"
                    " %s, %s"
                    " FROM accord_sessions WHERE session_id = %s"
                    " ON CONFLICT (session_id) DO NOTHING",
                    (
                        new_record.session_id,
                        new_record.cwd,
                        _json_text(list(new_record.additional_directories)),
                        _json_text(list(new_record.mcp_servers)),
                        new_record.title,
                        to_micros(new_record.created_at),
                        to_micros(new_record.updated_at),
                        new_record.archived,
                        new_record.title_by_client,
                        source_id,
                    ),
                ).rowcount
                if inserted != 1:
                    source = conn.execute(
                        "SELECT 1 FROM accord_sessions WHERE session_id = %s", (source_id,)
                    ).fetchone()
                    if source is None:
                        raise UnknownSession(f"no stored session {source_id!r}")
                    raise SessionExists(f"session {new_record.session_id!r} is already stored")
                conn.execute(
                    "INSERT INTO accord_events (session_id, seq, epoch, turn_id, agent_id, kind,"
                    " layer, payload, created_at)"
                    " SELECT %s, seq, epoch, turn_id, agent_id, kind, layer, payload, created_at"
                    " FROM accord_events WHERE session_id = %s ORDER BY seq",
                    (new_record.session_id, source_id),
                )
                row = conn.execute(
                    f"SELECT {_SESSION_COLUMNS} FROM accord_sessions WHERE session_id = %s",
                    (new_record.session_id,),
                ).fetchone()
                assert row is not None
                return _record(row)

        return await self._call(fork)

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        archived: ArchiveFilter = "include",
    ) -> SessionPage:
        """See :meth:`SessionStore.list_sessions`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        after = None if cursor is None else decode_cursor(cursor)
        page_size = min(limit, MAX_PAGE_SIZE)
        if cwd is not None and _unstorable(cwd):
            return SessionPage(sessions=(), next_cursor=None)
        clauses: list[str] = []
        params: list[object] = []
        if cwd is not None:
            clauses.append("cwd = %s")
            params.append(cwd)
        if archived != "include":
            clauses.append("archived = %s")
            params.append(archived == "only")
        if after is not None:
            clauses.append("(updated_at, session_id) < (%s, %s)")
            params.extend(after)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        statement = (
            f"SELECT {_SUMMARY_COLUMNS} FROM accord_sessions {where}"
            " ORDER BY updated_at DESC, session_id DESC LIMIT %s"
        )

        def page(conn: psycopg.Connection[Any]) -> SessionPage:
            rows = conn.execute(statement.encode(), (*params, page_size + 1)).fetchall()
            shown = rows[:page_size]
            next_cursor = (
                encode_cursor(shown[-1][5], shown[-1][0]) if len(rows) > page_size else None
            )
            return SessionPage(
                sessions=tuple(_summary(row) for row in shown), next_cursor=next_cursor
            )

        return await self._call(page)

    async def delete_session(self, session_id: str) -> None:
        """See :meth:`SessionStore.delete_session`."""
        if _unstorable(session_id):
            return

        def delete(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                # The session row first: its lock waits for an append in flight to commit,
                # and an append after this finds no session; then the events, all of them.
                conn.execute("DELETE FROM accord_sessions WHERE session_id = %s", (session_id,))
                conn.execute("DELETE FROM accord_events WHERE session_id = %s", (session_id,))

        await self._call(delete)

    async def claim_session(
        self,
        session_id: str,
        owner: str,
        *,
        lease_seconds: float,
        replacing: str | None = None,
    ) -> SessionClaim:
        """See :meth:`SessionStore.claim_session`.

        Leases run on the database server's clock, so processes on machines whose clocks
        disagree still agree on when a lease has expired.
        """
        check_lease(lease_seconds)

        def claim(conn: psycopg.Connection[Any]) -> SessionClaim:
            with conn.transaction():
                conn.execute(
                    "UPDATE accord_sessions SET owner = %s,"
                    " owner_expires_at = now() + make_interval(secs => %s),"
                    " version = version + 1"
                    " WHERE session_id = %s"
                    " AND (owner IS NULL OR owner = %s OR owner = %s"
                    " OR owner_expires_at <= now())",
                    (owner, lease_seconds, session_id, owner, replacing),
                )
                row = conn.execute(
                    "SELECT owner, owner_expires_at, last_seq FROM accord_sessions"
                    " WHERE session_id = %s",
                    (session_id,),
                ).fetchone()
            if row is None:
                raise UnknownSession(f"no stored session {session_id!r}")
            return SessionClaim(owner=row[0], expires_at=row[1], last_seq=row[2])

        return await self._call(claim)

    async def release_session(self, session_id: str, owner: str) -> None:
        """See :meth:`SessionStore.release_session`."""

        def release(conn: psycopg.Connection[Any]) -> None:
            conn.execute(
                "UPDATE accord_sessions SET owner = NULL, owner_expires_at = NULL,"
                " version = version + 1 WHERE session_id = %s AND owner = %s",
                (session_id, owner),
            )

        await self._call(release)

    def follow_events(
        self, session_id: str, *, after_seq: int = 0
    ) -> AbstractAsyncContextManager[AsyncIterator[list[StoredEvent]]]:
        """See :meth:`SessionStore.follow_events`.

        Woken by the ``NOTIFY`` of every append (any process), through the store's one
        listening connection, shared by all its followers (:mod:`._postgres_listen`); it also
        reads every ``follow_poll_seconds`` without one, and at once when the listening
        connection is lost and re-established, so a notification lost with a connection (the
        database restarted) delays events, never loses them.
        """
        return follow_session(
            self,
            self._wakeups,
            session_id,
            after_seq=after_seq,
            poll_seconds=self._follow_poll_seconds,
            check_open=self._check_open,
            listening=self._dispatcher.start,
        )

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the session store is closed")

    def _listening_connection(self) -> psycopg.Connection[Any]:
        import psycopg

        conn = psycopg.connect(self._url, autocommit=True, application_name=LISTEN_APPLICATION_NAME)
        try:
            conn.execute(f"LISTEN {EVENTS_CHANNEL}".encode())
        except BaseException:
            conn.close()
            raise
        return conn

    @property
    def listening_connections_opened(self) -> int:
        """Listening connections the store's followers have opened so far: one while the
        database stays up, however many sessions are followed, plus one per reconnection."""
        return self._dispatcher.connections_opened

    # -- beyond the protocol ---------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def listen(self) -> AsyncGenerator[AsyncIterator[tuple[str, int]]]:
        """Listen for appends committed by any process: ``async with store.listen() as notes``.

        ``notes`` yields ``(session_id, last_seq)`` for every append committed after the
        ``async with`` was entered, live, in commit order. It uses a dedicated connection
        (never one of the pool's), closed on exit; read the store for what came before. A lost
        connection raises :class:`StoreError` from the iteration.
        """
        import psycopg

        if self._closed:
            raise StoreClosed("the session store is closed")
        try:
            conn = await anyio.to_thread.run_sync(self._listening_connection)
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot connect to {self._where} to listen: {exc}") from exc
        try:
            yield self._notes(conn)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(conn.close)

    async def _notes(self, conn: psycopg.Connection[Any]) -> AsyncIterator[tuple[str, int]]:
        import psycopg

        # A thread of its own: a long-lived listener must not hold one of the worker threads
        # the rest of the program shares (anyio's default limiter).
        limiter = anyio.CapacityLimiter(1)

        def wait() -> list[str]:
            # Back as soon as one notification is in (a quarter second at most without one),
            # so nothing waits for the window to close.
            return [note.payload for note in conn.notifies(timeout=0.25, stop_after=1)]

        while not self._closed and not conn.closed:
            try:
                payloads = await anyio.to_thread.run_sync(wait, limiter=limiter)
            except psycopg.Error as exc:
                raise StoreUnavailable(f"lost the listening connection to {self._where}") from exc
            for payload in payloads:
                note = parse_note(payload)
                if note is not None:
                    yield note

    async def aclose(self) -> None:
        """Close the pool (waiting for running calls to finish); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._wakeups.notify_all()
        await self._dispatcher.stop()
        pool, self._pool = self._pool, None
        if pool is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(pool.close)

    async def __aenter__(self) -> Self:
        """Open the pool and migrate the schema; return the store.

        Raises:
            SchemaVersionError: the database was written by a newer accord.
            StoreError: the database cannot be reached.
        """
        await self._call(lambda conn: None)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        await self.aclose()


def _unstorable(text: str) -> bool:
    """Whether ``text`` holds a NUL, which PostgreSQL's ``text`` cannot: no stored session
    has such an id or directory, so a lookup by one finds nothing (rather than failing)."""
    return "\x00" in text

"""``SqliteSessionStore``: the default ``SessionStore``, an embedded SQLite file in WAL mode.

One ``sqlite3`` connection per store does the writes (and the reads that go with them), used
from anyio worker threads one call at a time (a ``CapacityLimiter(1)``), so the event loop
never blocks on disk and the store runs on asyncio and trio alike (aiosqlite is asyncio-only).
``list_sessions`` reads on a second, read-only connection with its own limiter: in WAL mode a
reader needs no lock, so a listing does not queue behind the writer's calls (50 streaming
sessions commit about twenty times a second each; a write waiting for another process's lock
waits up to the busy timeout) and sees everything committed before it is called. A listing
is one indexed query for one page (at most ``MAX_PAGE_SIZE`` rows, the history column never
read), under a millisecond, so it runs on the event loop's own thread, on a third read-only
connection whose busy timeout is zero: it cannot wait for a lock, and in the rare case SQLite
answers "busy" (another connection recovering or resetting the log) the listing goes to the
worker thread instead. Measured in ``benchmarks/bench_soak.py`` (50 sessions streaming): the
worker-thread hop cost a listing four to five turns of a saturated event loop, about 110 ms
at the median on a loaded machine, for a query of 0.6 ms.

A small append (what a streamed reply commits: one chunk every 10 ms or so) also commits on
the event loop's thread, on a fourth connection whose busy timeout is zero and whose automatic
checkpoint is off. In WAL mode with ``synchronous="normal"`` such a commit is one ``write`` to
the log, tens of microseconds, while the hop to a worker thread and back costs a thread
wake-up and several GIL hand-offs, a millisecond or more of CPU on a busy machine
(``benchmarks/bench_pydantic_ai.py``: the hop was the whole gap to pydantic-ai alone). An
append goes to the worker thread instead when it is large, when SQLite answers "busy" (another
connection holds the write lock: nothing was written, so it is retried there, waiting up to
the busy timeout), with ``synchronous="full"`` (an ``fsync`` per commit), and after every
``INLINE_APPENDS_PER_THREAD_APPEND`` inline commits, so that the worker's connection, whose
automatic checkpoint is on, keeps the log short: a checkpoint never runs on the loop's thread.

This module owns the file (opening, pragmas, migration, closing) and the threading; every
public method is one worker-thread call to one function of ``_sqlite_ops`` (a listing or a small
append: one call on the loop's thread, as above). Above: the agent runtime and
``GroupCommitWriter``. Below: ``_sqlite_ops``, ``_schema``, ``sqlite3``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, Self, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import platformdirs

from . import _sqlite_ops as ops
from ._codec import check_lease, decode_cursor, encode_fields, given_fields, to_micros
from ._errors import StoreClosed, StoreError
from ._follow import Wakeups, check_follow_args, follow_session
from ._protocol import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    READ_BATCH_SIZE,
    UNCHANGED,
    ArchiveFilter,
    Unchanged,
)
from ._records import JsonObject, SessionClaim, SessionPage, SessionRecord, StoredEvent
from ._schema import migrate

_T = TypeVar("_T")

#: How long a write waits for another process's write lock (``PRAGMA busy_timeout``). Another
#: accord process on the same file (a second agent, ``accord sessions``) holds the lock for one
#: transaction, a few milliseconds; 5 s rides out a slow disk without hanging forever.
BUSY_TIMEOUT_SECONDS: Final = 5.0
#: Once a checkpoint has emptied the WAL, SQLite truncates the file to at most this size, so a
#: burst of writes does not leave a large ``-wal`` file behind for the life of the process.
WAL_SIZE_LIMIT_BYTES: Final = 64 * 1024 * 1024
#: SQLite's "busy" result codes: a listing on the loop's thread that gets one goes to a worker.
_BUSY_CODES: Final = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
#: An append of at most this many events ...
INLINE_APPEND_MAX_EVENTS: Final = 64
#: ... whose payloads add up to at most this many bytes commits on the event loop's thread.
INLINE_APPEND_MAX_BYTES: Final = 64 * 1024
#: After this many appends committed on the loop's thread, one goes to the worker thread, whose
#: connection runs SQLite's automatic checkpoint when the log has grown past 1,000 pages (the
#: loop's connection never checkpoints). A small commit adds a few pages to the log.
INLINE_APPENDS_PER_THREAD_APPEND: Final = 32
#: How often a follower (``follow_events``) looks for events other processes appended to the
#: file; this process's own appends wake it at once. An empty read is a few microseconds.
FOLLOW_POLL_SECONDS: Final = 0.05


def default_store_path() -> Path:
    """Return the default database path, ``<user data dir>/accord/sessions.sqlite3``.

    The directory (from ``platformdirs.user_data_dir("accord")``, e.g.
    ``~/.local/share/accord`` on Linux) is created, readable by the user only, if missing.
    """
    directory = Path(platformdirs.user_data_dir("accord", appauthor=False))
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory / "sessions.sqlite3"


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
        follow_poll_seconds: float = FOLLOW_POLL_SECONDS,
    ) -> None:
        """Prepare a store on ``path`` (default: :func:`default_store_path`).

        Args:
            path: the database file; ``":memory:"`` makes a private in-memory database.
            synchronous: ``"normal"`` (durable against process crashes) or ``"full"``
                (durable against power loss too).
            follow_poll_seconds: how often ``follow_events`` looks for other processes'
                appends.
        """
        check_follow_args(0, follow_poll_seconds)
        self._follow_poll_seconds = follow_poll_seconds
        self._wakeups = Wakeups()
        self._path: Path | None = None if path is None else Path(path)
        self._synchronous = synchronous
        self._limiter: anyio.CapacityLimiter | None = None
        self._db: sqlite3.Connection | None = None
        #: The read-only connection of listings (a file database only) and its limiter.
        self._read_limiter: anyio.CapacityLimiter | None = None
        self._reader: sqlite3.Connection | None = None
        #: The read-only connection listings use on the event loop's thread (busy timeout 0).
        self._inline_reader: sqlite3.Connection | None = None
        #: The connection small appends commit on, on the event loop's thread (busy timeout 0,
        #: no automatic checkpoint); opened by the first append that goes to the worker thread.
        self._inline_writer: sqlite3.Connection | None = None
        #: Appends committed on the loop's thread since the last one on the worker thread.
        self._inline_appends = 0
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

    def _in_reader(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise StoreClosed("the session store is closed")
        db = self._reader
        if db is None:
            db = self._reader = self._connect_reader(BUSY_TIMEOUT_SECONDS)
        try:
            return operation(db)
        except sqlite3.Error as exc:
            raise StoreError(f"session database error: {exc}") from exc

    async def _read(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run a read on the read-only connections (see the module docstring)."""
        if self._db is None or self._path is None:
            await self._call(lambda db: None)  # opened (created, migrated) by the writer first
        if str(self._path) == ":memory:":  # a second connection would be another database
            return await self._call(operation)
        if self._closed:
            raise StoreClosed("the session store is closed")
        if self._read_limiter is None:
            self._read_limiter = anyio.CapacityLimiter(1)
        if self._inline_reader is None:  # opening touches the disk: not on the loop's thread
            self._inline_reader = await anyio.to_thread.run_sync(
                self._connect_reader, 0.0, limiter=self._read_limiter
            )
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise StoreClosed("the session store is closed")
        try:
            return operation(self._inline_reader)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF not in _BUSY_CODES:  # primary code of an extended one
                raise StoreError(f"session database error: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"session database error: {exc}") from exc
        return await anyio.to_thread.run_sync(
            self._in_reader, operation, limiter=self._read_limiter
        )

    def _connect_reader(self, busy_timeout: float) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                self._path or default_store_path(),
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            db.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            raise StoreError(f"session database error: {exc}") from exc
        return db

    async def create_session(self, record: SessionRecord) -> None:
        """See :meth:`SessionStore.create_session`."""
        await self._call(lambda db: ops.create(db, record))

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionStore.get_session`."""
        return await self._call(lambda db: ops.select_record(db, session_id))

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
        return await self._call(lambda db: ops.update(db, session_id, changes))

    async def set_engine_title(self, session_id: str, title: str | None) -> bool:
        """See :meth:`SessionStore.set_engine_title`."""
        return await self._call(lambda db: ops.set_engine_title(db, session_id, title))

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        """See :meth:`SessionStore.append_events`."""
        if not events:
            await anyio.lowlevel.checkpoint()
            return
        if not await self._append_inline(events):
            self._inline_appends = 0
            await self._call(lambda db: self._append_in_thread(db, events))
        for session_id in {event.session_id for event in events}:
            self._wakeups.notify(session_id)

    async def _append_inline(self, events: Sequence[StoredEvent]) -> bool:
        """Commit a small batch on the loop's thread (see the module docstring); ``False``
        when it must go to the worker thread instead, with nothing written."""
        db = self._inline_writer
        if (
            db is None
            or self._inline_appends >= INLINE_APPENDS_PER_THREAD_APPEND
            or len(events) > INLINE_APPEND_MAX_EVENTS
            or sum(len(event.payload) for event in events) > INLINE_APPEND_MAX_BYTES
        ):
            return False
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise StoreClosed("the session store is closed")
        try:
            ops.append(db, events)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF not in _BUSY_CODES:  # primary code of an extended one
                raise StoreError(f"session database error: {exc}") from exc
            return False  # the write lock is taken: BEGIN IMMEDIATE failed, nothing written
        except sqlite3.Error as exc:
            raise StoreError(f"session database error: {exc}") from exc
        self._inline_appends += 1
        return True

    def _append_in_thread(self, db: sqlite3.Connection, events: Sequence[StoredEvent]) -> None:
        ops.append(db, events)
        # Not for an in-memory database: a second connection would be another database.
        # Committed already: a connection that will not open leaves the appends here.
        if self._inline_writer is None and self._synchronous == "normal" and not self._private:
            with contextlib.suppress(sqlite3.Error):
                self._inline_writer = self._connect_inline_writer()

    @property
    def _private(self) -> bool:
        return str(self._path) == ":memory:"

    def _connect_inline_writer(self) -> sqlite3.Connection:
        assert self._path is not None
        db = sqlite3.connect(self._path, timeout=0.0, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA foreign_keys = ON")
            db.execute("PRAGMA wal_autocheckpoint = 0")
        except BaseException:
            db.close()
            raise
        return db

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, limit: int = READ_BATCH_SIZE
    ) -> list[StoredEvent]:
        """See :meth:`SessionStore.read_events`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        return await self._call(lambda db: ops.read(db, session_id, after_seq, limit))

    async def fork_session(self, source_id: str, new_record: SessionRecord) -> SessionRecord:
        """See :meth:`SessionStore.fork_session`."""
        return await self._call(lambda db: ops.fork(db, source_id, new_record))

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
        return await self._read(lambda db: ops.list_page(db, cwd, after, page_size, archived))

    async def delete_session(self, session_id: str) -> None:
        """See :meth:`SessionStore.delete_session`."""
        await self._call(lambda db: ops.delete(db, session_id))

    async def claim_session(
        self,
        session_id: str,
        owner: str,
        *,
        lease_seconds: float,
        replacing: str | None = None,
    ) -> SessionClaim:
        """See :meth:`SessionStore.claim_session` (leases run on this machine's clock)."""
        check_lease(lease_seconds)
        lease = int(lease_seconds * 1_000_000)
        now = to_micros(datetime.now(UTC))
        return await self._call(lambda db: ops.claim(db, session_id, owner, now, lease, replacing))

    async def release_session(self, session_id: str, owner: str) -> None:
        """See :meth:`SessionStore.release_session`."""
        await self._call(lambda db: ops.release(db, session_id, owner))

    def follow_events(
        self, session_id: str, *, after_seq: int = 0
    ) -> AbstractAsyncContextManager[AsyncIterator[list[StoredEvent]]]:
        """See :meth:`SessionStore.follow_events`.

        This store's own appends wake a follower at once; other processes' appends to the
        same file are found by polling every ``follow_poll_seconds``.
        """
        return follow_session(
            self,
            self._wakeups,
            session_id,
            after_seq=after_seq,
            poll_seconds=self._follow_poll_seconds,
            check_open=self._check_open,
        )

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the session store is closed")

    async def aclose(self) -> None:
        """Close the database (waiting for a running call to finish); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._wakeups.notify_all()
        if self._limiter is None:
            return
        with anyio.CancelScope(shield=True):
            if self._read_limiter is not None:
                await anyio.to_thread.run_sync(self._close_reader, limiter=self._read_limiter)
            await anyio.to_thread.run_sync(self._close_db, limiter=self._limiter)

    def _close_reader(self) -> None:
        for reader in (self._reader, self._inline_reader):
            if reader is not None:
                reader.close()
        self._reader = self._inline_reader = None

    def _close_db(self) -> None:
        inline_writer, self._inline_writer = self._inline_writer, None
        if inline_writer is not None:  # first: the last connection to close checkpoints
            inline_writer.close()
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

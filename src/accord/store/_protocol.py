"""The ``SessionStore`` interface every backend implements, and its shared constants.

The agent runtime (above) talks only to this protocol; ``MemorySessionStore`` and
``SqliteSessionStore`` (beside it) implement it, and a PostgreSQL store can follow by passing
the same test suite (``tests/store/``). Below: ``_records`` and ``_errors``.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from types import TracebackType
from typing import Final, Literal, Protocol, Self

from ._records import JsonObject, SessionClaim, SessionPage, SessionRecord, StoredEvent

#: Largest page ``list_sessions`` returns; a bigger ``limit`` is capped to it. The ACP spec
#: asks agents to cap page size; 100 rows of summaries is a few tens of kilobytes on the wire.
MAX_PAGE_SIZE: Final = 100
#: Page size of ``list_sessions`` when the caller gives none.
DEFAULT_PAGE_SIZE: Final = 50
#: Events per ``read_events`` call when the caller gives no ``limit``: large enough that the
#: per-call overhead (one worker-thread hop for SQLite) is noise, small enough (about 0.3 MB of
#: typical deltas) that a replay starts sending before the whole history is read.
READ_BATCH_SIZE: Final = 1000


class Unchanged(enum.Enum):
    """Type of :data:`UNCHANGED`, the "leave this field as it is" marker of ``update_session``."""

    UNCHANGED = "UNCHANGED"


#: Which sessions ``list_sessions`` returns by their archive state: every one (``include``),
#: the ones not archived (``exclude``, what ACP's ``session/list`` shows by default), or the
#: archived ones only (``only``).
ArchiveFilter = Literal["include", "exclude", "only"]
ARCHIVE_FILTERS: Final[tuple[ArchiveFilter, ...]] = ("include", "exclude", "only")


#: Default of every ``update_session`` field: keep the stored value. (``None`` is a value:
#: ``title=None`` clears the title.)
UNCHANGED: Final = Unchanged.UNCHANGED


class SessionStore(Protocol):
    """Durable storage of sessions and their event chains.

    Every method is a cancellation point. A write is one transaction: when it returns, it is
    durable (for SQLite: against a crash of the process; see ``SqliteSessionStore``); when it
    raises, nothing of it is stored. Timestamps must be timezone-aware and come back in UTC.
    Stores serialize their own operations, so one store object may be shared by many tasks of
    one event loop. Use it as an async context manager, or call ``aclose()``.
    """

    async def create_session(self, record: SessionRecord) -> None:
        """Store a new session, exactly as given.

        Raises:
            SessionExists: a session with that id is already stored.
            TypeError: ``state`` or ``mcp_servers`` does not serialize as JSON.
        """
        ...

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """Return the stored session, or ``None`` if there is none with that id."""
        ...

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
        """Change the given fields (and only those) and return the updated record.

        The store never touches ``updated_at`` here unless it is given. A client's title is
        ``title=..., title_by_client=True``; a title the agent generates goes through
        :meth:`set_engine_title` instead.

        Raises:
            UnknownSession: no session with that id is stored.
            TypeError: ``state`` or ``mcp_servers`` does not serialize as JSON.
        """
        ...

    async def set_engine_title(self, session_id: str, title: str | None) -> bool:
        """Store a title the agent generated, unless a client set the session's title.

        One atomic write: whichever process set ``title_by_client`` first, the title it set
        stays (ACP: an agent should not replace a title the client set with one it
        generates). Returns whether ``title`` was stored.

        Raises:
            UnknownSession: no session with that id is stored.
        """
        ...

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        """Store a batch of events in one durable transaction.

        The batch may span sessions. For each session, seqs must strictly increase, starting
        above its ``last_seq``; its ``last_seq`` becomes the last seq appended and its
        ``updated_at`` the latest of itself and the last event's ``created_at``. An empty batch
        does nothing.

        Raises:
            UnknownSession: an event names a session that is not stored (nothing is stored).
            EventOrderError: seqs do not increase as described (nothing is stored).
        """
        ...

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, limit: int = READ_BATCH_SIZE
    ) -> list[StoredEvent]:
        """Return up to ``limit`` events with ``seq > after_seq``, in seq order.

        A shorter list than ``limit`` means there are no more events (now). An unknown session
        has no events: the result is ``[]``. See :func:`iter_events` to read everything.

        Raises:
            ValueError: ``limit`` is less than 1.
        """
        ...

    async def fork_session(self, source_id: str, new_record: SessionRecord) -> SessionRecord:
        """Store a copy of a session under a new id, and return it.

        The copy takes its identity and placement (``session_id``, ``cwd``,
        ``additional_directories``, ``mcp_servers``, ``title``, ``title_by_client``,
        ``archived``, ``created_at``, ``updated_at``) from ``new_record``, and its history
        (every event, ``state``, ``epoch``, ``last_seq``) from the source, which is left
        unchanged. Event payloads are copied verbatim.

        Raises:
            UnknownSession: the source is not stored.
            SessionExists: ``new_record.session_id`` is already stored.
        """
        ...

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        archived: ArchiveFilter = "include",
    ) -> SessionPage:
        """Return one page of sessions, newest ``updated_at`` first, ties by id (descending).

        Args:
            cwd: only sessions whose ``cwd`` is exactly this string.
            archived: by archive state (:data:`ArchiveFilter`); applied before paging, so
                pass the same value with each page's cursor.
            cursor: ``next_cursor`` of the previous page; ``None`` for the first page.
            limit: page size, capped to :data:`MAX_PAGE_SIZE`.

        Raises:
            InvalidCursor: the cursor was not issued by a store of this kind.
            ValueError: ``limit`` is less than 1.
        """
        ...

    async def delete_session(self, session_id: str) -> None:
        """Remove a session and all its events; an unknown id is silently ignored."""
        ...

    async def claim_session(
        self,
        session_id: str,
        owner: str,
        *,
        lease_seconds: float,
        replacing: str | None = None,
    ) -> SessionClaim:
        """Take, or renew, the lease on running ``session_id``'s turns for ``owner``.

        Granted when nobody holds the lease, ``owner`` already does (a renewal: the expiry
        moves to now + ``lease_seconds``), the holder's lease has expired (a process that
        died), or the holder is ``replacing`` (a holder the caller knows to be dead, such as
        a process of the same machine that no longer exists). Otherwise the current holder is
        left alone. Either way the result says who
        holds the lease now; ``claim.held_by(owner)`` tells whether it was granted.

        Raises:
            UnknownSession: no session with that id is stored.
            ValueError: ``lease_seconds`` is not positive.
        """
        ...

    async def release_session(self, session_id: str, owner: str) -> None:
        """Give up ``owner``'s lease on ``session_id``; nothing happens if another process
        holds it, or nobody does, or the session is not stored."""
        ...

    def follow_events(
        self, session_id: str, *, after_seq: int = 0
    ) -> AbstractAsyncContextManager[AsyncIterator[list[StoredEvent]]]:
        """Follow ``session_id``'s committed events, live, from any process sharing the store.

        ``async with store.follow_events(sid, after_seq=n) as batches: async for batch in
        batches: ...`` yields every event with ``seq > after_seq``, in seq order, in batches:
        first what is stored already, then each append once it has committed, whichever
        process (or store object) appended it. Nothing is skipped or yielded twice, however
        the wake-ups behind it arrive (a missed or coalesced notification only delays it).
        The iteration never ends by itself; leaving the ``async with`` stops it. A session
        that is not stored (yet) has nothing to yield until it is created and appended to.

        Raises:
            ValueError: ``after_seq`` is negative or not an integer.
            StoreClosed: the store is closed (also from the iteration, once it is closed).
            StoreError: from the iteration, when the database cannot be read; the caller can
                follow again from the last seq it received.
        """
        ...

    async def aclose(self) -> None:
        """Release the store's resources; later calls raise ``StoreClosed``. Idempotent."""
        ...

    async def __aenter__(self) -> Self:
        """Open the store (surfacing open errors here) and return it."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        ...


async def iter_events(
    store: SessionStore, session_id: str, *, after_seq: int = 0, batch_size: int = READ_BATCH_SIZE
) -> AsyncIterator[list[StoredEvent]]:
    """Yield a session's events after ``after_seq`` in seq order, ``batch_size`` at a time.

    Each batch is one ``read_events`` call; a replay that forwards batch by batch never holds
    the whole history in memory. Events appended while iterating are included if they arrive
    before the last batch is read.
    """
    while True:
        batch = await store.read_events(session_id, after_seq=after_seq, limit=batch_size)
        if batch:
            yield batch
        if len(batch) < batch_size:
            return
        after_seq = batch[-1].seq

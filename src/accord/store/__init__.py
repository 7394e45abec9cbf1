"""Session persistence for the agent runtime: the ``SessionStore`` protocol and two stores.

The agent runtime (``accord.agent``, above) persists every session it serves and every event of
its canonical event chain through a :class:`SessionStore`. This package sits below it and
imports nothing above :mod:`accord.errors`: events arrive already serialized (``payload`` is
JSON bytes), and session ``state`` is a JSON object the store never interprets.

Stores:

* :class:`SqliteSessionStore`, the default: one SQLite file (:func:`default_store_path`, in
  the user's data directory) in WAL mode, driven from anyio worker threads (asyncio and trio).
  The schema is versioned (``PRAGMA user_version``) with ordered migrations; an older file is
  migrated on open, a newer one is refused with :class:`SchemaVersionError`.
* :class:`PostgresSessionStore`: one PostgreSQL database shared by several server processes
  (psycopg 3 and its pool, the ``postgres`` extra, imported on first use); numbered migrations
  applied on open, a newer database refused; every append notifies :data:`EVENTS_CHANNEL`.
* :class:`MemorySessionStore`: the same behaviour in memory, for tests.

All three pass one parametrized suite in ``tests/store/``; nothing in the protocol is specific
to one engine (cursors are opaque, the sort key is ``(updated_at, session_id)``, every write is
one transaction).

Writing: events are appended as they happen, never rewritten at the end of a turn. The runtime
hands them one at a time to a :class:`GroupCommitWriter`, which commits whatever accumulated in
one transaction and then calls ``on_committed`` with the batch, so a client is only ever shown
events that are already durable. A stream of 5,000 deltas thus costs a handful of small
transactions, and a crash loses at most the events no client has seen.

Reading: ``read_events`` returns a page of events in ``seq`` order (:func:`iter_events` walks
them all) for ``session/load`` replay; ``list_sessions`` pages through sessions, newest
``updated_at`` first, with an opaque cursor, an exact ``cwd`` filter and a page size capped at
:data:`MAX_PAGE_SIZE`.

Session lifecycle in store terms: new = ``create_session``; load = ``get_session`` +
``iter_events``; resume = ``get_session``; fork = ``fork_session`` (new id, history copied,
source unchanged); close = nothing to do (what is stored stays); delete = ``delete_session``
(unknown ids succeed silently).
"""

from ._errors import EventOrderError as EventOrderError
from ._errors import InvalidCursor as InvalidCursor
from ._errors import SchemaVersionError as SchemaVersionError
from ._errors import SessionExists as SessionExists
from ._errors import StoreClosed as StoreClosed
from ._errors import StoreError as StoreError
from ._errors import StoreUnavailable as StoreUnavailable
from ._errors import UnknownSession as UnknownSession
from ._errors import WriterClosed as WriterClosed
from ._memory import MemorySessionStore as MemorySessionStore
from ._open import POSTGRES_SCHEMES as POSTGRES_SCHEMES
from ._open import open_store as open_store
from ._postgres import EVENTS_CHANNEL as EVENTS_CHANNEL
from ._postgres import PostgresSessionStore as PostgresSessionStore
from ._protocol import ARCHIVE_FILTERS as ARCHIVE_FILTERS
from ._protocol import DEFAULT_PAGE_SIZE as DEFAULT_PAGE_SIZE
from ._protocol import MAX_PAGE_SIZE as MAX_PAGE_SIZE
from ._protocol import READ_BATCH_SIZE as READ_BATCH_SIZE
from ._protocol import UNCHANGED as UNCHANGED
from ._protocol import ArchiveFilter as ArchiveFilter
from ._protocol import SessionStore as SessionStore
from ._protocol import Unchanged as Unchanged
from ._protocol import iter_events as iter_events
from ._records import JsonObject as JsonObject
from ._records import SessionClaim as SessionClaim
from ._records import SessionPage as SessionPage
from ._records import SessionRecord as SessionRecord
from ._records import SessionSummary as SessionSummary
from ._records import StoredEvent as StoredEvent
from ._schema import Migration as Migration
from ._sqlite import BUSY_TIMEOUT_SECONDS as BUSY_TIMEOUT_SECONDS
from ._sqlite import SqliteSessionStore as SqliteSessionStore
from ._sqlite import default_store_path as default_store_path
from ._writer import DEFAULT_MAX_PENDING as DEFAULT_MAX_PENDING
from ._writer import GroupCommitWriter as GroupCommitWriter
from ._writer import OnCommitted as OnCommitted
from ._writer import WriterStatistics as WriterStatistics

__all__ = (
    "ARCHIVE_FILTERS",
    "BUSY_TIMEOUT_SECONDS",
    "DEFAULT_MAX_PENDING",
    "DEFAULT_PAGE_SIZE",
    "EVENTS_CHANNEL",
    "MAX_PAGE_SIZE",
    "POSTGRES_SCHEMES",
    "READ_BATCH_SIZE",
    "UNCHANGED",
    "ArchiveFilter",
    "EventOrderError",
    "GroupCommitWriter",
    "InvalidCursor",
    "JsonObject",
    "MemorySessionStore",
    "Migration",
    "OnCommitted",
    "PostgresSessionStore",
    "SchemaVersionError",
    "SessionClaim",
    "SessionExists",
    "SessionPage",
    "SessionRecord",
    "SessionStore",
    "SessionSummary",
    "SqliteSessionStore",
    "StoreClosed",
    "StoreError",
    "StoreUnavailable",
    "StoredEvent",
    "Unchanged",
    "UnknownSession",
    "WriterClosed",
    "WriterStatistics",
    "default_store_path",
    "iter_events",
    "open_store",
)

"""Versioned schema of the SQLite session store, and the migration runner.

The schema version lives in the database header (``PRAGMA user_version``); version ``n`` is
the state after the first ``n`` functions of :data:`MIGRATIONS` have run, so a new file (version
0) runs them all and an older file runs the ones it lacks. Rules for changing the schema:

* never edit a migration that has shipped; append a new function to :data:`MIGRATIONS`;
* a migration runs inside the runner's transaction: use ``db.execute`` (never
  ``executescript``, which commits), and do not change ``PRAGMA``\\ s that cannot run in a
  transaction;
* add a frozen copy of the old schema with data to ``tests/store/`` showing that it migrates.

Layout (version 1). A streamed turn is thousands of ~150-byte deltas, so the event row is kept
lean: ``sessions`` has an integer key ``sid``, and the short strings every event repeats (turn
id, agent id, kind, layer) are numbered per session in ``labels``, so an event row holds 1-byte
numbers where it would hold ~60 bytes of text (a quarter of the row). ``events`` is a
``WITHOUT ROWID`` table clustered on ``(sid, seq)``: reading a session in order is one range
scan, deleting a session removes one contiguous key range, and ``labels`` rows go with their
session (``ON DELETE CASCADE``), so nothing is left behind. Timestamps are integer microseconds
since the Unix epoch (UTC); JSON columns are UTF-8 blobs. Above: ``_sqlite_ops``. Below:
``sqlite3``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from ._errors import SchemaVersionError

#: One migration: runs inside the runner's transaction and moves the schema up one version.
Migration = Callable[[sqlite3.Connection], None]


def _v1_initial(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE sessions (
            sid INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL UNIQUE,
            cwd TEXT NOT NULL,
            additional_directories BLOB NOT NULL,  -- JSON array of strings
            mcp_servers BLOB NOT NULL,             -- JSON array of objects
            title TEXT,
            created_at INTEGER NOT NULL,           -- microseconds since the Unix epoch, UTC
            updated_at INTEGER NOT NULL,
            epoch INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            state BLOB NOT NULL                    -- JSON object, opaque to the store
        )
        """
    )
    db.execute("CREATE INDEX sessions_by_update ON sessions (updated_at DESC, session_id DESC)")
    db.execute("CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, session_id DESC)")
    db.execute(
        """
        CREATE TABLE labels (
            sid INTEGER NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
            label INTEGER NOT NULL,                -- 1, 2, ... within the session
            text TEXT NOT NULL,
            PRIMARY KEY (sid, label),
            UNIQUE (sid, text)
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE events (
            sid INTEGER NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            epoch INTEGER NOT NULL,
            turn INTEGER,                          -- labels.label of the turn id, or NULL
            agent INTEGER NOT NULL,                -- labels.label of the agent id
            kind INTEGER NOT NULL,                 -- labels.label of the kind
            layer INTEGER NOT NULL,                -- labels.label of the layer
            payload BLOB NOT NULL,                 -- the event as JSON, verbatim
            created_at INTEGER NOT NULL,
            PRIMARY KEY (sid, seq)
        ) WITHOUT ROWID
        """
    )


def _v2_claims(db: sqlite3.Connection) -> None:
    """Version 2: the lease of the process running a session's turns (see ``claim_session``)."""
    db.execute("ALTER TABLE sessions ADD COLUMN owner TEXT")
    db.execute("ALTER TABLE sessions ADD COLUMN owner_expires_at INTEGER")  # microseconds, UTC


def _v3_archived(db: sqlite3.Connection) -> None:
    """Version 3: the archive flag (ACP ``session/archive``); every session stored before is
    not archived."""
    db.execute("ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0")


def _v4_title_by_client(db: sqlite3.Connection) -> None:
    """Version 4: whether a client set the title (ACP ``session/set_title``), which a title
    the agent generates must not replace; every title stored before counts as generated."""
    db.execute("ALTER TABLE sessions ADD COLUMN title_by_client INTEGER NOT NULL DEFAULT 0")


#: Every migration ever shipped, oldest first. Append only.
MIGRATIONS: tuple[Migration, ...] = (
    _v1_initial,
    _v2_claims,
    _v3_archived,
    _v4_title_by_client,
)


def schema_version(db: sqlite3.Connection) -> int:
    """Return the schema version recorded in the database header."""
    row = db.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(db: sqlite3.Connection, migrations: Sequence[Migration] | None = None) -> int:
    """Bring the schema up to the newest version in one transaction; return that version.

    ``db`` must be in autocommit mode (``isolation_level=None``). Two processes opening the
    same old file at once are safe: the version is re-read after taking the write lock.

    Raises:
        SchemaVersionError: the file is newer than the newest migration known here.
    """
    steps = MIGRATIONS if migrations is None else migrations
    newest = len(steps)
    if schema_version(db) == newest:
        return newest
    db.execute("BEGIN IMMEDIATE")
    try:
        current = schema_version(db)
        if current > newest:
            raise SchemaVersionError(
                f"the session database has schema version {current}, but this accord knows"
                f" versions up to {newest}: it was written by a newer accord; upgrade accord"
                " or use another database file"
            )
        for version in range(current + 1, newest + 1):
            steps[version - 1](db)
            db.execute(f"PRAGMA user_version = {version:d}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return newest

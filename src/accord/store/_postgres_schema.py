"""Versioned schema of the PostgreSQL session store, and its migration runner.

Version ``n`` is the state after the first ``n`` statements lists of :data:`MIGRATIONS` have
run; the applied versions are rows of ``accord_schema`` (one per migration, with when it ran),
so a new database runs them all and an older one runs the ones it lacks. Several server
processes may start at once on one database: the runner takes a transaction-scoped advisory
lock first, so exactly one of them migrates and the others then see the result. A database
whose newest version is above :data:`SCHEMA_VERSION` was written by a newer accord and is
refused with :class:`SchemaVersionError`, never touched. Rules for changing the schema: never
edit a migration that has shipped; append a new one.

Layout (version 4), shaped for the event chain:

* ``accord_sessions``: one row per session: placement (``cwd``, directories, MCP servers as
  ``jsonb``), ``title``, ``title_by_client`` (version 4), ``archived`` (version 3), timestamps
  (integer microseconds since the Unix epoch, UTC, the sort key every store shares with the
  list cursors), ``epoch``, ``last_seq`` (the head of the chain), the runtime's opaque
  ``state`` (``jsonb``), the current owner's claim (``owner`` and ``owner_expires_at``, a
  lease) and ``version``, bumped by every write, for optimistic updates.
  Ids compare with the ``C`` collation, byte by byte, as in the other stores.
* ``accord_events``: the append-only chain, keyed by ``(session_id, seq)``; the payload is the
  event's JSON bytes, stored and returned verbatim. No foreign key to the session (version 2
  dropped it: its per-row check was most of an append's cost on the server); the store keeps
  the two consistent: an append locks and checks the session row, a deletion removes the
  session and then its events in one transaction.

Above: ``_postgres``. Below: psycopg.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from ._errors import SchemaVersionError

#: Advisory lock key that serializes migrations across processes (``"accord"`` as an integer).
MIGRATION_LOCK_KEY: Final = 0x6163636F7264

#: The migrations, oldest first; each is a list of statements run in one transaction.
MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        """
        CREATE TABLE accord_sessions (
            session_id text COLLATE "C" PRIMARY KEY,
            cwd text COLLATE "C" NOT NULL,
            additional_directories jsonb NOT NULL,
            mcp_servers jsonb NOT NULL,
            title text,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            epoch integer NOT NULL,
            last_seq bigint NOT NULL,
            state jsonb NOT NULL,
            owner text,
            owner_expires_at timestamptz,
            version bigint NOT NULL DEFAULT 1
        )
        """,
        "CREATE INDEX accord_sessions_by_update"
        " ON accord_sessions (updated_at DESC, session_id DESC)",
        "CREATE INDEX accord_sessions_by_cwd"
        " ON accord_sessions (cwd, updated_at DESC, session_id DESC)",
        """
        CREATE TABLE accord_events (
            session_id text COLLATE "C" NOT NULL
                REFERENCES accord_sessions (session_id) ON DELETE CASCADE,
            seq bigint NOT NULL,
            epoch integer NOT NULL,
            turn_id text,
            agent_id text NOT NULL,
            kind text NOT NULL,
            layer text NOT NULL,
            payload bytea NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (session_id, seq)
        )
        """,
    ),
    # Version 2: no foreign key from the events to their session. Its check ran for every
    # event appended (a lookup and a key-share lock of the session row per row: more than
    # half of the server's work per append); the append already locks and checks the session
    # row once per batch, and deleting a session deletes its events in the same transaction.
    ("ALTER TABLE accord_events DROP CONSTRAINT IF EXISTS accord_events_session_id_fkey",),
    # Version 3: the archive flag (ACP ``session/archive``); every session stored before is
    # not archived.
    ("ALTER TABLE accord_sessions ADD COLUMN archived boolean NOT NULL DEFAULT false",),
    # Version 4: whether a client set the title (ACP ``session/set_title``), which a title the
    # agent generates must not replace; every title stored before counts as generated.
    ("ALTER TABLE accord_sessions ADD COLUMN title_by_client boolean NOT NULL DEFAULT false",),
)

#: The schema version this code writes and reads.
SCHEMA_VERSION: Final = len(MIGRATIONS)


def migrate(conn: psycopg.Connection[Any]) -> int:
    """Bring the database up to :data:`SCHEMA_VERSION`; return the version it had before.

    Runs in one transaction under an advisory lock, so concurrent starts do not race.

    Raises:
        SchemaVersionError: the database was written by a newer accord.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS accord_schema ("
            " version integer PRIMARY KEY,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        row = conn.execute("SELECT coalesce(max(version), 0) FROM accord_schema").fetchone()
        found = int(row[0]) if row is not None else 0
        if found > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the PostgreSQL database has accord schema version {found}, newer than this"
                f" accord knows ({SCHEMA_VERSION}); upgrade accord or use another database"
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[version - 1]:
                conn.execute(statement.encode())
            conn.execute("INSERT INTO accord_schema (version) VALUES (%s)", (version,))
    return found

"""``open_store``: the session store a command line or a setting names.

``accord serve --store`` and the library share one reading of a store location: a
``postgresql://`` (or ``postgres://``) URL is a :class:`PostgresSessionStore`, anything else a
SQLite file, and nothing at all the default SQLite file. Above: the command line and the
runtimes. Below: the stores.
"""

from __future__ import annotations

from ._postgres import PostgresSessionStore
from ._protocol import SessionStore
from ._sqlite import SqliteSessionStore

#: URL schemes that name a PostgreSQL database.
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(location: str | None = None) -> SessionStore:
    """Return the (unopened) store at ``location``.

    Args:
        location: a ``postgresql://user@host:port/database`` URL, a SQLite file path, or
            ``None`` for the default SQLite file (:func:`default_store_path`).
    """
    if location is not None and location.startswith(POSTGRES_SCHEMES):
        return PostgresSessionStore(location)
    return SqliteSessionStore(location)

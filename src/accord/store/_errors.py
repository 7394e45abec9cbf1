"""Errors raised by the session stores and the group-commit writer.

Every class here derives from :class:`StoreError`, itself an :class:`accord.errors.AcpError`.
Two of them also join the branch of the tree a caller already handles: :class:`UnknownSession`
is a :class:`accord.errors.SessionNotFound`, and :class:`InvalidCursor` is an
:class:`accord.errors.InvalidParams`, so a ``session/list`` handler that lets it escape answers
with -32602 as the ACP specification asks::

    StoreError
    ├── UnknownSession       (also SessionNotFound) no stored session has that id
    ├── SessionExists        (also SessionError) create/fork with an id that is already stored
    ├── EventOrderError      appended seqs do not increase past the session's last_seq
    ├── InvalidCursor        (also InvalidParams, -32602) a list cursor this store did not issue
    ├── SchemaVersionError   the database file was written by a newer accord
    ├── StoreClosed          the store was used after ``aclose()``
    ├── StoreUnavailable     (also InternalError, -32603) the database cannot be reached now
    └── WriterClosed         the writer is closed, or failed (``__cause__`` is the commit error)

Low-level database errors (``sqlite3.Error`` and friends) reach callers as a plain
:class:`StoreError` whose ``__cause__`` is the original exception, so code above the store never
imports a database driver. This module sits above :mod:`accord.errors` and below everything else
in :mod:`accord.store`.
"""

from __future__ import annotations

from accord.errors import AcpError, InternalError, InvalidParams, SessionError, SessionNotFound


class StoreError(AcpError):
    """Root of the errors raised by :mod:`accord.store`."""


class UnknownSession(StoreError, SessionNotFound):
    """No session with that id is stored (it was never created, or it was deleted)."""


class SessionExists(StoreError, SessionError):
    """A session with that id is already stored."""


class EventOrderError(StoreError):
    """Appended events must have strictly increasing ``seq`` values above the session's
    ``last_seq``; this batch does not."""


class InvalidCursor(StoreError, InvalidParams):
    """The pagination cursor was not issued by this store (or was altered).

    It is an :class:`accord.errors.InvalidParams`, so it travels on the wire as -32602.
    """


class SchemaVersionError(StoreError):
    """The database file has a schema this version of accord cannot use.

    Raised when the file was written by a newer accord (its schema version is higher than the
    newest one known here); upgrade accord or point it at another file.
    """


class StoreClosed(StoreError):
    """The store was used after ``aclose()``."""


class StoreUnavailable(StoreError, InternalError):
    """The database cannot be reached now (a server restarting, a network down); a later call
    may succeed, and nothing committed before is lost.

    It is an :class:`accord.errors.InternalError`, so a handler that lets it escape answers
    -32603 with this message (naming the database, never its password) instead of a bare
    "Internal error".
    """


class WriterClosed(StoreError):
    """The group-commit writer does not accept events: it is not running, or a commit failed.

    When a commit failed, ``__cause__`` is the error the store raised.
    """

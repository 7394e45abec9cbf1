"""Delivery cursors: where in a session's event chain a client is, as an opaque string.

Every ``session/update`` (and ``_accord/event``) the runtime sends carries
``_meta["acp/cursor"]`` (:data:`~accord.errors.CURSOR_META_KEY`): the position of the last
stored event the client has with that message. A client that comes back passes its last
cursor to ``session/resume`` or ``session/load`` and receives exactly the events after it.

The string is ``1.<tag>.<epoch>.<seq>``: a format version, eight hex digits derived from the
session id (a cursor of another session is refused, not misread), the epoch of the event at
``seq`` and ``seq`` itself. Clients must treat it as opaque; only this module reads it.

:func:`check_cursor` decides whether a cursor can be honoured against the store: the event at
``seq`` must still be stored with the same epoch (``seq`` 0, "nothing yet", needs only a
known epoch). Every refusal is a :class:`~accord.errors.CursorRejected` whose
``data.reason`` says why.

Below: :mod:`accord.errors`, :mod:`accord.store`. Above: the session table (resume) and the
client channel (stamping).
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Final

from ..errors import CursorRejected
from ..store import SessionStore

__all__ = ("Cursor", "check_cursor", "encode_cursor", "parse_cursor")

_VERSION: Final = "1"
_PATTERN: Final = re.compile(r"1\.([0-9a-f]{8})\.(0|[1-9][0-9]{0,17})\.(0|[1-9][0-9]{0,17})")
_MAX_LENGTH: Final = 64

Cursor = tuple[int, int]
"""A parsed cursor: ``(epoch, seq)``."""


@functools.lru_cache(maxsize=4096)
def _tag(session_id: str) -> str:
    return hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def encode_cursor(session_id: str, epoch: int, seq: int) -> str:
    """The cursor string of position ``seq`` (stamped in ``epoch``) of ``session_id``."""
    return f"{_VERSION}.{_tag(session_id)}.{epoch}.{seq}"


def parse_cursor(session_id: str, cursor: object) -> Cursor:
    """Read a cursor a client sent for ``session_id``.

    Raises:
        CursorRejected: not a cursor (``cursor_malformed``) or another session's
            (``cursor_foreign``).
    """
    if not isinstance(cursor, str) or len(cursor) > _MAX_LENGTH:
        raise CursorRejected("cursor_malformed", cursor, "not a cursor string", session_id)
    match = _PATTERN.fullmatch(cursor)
    if match is None:
        raise CursorRejected("cursor_malformed", cursor, "not a cursor this agent made", session_id)
    if match[1] != _tag(session_id):
        raise CursorRejected("cursor_foreign", cursor, "it belongs to another session", session_id)
    return int(match[2]), int(match[3])


async def check_cursor(
    store: SessionStore, session_id: str, cursor: object, *, epoch: int, last_seq: int
) -> int:
    """Return the ``seq`` to resume after, if ``cursor`` can be honoured.

    ``epoch`` and ``last_seq`` are the session's current epoch and last committed ``seq``.

    Raises:
        CursorRejected: see the module docstring for the reasons.
    """
    cursor_epoch, seq = parse_cursor(session_id, cursor)
    if cursor_epoch > epoch:
        raise CursorRejected(
            "cursor_epoch", cursor, "its epoch is ahead of the session's", session_id
        )
    if seq == 0:
        return 0
    if seq > last_seq:
        raise CursorRejected(
            "cursor_unknown", cursor, "the session has no such position", session_id
        )
    found = await store.read_events(session_id, after_seq=seq - 1, limit=1)
    if not found or found[0].seq != seq:
        raise CursorRejected(
            "cursor_expired", cursor, "that position is no longer stored", session_id
        )
    if found[0].epoch != cursor_epoch:
        raise CursorRejected(
            "cursor_epoch", cursor, "that position belongs to another epoch", session_id
        )
    return seq

"""A session's title: the one a client sets (``session/set_title``: normalized, or refused
with -32602), and the one the engine generates, which never replaces the client's.

The schema lets the agent normalize a title (trim it, shorten it) and asks it to refuse one
that fails its validation, including one empty once normalized. accord trims surrounding
white space and refuses, rather than silently alters, what a client would not expect to see
changed: an empty title, one longer than :data:`MAX_TITLE_LENGTH` code points, and one with a
control character (C0, DEL, C1, the line and paragraph separators U+2028/U+2029, and the bidi
embeddings, overrides and isolates: a title is one line of display text; a newline, an escape
sequence or a right-to-left override in it would garble or disguise every list and terminal
that shows it).

The schema says an agent should not replace a title the client set with one it generates. The
store keeps who set the title (``SessionRecord.title_by_client``) and writes the title when it
changes, never with the rest of the record: :func:`store_client_title` sets it and the flag
(a client's title always wins), :func:`keep_generated_title` stores an engine's
``TitleChanged`` only while the flag is unset, in one atomic write
(``SessionStore.set_engine_title``), and drops it otherwise: it is neither sent nor stored in
the chain. The flag survives load, resume and restarts, and holds across processes sharing
the store; a live session keeps a copy (``LiveSession.title_by_client``), set at once by a
client's title in this process and learnt from the store when another process set one.

Below: :mod:`accord.errors`, :mod:`accord.store`. Above: :mod:`._session_table`,
:mod:`._turn`.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Final

from ..errors import InvalidParams
from ..store import SessionStore

if TYPE_CHECKING:
    from ._live_session import LiveSession

__all__ = ("MAX_TITLE_LENGTH", "keep_generated_title", "normalize_title", "store_client_title")

_LAYOUT_CONTROLS: Final = frozenset(
    "\u2028\u2029"  # line and paragraph separators
    "\u202a\u202b\u202c\u202d\u202e"  # bidi embeddings and overrides
    "\u2066\u2067\u2068\u2069"  # bidi isolates
)

MAX_TITLE_LENGTH: Final = 256
"""Longest title accepted, in code points once trimmed (a list row, not a paragraph)."""


def normalize_title(session_id: str, title: str) -> str:
    """The title to store for ``title`` as sent: trimmed of surrounding white space.

    Raises:
        InvalidParams: it is empty once trimmed, longer than :data:`MAX_TITLE_LENGTH` code
            points, or holds a control character (-32602, ``data.reason`` says which).
    """
    trimmed = title.strip()
    data = {"sessionId": session_id}
    if not trimmed:
        raise InvalidParams(
            "a session title must not be empty (or only white space)", {**data, "reason": "empty"}
        )
    if len(trimmed) > MAX_TITLE_LENGTH:
        raise InvalidParams(
            f"a session title is at most {MAX_TITLE_LENGTH} characters; this one has"
            f" {len(trimmed)}",
            {**data, "reason": "too_long", "maxLength": MAX_TITLE_LENGTH},
        )
    for index, char in enumerate(trimmed):
        if unicodedata.category(char) == "Cc" or char in _LAYOUT_CONTROLS:
            raise InvalidParams(
                f"a session title is one line of text: it holds the control character"
                f" U+{ord(char):04X} at index {index}",
                {**data, "reason": "control_character", "index": index},
            )
    return trimmed


async def store_client_title(
    store: SessionStore, session_id: str, title: str, live: LiveSession | None
) -> None:
    """Store a client's (normalized) title and mark it the client's; ``live``: the session's
    live object here, if any, which takes the title (publishing it is the caller's).

    The live session's flag is set before the store is written, so an engine title being
    stored meanwhile is dropped (:func:`keep_generated_title` looks again after its write).

    Raises:
        UnknownSession: the session is not stored.
    """
    if live is not None:
        live.title_by_client = True
    await store.update_session(session_id, title=title, title_by_client=True)
    if live is not None:
        live.title = title


async def keep_generated_title(live: LiveSession, store: SessionStore, title: str | None) -> bool:
    """Whether the engine's ``TitleChanged`` to ``title`` goes on (published and applied):
    stored in the record first, unless a client set the title, here or in another process
    (then it is dropped, and the live session remembers the flag)."""
    if live.title_by_client:
        return False
    if not await store.set_engine_title(live.session_id, title):
        live.title_by_client = True
        return False
    return not live.title_by_client  # a client's title came while this one was stored

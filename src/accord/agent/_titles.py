"""The title a client may set (``session/set_title``): normalized, or refused with -32602.

The schema lets the agent normalize a title (trim it, shorten it) and asks it to refuse one
that fails its validation, including one empty once normalized. accord trims surrounding
white space and refuses, rather than silently alters, what a client would not expect to see
changed: an empty title, one longer than :data:`MAX_TITLE_LENGTH` code points, and one with a
control character (C0, DEL, C1, the line and paragraph separators U+2028/U+2029, and the bidi
embeddings, overrides and isolates: a title is one line of display text; a newline, an escape
sequence or a right-to-left override in it would garble or disguise every list and terminal
that shows it).

Below: :mod:`accord.errors`. Above: :mod:`._session_table`.
"""

from __future__ import annotations

import unicodedata
from typing import Final

from ..errors import InvalidParams

__all__ = ("MAX_TITLE_LENGTH", "normalize_title")

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

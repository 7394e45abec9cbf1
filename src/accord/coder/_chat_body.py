"""A chat request's JSON body with each message encoded once, not once per turn (issue 21).

A conversation's request carries its whole history, and the OpenAI SDK encodes the body whole
(``json.dumps``) for every request: at turn 500 that is a thousand messages re-encoded to send
two new ones, tool results of thousands of lines escaped again each time. :func:`encode_body`
writes the same bytes as the SDK's ``openapi_dumps`` (the same encoder and settings, field by
field in the same order: JSON's text of an object is its members' texts joined), but takes each
message's text from :data:`FRAGMENTS` when an equal message was encoded before.

The cache is keyed by the message's content, not by the object: pydantic-ai maps its messages
to fresh dicts for every request, and a message changed after it was sent (a caller editing its
history) is a different key, so it is encoded anew; equal content is the same text, whatever
object carries it. Building a key visits the message's values (strings are not copied, and
Python keeps a string's hash), so a hit costs a small part of encoding the message; a message
holding anything but JSON's own types (a pydantic model, a datetime, a subclass of ``str``) is
encoded by the SDK's encoder every time, as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, cast

from openai._utils._json import openapi_dumps

__all__ = ("FRAGMENTS", "Fragments", "encode_body")

_DICT: Final = object()
_LIST: Final = object()
_SCALARS: Final = (bool, int, float)


class _Uncacheable(Exception):
    """A value whose text the cache cannot key exactly (not one of JSON's own types)."""


def _key(value: object) -> object:
    """A hashable key equal for two values exactly when their JSON texts are equal.

    Scalars carry their type (``True == 1`` and ``1 == 1.0`` in Python, not in JSON); dicts
    and lists are told apart by a marker. Raises `_Uncacheable` for any other type.
    """
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is dict:
        items: Any = value
        pairs: list[tuple[str, object]] = []
        for name, item in items.items():
            if type(name) is not str:
                raise _Uncacheable
            pairs.append((name, _key(item)))
        return (_DICT, tuple(pairs))
    if kind is list:
        members: Any = value
        return (_LIST, tuple(_key(member) for member in members))
    if kind in _SCALARS:
        return (kind, value)
    raise _Uncacheable


class Fragments:
    """The encoded text of messages sent before, by content; at most `limit` bytes of text.

    Past the bound it starts again empty (a long conversation's messages are all asked for on
    every request, in order, so evicting the oldest first would miss every one of them).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.hits = 0
        self.misses = 0
        self._texts: dict[object, bytes] = {}
        self._size = 0

    def text(self, message: object) -> bytes:
        """``message`` as the SDK encodes it, from the cache when an equal one was encoded."""
        try:
            key = _key(message)
        except _Uncacheable:
            return openapi_dumps(message)
        text = self._texts.get(key)
        if text is not None:
            self.hits += 1
            return text
        self.misses += 1
        text = openapi_dumps(message)
        if self._size + len(text) > self.limit:
            self.clear()
        self._texts[key] = text
        self._size += len(text)
        return text

    def clear(self) -> None:
        """Forget every message (the counters stay)."""
        self._texts.clear()
        self._size = 0


FRAGMENTS: Final = Fragments(16 * 1024 * 1024)
"""The process's one cache: the SDK's client copies (``with_options``) share it."""


def encode_body(body: Mapping[str, object], fragments: Fragments = FRAGMENTS) -> bytes:
    """``openapi_dumps(body)``, byte for byte, with a list of ``messages`` from `fragments`."""
    messages = body.get("messages")
    if type(messages) is not list:
        return openapi_dumps(body)
    listed = cast("list[object]", messages)
    members: list[bytes] = []
    for name, value in body.items():
        if type(name) is not str:
            return openapi_dumps(body)
        head = json.dumps(name, ensure_ascii=False).encode() + b":"
        if name == "messages":
            members.append(head + b"[" + b",".join(map(fragments.text, listed)) + b"]")
        else:
            members.append(head + openapi_dumps(value))
    return b"{" + b",".join(members) + b"}"

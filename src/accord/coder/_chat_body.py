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
object carries it. Building a key visits the message's values (a short string is its own key,
a long one is keyed by its digest, so the cache holds no second copy of a conversation's text
beside the encoded one), so a hit costs a small part of encoding the message; a message
holding anything but JSON's own types (a pydantic model, a datetime, a subclass of ``str``) is
encoded by the SDK's encoder every time, as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final, cast

from openai._utils._json import openapi_dumps

__all__ = ("FRAGMENTS", "Fragments", "encode_body")

_DICT: Final = object()
_LIST: Final = object()
_SCALARS: Final = (bool, int, float)
#: A string up to this long is its own key in the cache; a longer one is keyed by a digest.
_SHORT: Final = 64
#: What an entry costs beside its text, about: its key's tuple, a digest, the dict's slot.
_ENTRY_BYTES: Final = 200


class _Uncacheable(Exception):
    """A value whose text the cache cannot key exactly (not one of JSON's own types)."""


def _key(value: object) -> object:
    """A hashable key equal for two values exactly when their JSON texts are equal.

    Kept small, as the cache holds one per message: a dict is one flat tuple of a marker
    and its names and values' keys in turn, a list one of a marker and its items' keys (each
    member is one element, so the nesting reads back unambiguously); a string longer than
    :data:`_SHORT` is its 16-byte BLAKE2b digest (the cache does not keep a message's text
    alive twice; two strings share a digest with a chance of 2**-128), a shorter one itself.
    Scalars carry their type (``True == 1`` and ``1 == 1.0`` in Python, not in JSON). Raises
    `_Uncacheable` for any other type.
    """
    kind = type(value)
    if kind is str:
        text: Any = value
        if len(text) <= _SHORT:
            return text
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    if value is None:
        return None
    if kind is dict:
        items: Any = value
        flat: list[object] = [_DICT]
        for name, item in items.items():
            if type(name) is not str:
                raise _Uncacheable
            flat.append(name)
            flat.append(_key(item))
        return tuple(flat)
    if kind is list:
        members: Any = value
        return (_LIST, *(_key(member) for member in members))
    if kind in _SCALARS:
        return (kind, value)
    raise _Uncacheable


class Fragments:
    """The encoded text of messages sent before, by content; about `limit` bytes of memory
    (each entry counts its text and :data:`_ENTRY_BYTES` for its key and slot).

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
        size = len(text) + _ENTRY_BYTES
        if self._size + size > self.limit:
            self.clear()
        self._texts[key] = text
        self._size += size
        return text

    def clear(self) -> None:
        """Forget every message (the counters stay)."""
        self._texts.clear()
        self._size = 0


FRAGMENTS: Final = Fragments(8 * 1024 * 1024)
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

"""An engine state kept between turns: its JSON, compressed.

A live session keeps its engine's last state (a model history: everything the conversation
said) for the next snapshot to be stored as an append to it and for the session record; it
is read a few times per turn and kept for the life of the session. Kept as Python objects a
history costs about five times its JSON, and as JSON it is still the largest thing a turn
leaves behind in a busy agent (``benchmarks/bench_soak.py``: 50 conversations that grow a
turn a second). A history is repetitive text (the same keys, model name and instructions in
every message), so zlib at its fastest level keeps it in about a tenth of its JSON, for about
a millisecond per 100 KB each way. Below: ``orjson`` and ``zlib``; above: the pipeline and
the live session, which share one packed copy.
"""

from __future__ import annotations

import zlib
from typing import Final, cast

import orjson
from pydantic import JsonValue

__all__ = ("pack_state", "unpack_state")

#: zlib's fastest level: a history shrinks about tenfold at level 1 already.
_LEVEL: Final = 1


def pack_state(state: JsonValue) -> bytes:
    """Return ``state`` packed: its JSON, compressed."""
    return zlib.compress(orjson.dumps(state), _LEVEL)


def unpack_state(packed: bytes) -> JsonValue:
    """Return the state :func:`pack_state` packed (a new copy at each call)."""
    return cast(JsonValue, orjson.loads(zlib.decompress(packed)))

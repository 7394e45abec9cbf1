"""A live session's engine state: the one copy the runtime keeps, compressed, grown by appends.

The runtime keeps each live session's last engine state (a model history: everything the
conversation said) for the session record and to store the next snapshot as an append to it.
It keeps one copy, here (the pipeline owns it; the live session reads it). A whole snapshot
replaces it: its JSON, compressed with zlib at its fastest level (a history is repetitive text,
about a tenth of its JSON). An appended snapshot adds one more compressed piece: the JSON the
store was given for it, so nothing before it is read, decoded or encoded again. Each piece is
compressed with the one before it as zlib's preset dictionary (:class:`PieceChain`): one turn's
messages repeat most of the last turn's (the instructions every request carries, the same keys,
the same model name), so a piece costs what is new in it, a fifth of what it costs compressed
alone. The whole state is rebuilt only when it is read (:meth:`KeptState.whole`, which then
keeps it as one piece again).

The guard against an engine whose appended snapshot does not fit needs no second copy: the
number of items of every list reachable through JSON objects from the root (the coder's
``engine.messages``) is kept beside the pieces, and an append must name the count it extends.

``seq`` says where the stored chain holds the state: the ``seq`` of the whole snapshot it
grew from by appends (all stored after it), so the session's state record can name that
``seq`` instead of holding the whole state, and a turn's saved record costs the same at turn
500 as at turn 10 (:meth:`~._live_session.LiveSession.state_json`).

Below: ``orjson``, ``zlib`` and the state chain's :func:`~accord.events.apply_appended`; above:
the delivery pipeline and the live session.
"""

from __future__ import annotations

import zlib
from typing import Any, Final, cast

import orjson
from pydantic import JsonValue

from ..events import StateChainError, apply_appended

__all__ = ("DICTIONARY_BYTES", "KeptState", "PieceChain", "pack_state", "unpack_state")

#: zlib's fastest level: a history shrinks about tenfold at level 1 already.
_LEVEL: Final = 1

DICTIONARY_BYTES: Final = 8192
"""How much of a piece's end the next piece is compressed against: a turn of a short exchange
is about 3 KB of JSON; kept per session, not per piece."""


class PieceChain:
    """Byte strings kept compressed in order, each against the end of the one before.

    Read back only all together and in order (:meth:`join`), as a history is; what one piece
    repeats of the one before costs a few bytes. Beside the pieces the chain keeps the last
    :data:`DICTIONARY_BYTES` of the last one (the dictionary of the next).
    """

    __slots__ = ("_dictionary", "_pieces")

    def __init__(self) -> None:
        """Start empty."""
        self._pieces: list[bytes] = []
        self._dictionary = b""

    def __len__(self) -> int:
        """The number of pieces."""
        return len(self._pieces)

    def add(self, raw: bytes) -> None:
        """Keep ``raw``, compressed against the end of the last piece."""
        if self._dictionary:
            packer = zlib.compressobj(_LEVEL, zdict=self._dictionary)
        else:
            packer = zlib.compressobj(_LEVEL)
        self._pieces.append(packer.compress(raw) + packer.flush())
        self._dictionary = raw[-DICTIONARY_BYTES:]

    def join(self) -> list[bytes]:
        """Every piece as it was given, in order."""
        found: list[bytes] = []
        dictionary = b""
        for piece in self._pieces:
            unpacker = zlib.decompressobj(zdict=dictionary) if dictionary else zlib.decompressobj()
            raw = unpacker.decompress(piece) + unpacker.flush()
            found.append(raw)
            dictionary = raw[-DICTIONARY_BYTES:]
        return found

    @property
    def packed_bytes(self) -> int:
        """The pieces' size, compressed."""
        return sum(len(piece) for piece in self._pieces)


def pack_state(state: JsonValue) -> bytes:
    """Return ``state`` packed: its JSON, compressed."""
    return zlib.compress(orjson.dumps(state), _LEVEL)


def unpack_state(packed: bytes) -> JsonValue:
    """Return the state :func:`pack_state` packed (a new copy at each call)."""
    return cast(JsonValue, orjson.loads(zlib.decompress(packed)))


def _list_counts(state: JsonValue) -> dict[tuple[str, ...], int]:
    """The length of every list reachable from ``state`` through JSON objects, by path."""
    counts: dict[tuple[str, ...], int] = {}
    pending: list[tuple[tuple[str, ...], JsonValue]] = [((), state)]
    while pending:
        path, node = pending.pop()
        if isinstance(node, list):
            counts[path] = len(node)
        elif isinstance(node, dict):
            pending.extend(((*path, key), value) for key, value in node.items())
    return counts


class KeptState:
    """The last engine state of a session, kept packed, with the lengths appends check.

    ``chained`` says whether the stored chain ends with this state (so the next whole
    snapshot may be stored as an append to it, and an appended one as it comes); the
    pipeline clears it when it cannot be sure (another epoch, another process's events, a
    failed store).
    """

    __slots__ = ("_chain", "_counts", "chained", "seq")

    def __init__(self) -> None:
        """Start with no state (``None``), not chained, not in the stored chain."""
        self._chain = PieceChain()
        self._chain.add(orjson.dumps(None))
        self._counts: dict[tuple[str, ...], int] = {}
        self.chained = False
        #: The ``seq`` of the stored whole snapshot this state grew from by appends stored
        #: after it; ``None`` when the stored chain may not hold it (set from outside the
        #: chain, or a store failed).
        self.seq: int | None = None

    def replace(self, state: JsonValue, *, chained: bool, seq: int | None = None) -> None:
        """Keep ``state`` (a whole one) instead; ``seq``: see the attribute."""
        self._chain = PieceChain()
        self._chain.add(orjson.dumps(state))
        self._counts = _list_counts(state)
        self.chained = chained
        self.seq = seq

    def count(self, path: tuple[str, ...]) -> int | None:
        """The number of items of the list at ``path``; ``None`` when there is no list."""
        return self._counts.get(path)

    def check_append(self, path: tuple[str, ...], base: int) -> None:
        """Refuse an append of items after ``base`` items at ``path`` that does not fit.

        Raises:
            StateChainError: the kept state has no list at ``path``, or not of ``base`` items.
        """
        found = self._counts.get(path)
        if found != base:
            there = "no list" if found is None else f"{found} items"
            raise StateChainError(
                f"the engine's StateSnapshot appends to a list of {base} items at "
                f"{list(path)!r}, but its last state has {there} there (an engine must count "
                "what it yielded before and never change it afterwards)"
            )

    def append(self, payload: bytes, path: tuple[str, ...], added: int) -> None:
        """Add a checked append: ``payload`` is its stored ``state_appended`` JSON (``path``,
        ``base``, ``items``), ``added`` the number of its items."""
        self._chain.add(payload)
        self._counts[path] = self._counts.get(path, 0) + added

    def whole(self) -> JsonValue:
        """The whole state (a new copy at each call); the pieces are kept as one afterwards.

        Raises:
            StateChainError: a kept append does not fit (never, for checked appends).
        """
        first, *appended = self._chain.join()
        state = cast(JsonValue, orjson.loads(first))
        if not appended:
            return state
        for raw in appended:
            part: Any = orjson.loads(raw)
            state = apply_appended(state, part)
        self._chain = PieceChain()
        self._chain.add(orjson.dumps(state))
        return state

    @property
    def pieces(self) -> int:
        """How many appends are kept apart from the last whole state."""
        return len(self._chain) - 1

    @property
    def packed_bytes(self) -> int:
        """The size of what is kept, compressed."""
        return self._chain.packed_bytes

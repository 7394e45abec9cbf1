"""A live session's engine state: the runtime's hold on it, grown by appends, dropped once stored.

The runtime needs each live session's last engine state (a model history: everything the
conversation said) for the session record, to store the next snapshot as an append to it, and
to check that an append fits. The engine keeps the history it runs on; the runtime keeps in
memory only what the store has not committed yet (:class:`KeptState`; the pipeline owns it,
the live session reads it). Once the store has committed a chain that holds the whole state
(a whole snapshot and the appends after it), the kept pieces are dropped
(:meth:`KeptState.release`): a live session between turns holds no bytes of its history here,
only the list counts, the chain's ``seq`` and the ``seq`` of its newest event. The rare paths
that need the whole state (the next snapshot after a load, a resume, a change of epoch or a
failed store, which is stored whole; the record of a session whose chain does not hold its
state) read it back from the store's state chain (:meth:`KeptState.read`, async). Nothing is
lost if the store fails: pieces are dropped only once committed.

What is kept in memory is compressed: a whole state is its JSON, compressed with zlib at its
fastest level (a history is repetitive text, about a tenth of its JSON); an appended snapshot
adds one more compressed piece, the JSON the store was given for it, compressed with the one
before it as zlib's preset dictionary (:class:`PieceChain`). An engine that yields its state
whole every turn (no appended form) has it kept in memory between turns: the next whole
snapshot is compared with it to be stored as an append, and reading the whole history back
from the store every turn would cost what the append saves.

The guard against an engine whose appended snapshot does not fit needs no copy at all: the
number of items of every list reachable through JSON objects from the root (the coder's
``engine.messages``) is kept, and an append must name the count it extends.

``seq`` says where the stored chain holds the state: the ``seq`` of the whole snapshot it
grew from by appends (all stored after it), so the session's state record can name that
``seq`` instead of holding the whole state, and a turn's saved record costs the same at turn
500 as at turn 10 (:meth:`~._live_session.LiveSession.state_json`).

Below: ``orjson``, ``zlib``, the state chain's :func:`~accord.events.apply_appended` and the
store's :func:`~accord.store.iter_events`; above: the delivery pipeline and the live session.
"""

from __future__ import annotations

import zlib
from typing import Any, Final, cast

import orjson
from pydantic import JsonValue

from ..events import STATE_APPENDED, StateChainError, apply_appended
from ..store import SessionStore, iter_events

__all__ = (
    "DICTIONARY_BYTES",
    "KeptState",
    "PieceChain",
    "pack_state",
    "read_stored_state",
    "unpack_state",
)

#: zlib's fastest level: a history shrinks about tenfold at level 1 already.
_LEVEL: Final = 1

#: The stored kind of a whole ``StateSnapshot``.
_WHOLE: Final = "state_snapshot"

_NULL: Final = orjson.dumps(None)

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


async def read_stored_state(
    store: SessionStore, session_id: str, first: int, last: int
) -> JsonValue:
    """The state the stored chain holds: the whole snapshot at ``first`` with every
    ``state_appended`` event after it through ``last`` folded in.

    Raises:
        StateChainError: the stored chain has no whole snapshot at ``first``, or an append
            does not fit (the stored chain is inconsistent).
    """
    state: JsonValue = None
    found = False
    async for batch in iter_events(store, session_id, after_seq=first - 1):
        for stored in batch:
            if stored.seq > last:
                break
            if stored.kind == STATE_APPENDED:
                if not found:
                    break
                state = apply_appended(state, orjson.loads(stored.payload))
            elif stored.kind == _WHOLE and stored.seq == first:
                whole: Any = orjson.loads(stored.payload)
                state = cast(JsonValue, whole["state"])
                found = True
        else:
            continue
        break
    if not found:
        raise StateChainError(
            f"the kept engine state of session {session_id!r} grew from a whole snapshot at "
            f"seq {first}, which the stored chain does not have: the stored chain is "
            "inconsistent"
        )
    return state


class KeptState:
    """The last engine state of a session: the stored chain's or kept packed, with the
    lengths appends check.

    ``chained`` says whether the stored chain ends with this state (so the next whole
    snapshot may be stored as an append to it, and an appended one as it comes); the
    pipeline clears it when it cannot be sure (another epoch, another process's events, a
    failed store).
    """

    __slots__ = (
        "_chain",
        "_compares",
        "_counts",
        "_newest",
        "_none",
        "_stored",
        "_version",
        "chained",
        "seq",
    )

    def __init__(self) -> None:
        """Start with no state (``None``), not chained, not in the stored chain."""
        self._chain = PieceChain()
        self._chain.add(_NULL)
        self._counts: dict[tuple[str, ...], int] = {}
        self._none = True
        #: ``(first, last)`` while the stored chain holds the start of the state (the whole
        #: snapshot at ``first`` and the appends through ``last``): the pieces are only what
        #: came after it. ``None``: the pieces start with the whole state.
        self._stored: tuple[int, int] | None = None
        #: The ``seq`` of the newest event the state includes (``None``: set from outside).
        self._newest: int | None = None
        #: The last snapshot came whole from the engine: the next one is compared with it.
        self._compares = False
        #: Counts changes of what is kept (a read of the store checks it has not changed).
        self._version: int = 0
        self.chained = False
        #: The ``seq`` of the stored whole snapshot this state grew from by appends stored
        #: after it; ``None`` when the stored chain may not hold it (set from outside the
        #: chain, or a store failed).
        self.seq: int | None = None

    def replace(
        self,
        state: JsonValue,
        *,
        chained: bool,
        seq: int | None = None,
        newest: int | None = None,
        compares: bool = False,
    ) -> None:
        """Keep ``state`` (a whole one) instead; ``seq``: see the attribute; ``newest``: the
        ``seq`` of the newest event it includes, if stored; ``compares``: the engine yielded
        it whole (it stays in memory, for the next whole snapshot to be compared with)."""
        self._chain = PieceChain()
        self._chain.add(orjson.dumps(state))
        self._counts = _list_counts(state)
        self._none = state is None
        self._stored = None
        self._newest = newest
        self._compares = compares
        self._version += 1
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

    def append(self, payload: bytes, path: tuple[str, ...], added: int, *, seq: int) -> None:
        """Add a checked append: ``payload`` is its stored ``state_appended`` JSON (``path``,
        ``base``, ``items``), ``added`` the number of its items, ``seq`` its event's."""
        self._chain.add(payload)
        self._counts[path] = self._counts.get(path, 0) + added
        self._none = False
        self._newest = seq
        self._compares = False
        self._version += 1

    def uncommitted(self, committed_seq: int) -> None:
        """The store failed after ``committed_seq``: the state it did not commit stays kept,
        and the state record holds it whole until the next snapshot is stored whole."""
        self.chained = False
        if self._newest is not None and self._newest > committed_seq:
            self.seq = None

    def release(self, committed_seq: int) -> None:
        """Drop the pieces once the store committed everything they hold (through
        ``committed_seq``) as a chain from a whole snapshot: it is read back from there."""
        if (
            self.seq is None
            or self._newest is None
            or self._newest > committed_seq
            or self._compares
            or (self._stored is not None and not len(self._chain))
        ):
            return
        self._stored = (self.seq, self._newest)
        self._chain = PieceChain()
        self._version += 1

    @property
    def in_memory(self) -> bool:
        """Whether the whole state can be read without the store (:meth:`whole`)."""
        return self._stored is None

    @property
    def empty(self) -> bool:
        """Whether the state is ``None`` (no engine state yet)."""
        return self._none

    def whole(self) -> JsonValue:
        """The whole state (a new copy at each call); the pieces are kept as one afterwards.

        Raises:
            RuntimeError: the start of the state is only in the store (:meth:`read`).
            StateChainError: a kept append does not fit (never, for checked appends).
        """
        if self._stored is not None:
            raise RuntimeError("the kept state is in the store: read() it")
        first, *appended = self._chain.join()
        state = cast(JsonValue, orjson.loads(first))
        if not appended:
            return state
        state = self._fold(state, appended)
        self._chain = PieceChain()
        self._chain.add(orjson.dumps(state))
        return state

    async def read(self, store: SessionStore, session_id: str) -> JsonValue:
        """The whole state, read from ``store`` where only the stored chain holds its start
        (then kept in memory again, unless it changed meanwhile); else :meth:`whole`.

        Raises:
            StateChainError: the stored chain does not hold what it was given.
        """
        stored = self._stored
        if stored is None:
            return self.whole()
        version, pieces = self._version, self._chain.join()
        state = self._fold(await read_stored_state(store, session_id, *stored), pieces)
        if self._version == version:
            self._stored = None
            self._chain = PieceChain()
            self._chain.add(orjson.dumps(state))
            self._version += 1
        return state

    @staticmethod
    def _fold(state: JsonValue, appended: list[bytes]) -> JsonValue:
        for raw in appended:
            part: Any = orjson.loads(raw)
            state = apply_appended(state, part)
        return state

    @property
    def pieces(self) -> int:
        """How many appends are kept apart from the last whole state."""
        return len(self._chain) - (self._stored is None)

    @property
    def packed_bytes(self) -> int:
        """The size of what is kept in memory, compressed (0 once the store holds it all)."""
        return self._chain.packed_bytes

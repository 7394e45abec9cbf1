"""The model's message history as session state, and the usage figures read from it.

A session's pydantic-ai message history is its engine state: the session yields it as a
``StateSnapshot`` at the end of every turn (also a cancelled or failed one, with whatever the
turn completed), the runtime stores it, and a loaded or resumed session gets it back as
``SessionContext.history``. The stored form is a JSON object::

    {"format": "pydantic-ai/messages", "version": 1, "messages": [...]}

where ``messages`` is pydantic-ai's own serialization (``ModelMessagesTypeAdapter``, JSON
mode), so that a history saved by one process is exactly what the model sees in the next.

Usage: ACP's ``usage_update`` reports the context in use against the model's context window,
and optionally the session's cumulative cost. :func:`context_tokens` reads the context a
response leaves behind (its input tokens plus its output tokens); :class:`CostTotal` sums the
costs pydantic-ai computed for each response (from the ``genai-prices`` package) and forgets
the total as soon as one response that used tokens has no cost (an unpriced model, or one
:attr:`~._models.ModelChoice.priced` says nobody charges for), because a partial sum would be
a number nobody measured.

This module sits on pydantic-ai alone; the session uses it.
"""

from __future__ import annotations

import collections
import weakref
import zlib
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import ClassVar, Final, cast

import orjson
from pydantic import JsonValue, ValidationError
from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse

__all__ = (
    "HISTORY_FORMAT",
    "HISTORY_PATH",
    "HISTORY_VERSION",
    "HOT_HISTORIES",
    "CostTotal",
    "HistoryError",
    "PackedHistory",
    "context_tokens",
    "history_from_json",
    "history_items",
    "history_to_json",
    "message_json",
)

HISTORY_FORMAT: Final = "pydantic-ai/messages"
"""The ``format`` of a stored history."""

HISTORY_VERSION: Final = 1
"""The ``version`` of a stored history this code writes and reads."""


class HistoryError(ValueError):
    """A stored history cannot be read back (another format or version, or malformed)."""


def history_to_json(messages: Sequence[ModelMessage]) -> JsonValue:
    """Return ``messages`` in the stored form (a JSON object)."""
    dumped = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    return {
        "format": HISTORY_FORMAT,
        "version": HISTORY_VERSION,
        "messages": cast(list[JsonValue], dumped),
    }


HISTORY_PATH: Final = ("messages",)
"""Where the messages are in the stored form (an appended snapshot's ``path``)."""


def history_items(messages: Sequence[ModelMessage]) -> list[JsonValue]:
    """Return ``messages`` in their stored form (the items of the stored ``messages``), so a
    turn encodes only the messages it added."""
    return cast(list[JsonValue], ModelMessagesTypeAdapter.dump_python(list(messages), mode="json"))


def message_json(message: ModelMessage) -> bytes:
    """Return the JSON of one message (to tell whether it changed)."""
    return ModelMessagesTypeAdapter.dump_json([message])


def history_from_json(state: JsonValue) -> list[ModelMessage]:
    """Return the messages of a stored history; ``None`` (a new session) gives none.

    Raises:
        HistoryError: ``state`` is not a history this code wrote.
    """
    if state is None:
        return []
    if not isinstance(state, dict):
        raise HistoryError(f"stored history is a {type(state).__name__}, not an object")
    if state.get("format") != HISTORY_FORMAT or state.get("version") != HISTORY_VERSION:
        raise HistoryError(
            f"stored history has format {state.get('format')!r} version "
            f"{state.get('version')!r}; expected {HISTORY_FORMAT!r} version {HISTORY_VERSION}"
        )
    try:
        return ModelMessagesTypeAdapter.validate_python(state.get("messages"))
    except ValidationError as exc:
        raise HistoryError(f"stored history is malformed: {exc}") from exc


HOT_HISTORIES: Final = 4
"""How many histories (the sessions whose turn ended last, process-wide) keep their messages
as objects between turns (:class:`PackedHistory`); those of running turns are held apart."""


MERGED_PIECES: Final = 32
"""A history read back from more pieces than this is packed again as one."""

DICTIONARY_BYTES: Final = 8192
"""How much of a piece's end the next piece is compressed against (:class:`PackedHistory`)."""


class PackedHistory:
    """A message history kept between turns: pydantic-ai's JSON of it, compressed, in pieces.

    A session keeps its history for the life of the session but runs on it only during a
    turn. As pydantic-ai's message objects a turn of a short exchange costs a few kilobytes,
    which fifty conversations that grow a turn a second turn into a process that grows
    without end (``benchmarks/bench_soak.py``); packed, a tenth of its JSON.

    A turn that only appended to the history adds one piece, the JSON of its new messages
    (:meth:`extend`): earlier messages are never encoded again. Each piece is compressed with
    the end of the one before as zlib's preset dictionary: a turn repeats most of the last
    one (the instructions every request carries, the keys, the model's name), so a piece
    costs what is new in it, about a fifth of what it costs compressed alone; the pieces are
    read back only all together, in order.

    A running turn holds its history as objects anyway (the model request is built from
    them), so a turn holds them (:meth:`hold`): every read during the turn (the compaction's
    estimate, the run) is the same objects, and no other session's reads push them out. When
    the turn ends (:meth:`extend`, :meth:`release`) they join the :data:`HOT_HISTORIES`
    histories whose turns ended last (process-wide), which stay as objects too, so the next
    turn of a session that just ran, even among fifty running at once, decodes nothing; the
    others are read back from their pieces (new objects, about a millisecond per 100 KB of
    history).
    """

    __slots__ = ("__weakref__", "_count", "_dictionary", "_held", "_messages", "_pieces")

    #: The histories whose messages are kept as objects, the most recent last.
    _hot: ClassVar[collections.OrderedDict[int, weakref.ref[PackedHistory]]] = (
        collections.OrderedDict()
    )

    def __init__(self, messages: Sequence[ModelMessage] = (), *, hot: bool = False) -> None:
        """Pack ``messages``; ``hot``: keep them as objects too, as the history of a turn
        that just ended."""
        self._count = len(messages)
        self._pieces: list[bytes] = []
        self._dictionary = b""
        self._add(ModelMessagesTypeAdapter.dump_json(list(messages)))
        self._messages: list[ModelMessage] | None = None
        self._held = False
        if hot:
            self._keep(list(messages))

    def __len__(self) -> int:
        """The number of messages."""
        return self._count

    @property
    def pieces(self) -> int:
        """How many packed pieces the history is kept in."""
        return len(self._pieces)

    @property
    def packed_bytes(self) -> int:
        """The size of the packed pieces."""
        return sum(len(piece) for piece in self._pieces)

    def extend(self, messages: list[ModelMessage], added: Sequence[JsonValue]) -> None:
        """Become ``messages``: the history so far followed by new ones, whose stored form
        (:func:`history_items`) is ``added``; only the new ones are packed.

        Raises:
            ValueError: ``messages`` is not this history's length plus ``added``'s.
        """
        if len(messages) != self._count + len(added):
            raise ValueError(
                f"extend() with {len(messages)} messages: {self._count} kept plus "
                f"{len(added)} added expected"
            )
        if added:
            self._add(orjson.dumps(list(added)))
        self._count = len(messages)
        self._held = False
        self._keep(messages)

    def hold(self) -> list[ModelMessage]:
        """Return the messages (a new list) and keep them as objects until :meth:`release`
        or :meth:`extend` (a turn's start; see the class docstring)."""
        messages = self._objects()
        PackedHistory._hot.pop(id(self), None)
        self._messages = messages
        self._held = True
        return list(messages)

    def release(self) -> None:
        """End a :meth:`hold` (a turn that ended without :meth:`extend`): the messages join
        the hot histories; nothing when not held."""
        if self._held:
            self._held = False
            if self._messages is not None:
                self._keep(self._messages)

    @property
    def held(self) -> bool:
        """Whether a turn holds the messages (:meth:`hold`)."""
        return self._held

    def unpack(self) -> list[ModelMessage]:
        """Return the messages (a new list; new objects unless the history is hot or held)."""
        if self._held and self._messages is not None:
            return list(self._messages)
        messages = self._objects()
        self._keep(messages)
        return list(messages)

    def _objects(self) -> list[ModelMessage]:
        """The messages as objects: the kept ones, or read back from the pieces.

        Every request of a run carries the agent's instructions (the coder's are about 1.5 KB);
        read back from JSON each would be a string of its own, so equal ones share one, as
        they did when the runs made them.
        """
        if self._messages is not None:
            return self._messages
        if not self._count:
            return []
        messages: list[ModelMessage] = []
        dictionary = b""
        for piece in self._pieces:
            unpacker = zlib.decompressobj(zdict=dictionary) if dictionary else zlib.decompressobj()
            raw = unpacker.decompress(piece) + unpacker.flush()
            messages.extend(ModelMessagesTypeAdapter.validate_json(raw))
            dictionary = raw[-DICTIONARY_BYTES:]
        shared: str | None = None
        for message in messages:
            if isinstance(message, ModelRequest) and message.instructions is not None:
                if message.instructions == shared:
                    message.instructions = shared
                else:
                    shared = message.instructions
        if len(self._pieces) > MERGED_PIECES:  # one piece compresses better than many
            self._pieces = []
            self._dictionary = b""
            self._add(ModelMessagesTypeAdapter.dump_json(messages))
        return messages

    def _add(self, raw: bytes) -> None:
        """Keep ``raw`` as the next piece, compressed against the end of the last one."""
        if self._dictionary:
            packer = zlib.compressobj(1, zdict=self._dictionary)
        else:
            packer = zlib.compressobj(1)
        self._pieces.append(packer.compress(raw) + packer.flush())
        self._dictionary = raw[-DICTIONARY_BYTES:]

    def _keep(self, messages: list[ModelMessage]) -> None:
        """Keep ``messages`` as objects (a hot history, unless held), and let the least
        recent hot history go cold."""
        self._messages = list(messages)
        if self._held:
            return
        hot = PackedHistory._hot
        hot.pop(id(self), None)
        hot[id(self)] = weakref.ref(self)
        while len(hot) > HOT_HISTORIES:
            _, ref = hot.popitem(last=False)
            cold = ref()
            if cold is not None:
                cold._messages = None

    def __del__(self) -> None:
        """Leave the hot histories."""
        type(self)._hot.pop(id(self), None)


try:  # pydantic-ai >= 2.56 knows responses whose usage sums several requests
    from pydantic_ai._context_size import context_tokens as _context_tokens
except ImportError:  # pragma: lax no cover
    _context_tokens = None


def context_tokens(response: ModelResponse) -> int:
    """Return the tokens of context ``response`` leaves behind: its input plus its output.

    For a response whose usage sums several model requests (a long decode continued in more
    requests, a server-side tool loop), pydantic-ai marks the input of the last pass, which
    is what the context holds; that figure is used when present.
    """
    if _context_tokens is not None:
        return _context_tokens(response)
    usage = response.usage  # pragma: lax no cover
    return usage.input_tokens + usage.output_tokens  # pragma: lax no cover


class CostTotal:
    """The cumulative cost of a session's model responses, while every one of them is priced."""

    __slots__ = ("_known", "_total")

    def __init__(self, messages: Iterable[ModelMessage] = (), *, priced: bool = True) -> None:
        """Start from the responses in ``messages`` (a restored history; ``priced``: see
        :meth:`add`)."""
        self._total = Decimal(0)
        self._known = True
        for message in messages:
            if isinstance(message, ModelResponse):
                self.add(message, priced=priced)

    def add(self, response: ModelResponse, *, priced: bool = True) -> None:
        """Count one response: its cost, or, if it used tokens but has no cost, unknown.

        ``priced=False``: the response's model has no price, whatever pydantic-ai found for
        its name (a model on one's own server named like a hosted one).
        """
        usage = response.usage
        if priced and usage.cost is not None:
            self._total += usage.cost
        elif usage.input_tokens or usage.output_tokens:
            self._known = False

    @property
    def total(self) -> Decimal | None:
        """The session's cost in USD so far, or ``None`` once any response was unpriced."""
        return self._total if self._known else None

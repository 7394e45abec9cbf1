"""Newline-delimited JSON framing, with no I/O.

ACP's stdio transport sends one JSON-RPC message per line, UTF-8, separated by ``\\n``. This
module turns a byte stream into frames (``LineDecoder``) and messages into lines
(``encode_message``). It sits below the transports that read and write real streams and above
nothing but orjson.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, cast

import orjson

__all__ = (
    "ENVELOPE_PEEK_BYTES",
    "MAX_MESSAGE_BYTES",
    "LineDecoder",
    "MalformedFrame",
    "decode_line",
    "encode_message",
    "peek_envelope",
)

#: Largest message accepted on a line. Embedded resources and images travel base64-encoded
#: inside one message, so the limit must be far above any real prompt (a 40 MB image is
#: plausible), yet bounded so that a peer that never sends a newline cannot exhaust memory.
#: The official SDK's implicit 64 KiB asyncio limit broke real users; 64 MiB does not.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


#: How much of an oversized line is kept to find its envelope (``id``, ``method``): serializers
#: write those members first, well within this.
ENVELOPE_PEEK_BYTES = 4096


@dataclass(frozen=True, slots=True)
class MalformedFrame:
    """A frame that could not become a message; the connection answers it with an error.

    Attributes:
        code: the JSON-RPC error code to answer with (-32700 for bad JSON, -32600 for size).
        reason: a human-readable description, sent as the error's ``data``.
        envelope: for an oversized line, the top-level members found at its start: scalar
            values of ``id`` / ``method``, and ``result`` / ``error`` (as ``True``) when present.
            It lets the connection answer the right request (or fail the right pending call)
            instead of leaving the sender waiting forever.
    """

    code: int
    reason: str
    envelope: dict[str, Any] | None = None


#: A UTF-16 surrogate code point: it has no UTF-8 form, so it cannot go back on the wire.
_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_message(message: Any) -> bytes:
    """Serialize one message as a UTF-8 JSON line ending in ``\\n``.

    orjson never emits a raw newline inside a document, so the frame cannot be split. A
    string holding a lone surrogate (which has no UTF-8 form) is sent with U+FFFD in its
    place, the way :func:`decode_line` reads one, instead of failing the send.

    Raises:
        TypeError: the message holds something that is not JSON (orjson's JSONEncodeError).
    """
    try:
        return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError as exc:
        if "surrogates" not in str(exc):
            raise
        return orjson.dumps(_without_surrogates(message), option=orjson.OPT_APPEND_NEWLINE)


def decode_line(line: bytes) -> Any:
    """Parse one line into a JSON value, or a :class:`MalformedFrame` if it is not JSON.

    Text is read the way JavaScript peers write and read it: a lone surrogate escape
    (``"\\ud83d"``, which ``JSON.stringify`` emits for a string cut inside an emoji) and bytes
    that are not UTF-8 decode to U+FFFD instead of failing the whole message. A line that is
    not JSON keeps the top-level ``id`` / ``method`` found at its start in
    :attr:`MalformedFrame.envelope`, so a broken request can still be answered by its id.
    """
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        reason = str(exc)
    if "surrogate" in reason or "UTF-8" in reason:
        try:
            value = json.loads(line.decode("utf-8", "replace"), parse_constant=_not_json)
        except (ValueError, RecursionError):
            pass
        else:
            return _without_surrogates(value)
    return MalformedFrame(
        -32700, f"invalid JSON: {reason}", peek_envelope(line[:ENVELOPE_PEEK_BYTES])
    )


def _not_json(name: str) -> Any:
    """Refuse ``NaN`` and ``Infinity``, which the stdlib parser accepts and JSON does not."""
    raise ValueError(f"{name} is not JSON")


def _without_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        items = cast(dict[Any, Any], value).items()
        return {_without_surrogates(key): _without_surrogates(item) for key, item in items}
    if isinstance(value, list | tuple):
        return [_without_surrogates(item) for item in cast(list[Any], value)]
    return value


class LineDecoder:
    """Split a byte stream into lines, bounded by ``max_message_bytes``.

    ``feed(data)`` returns the complete lines found so far (without the newline) and
    :class:`MalformedFrame` markers for lines over the limit. An oversized line is skipped to
    its end without being buffered, so memory stays bounded and the stream stays usable.
    Blank lines are not frames and are ignored.
    """

    __slots__ = ("_discarded", "_discarding", "_head", "_max", "_parts", "_pending")

    def __init__(self, max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._max = max_message_bytes
        self._parts: list[bytes] = []
        self._pending = 0
        self._discarding = False
        self._discarded = 0
        self._head = b""

    @property
    def buffered_bytes(self) -> int:
        """Bytes of an incomplete line held in memory."""
        return self._pending

    def feed(self, data: bytes) -> list[bytes | MalformedFrame]:
        """Consume ``data`` and return the frames it completes."""
        frames: list[bytes | MalformedFrame] = []
        start = 0
        find = data.find
        while True:
            end = find(b"\n", start)
            if end < 0:
                self._keep(data, start)
                return frames
            if self._discarding:
                size = self._discarded + end - start
                self._discarding = False
                self._discarded = 0
                frames.append(self._oversized(size))
            else:
                if self._parts:
                    self._parts.append(data[start:end])
                    line = b"".join(self._parts)
                    self._parts.clear()
                    self._pending = 0
                else:
                    line = data[start:end]
                if len(line) > self._max:
                    self._head = line[:ENVELOPE_PEEK_BYTES]
                    frames.append(self._oversized(len(line)))
                elif line and not line.isspace():
                    frames.append(line)
            start = end + 1

    def end_of_stream(self) -> list[bytes | MalformedFrame]:
        """Return what remains when the stream ends: a final line without ``\\n`` counts."""
        if self._discarding:
            size = self._discarded
            self._discarding = False
            self._discarded = 0
            return [self._oversized(size)]
        if not self._parts:
            return []
        line = b"".join(self._parts)
        self._parts.clear()
        self._pending = 0
        return [] if line.isspace() else [line]

    def _keep(self, data: bytes, start: int) -> None:
        rest = len(data) - start
        if rest <= 0:
            return
        if self._discarding:
            self._discarded += rest
            return
        self._pending += rest
        if self._pending > self._max:
            self._discarding = True
            self._discarded = self._pending
            head = b""
            for part in (*self._parts, data[start : start + ENVELOPE_PEEK_BYTES]):
                head += part[: ENVELOPE_PEEK_BYTES - len(head)]
                if len(head) >= ENVELOPE_PEEK_BYTES:
                    break
            self._head = head
            self._parts.clear()
            self._pending = 0
        else:
            self._parts.append(data[start:] if start else data)

    def _oversized(self, size: int) -> MalformedFrame:
        head, self._head = self._head, b""
        return MalformedFrame(
            -32600,
            f"message of {size} bytes exceeds the limit of {self._max} bytes",
            peek_envelope(head),
        )


def peek_envelope(head: bytes) -> dict[str, Any]:
    """Find the top-level members at the start of a JSON object cut short.

    Returns scalar values of ``id``, ``method`` and ``jsonrpc``, and ``True`` for ``result``
    and ``error`` when their keys appear; stops quietly where the text is cut or malformed.
    """
    found: dict[str, Any] = {}
    text = head.decode("utf-8", "ignore")
    index = _skip_space(text, 0)
    if index >= len(text) or text[index] != "{":
        return found
    index += 1
    while True:
        index = _skip_space(text, index)
        if index >= len(text) or text[index] != '"':
            return found
        end = _string_end(text, index)
        if end < 0:
            return found
        key = text[index + 1 : end]
        index = _skip_space(text, end + 1)
        if index >= len(text) or text[index] != ":":
            return found
        index = _skip_space(text, index + 1)
        value_end = _value_end(text, index)
        if value_end < 0:
            if key in ("result", "error"):
                found[key] = True
            return found
        if key in ("result", "error"):
            found[key] = True
        elif key in ("id", "method", "jsonrpc"):
            try:
                found[key] = orjson.loads(text[index:value_end])
            except orjson.JSONDecodeError:
                return found
        index = _skip_space(text, value_end)
        if index >= len(text) or text[index] != ",":
            return found
        index += 1


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _string_end(text: str, index: int) -> int:
    """Index of the quote closing the string that opens at ``index``, or -1."""
    index += 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            return index
        index += 1
    return -1


def _value_end(text: str, index: int) -> int:
    """Index just past the JSON value starting at ``index``, or -1 if it is cut short."""
    if index >= len(text):
        return -1
    if text[index] == '"':
        end = _string_end(text, index)
        return -1 if end < 0 else end + 1
    if text[index] in "{[":
        depth = 0
        while index < len(text):
            char = text[index]
            if char == '"':
                index = _string_end(text, index)
                if index < 0:
                    return -1
            elif char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
                if depth == 0:
                    return index + 1
            index += 1
        return -1
    end = index
    while end < len(text) and text[end] not in ",}] \t\r\n":
        end += 1
    return end if end < len(text) else -1

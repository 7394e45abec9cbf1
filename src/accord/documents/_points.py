"""Places in a text, in code points, and their ACP spelling in UTF-16, UTF-8 or UTF-32 units.

A :class:`Point` is a line and a column in code points (a Python ``str`` index into the line's
text): what code works with. ACP's ``Position`` counts the column in the units of the position
encoding the two sides negotiated (``utf-16`` by default, as LSP 3.17). :func:`column_of` and
:func:`units_of` convert within one line; a column past the end of the line means its end
(LSP), and a unit offset that falls inside one character (between the two halves of a UTF-16
surrogate pair, inside a UTF-8 sequence) is refused with a :class:`DocumentError`, never
rounded.

Part of :mod:`accord.documents`; below it only :mod:`accord.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, final

from ..errors import InvalidParams

__all__ = (
    "POSITION_ENCODINGS",
    "DocumentError",
    "DocumentErrorReason",
    "Point",
    "PositionEncoding",
    "Span",
    "TextEdit",
    "column_of",
    "units_of",
)

PositionEncoding: TypeAlias = Literal["utf-16", "utf-8", "utf-32"]
"""How a position's ``character`` counts: UTF-16 code units (the default), UTF-8 bytes, or code
points (``utf-32``)."""

POSITION_ENCODINGS: Final[tuple[PositionEncoding, ...]] = ("utf-16", "utf-32", "utf-8")
"""Every position encoding, the default first."""

DocumentErrorReason: TypeAlias = Literal[
    "line_out_of_range",
    "column_out_of_range",
    "inside_character",
    "range_reversed",
    "document_too_large",
    "unknown_encoding",
]
"""``data.reason`` of a :class:`DocumentError`."""

_ASTRAL: Final = "\U00010000"


class DocumentError(InvalidParams):
    """A position, range or change that does not fit the document (-32602).

    ``data`` holds ``reason`` (:data:`DocumentErrorReason`) and what was wrong (the line, the
    offending offset, the document's size). Raised before anything changes.
    """

    def __init__(self, message: str, reason: DocumentErrorReason, **details: Any) -> None:
        super().__init__(message, {"reason": reason, **details})

    @property
    def reason(self) -> DocumentErrorReason:
        """Why the position or change was refused."""
        data: dict[str, Any] = self.data
        reason: DocumentErrorReason = data["reason"]
        return reason


@final
@dataclass(frozen=True, slots=True, order=True)
class Point:
    """A place in a document: a zero-based line and a column in code points.

    Attributes:
        line: The line, from 0.
        column: The code point offset in the line's text, from 0 (at most its length).
    """

    line: int
    column: int


@final
@dataclass(frozen=True, slots=True)
class Span:
    """The text between two points (``start`` inclusive, ``end`` exclusive; empty if equal).

    Attributes:
        start: Where it begins.
        end: Where it ends (not before ``start``).
    """

    start: Point
    end: Point

    @classmethod
    def at(cls, point: Point) -> Span:
        """The empty span at ``point`` (an insertion there)."""
        return cls(point, point)

    @property
    def empty(self) -> bool:
        """Whether the span holds no text."""
        return self.start == self.end


@final
@dataclass(frozen=True, slots=True)
class TextEdit:
    """Replace the text of ``span`` (code points of the document it is for) by ``new_text``.

    The one value of an edit both sides use: an engine's next edit suggestion
    (``accord.engines.SuggestedEdit``) and a suggestion the client received
    (``accord.client.Suggestion``).

    Attributes:
        span: The text replaced (empty: an insertion at its start).
        new_text: What goes there.
    """

    span: Span
    new_text: str


_KNOWN: Final = frozenset(POSITION_ENCODINGS)


def _check_encoding(encoding: str) -> None:
    if encoding not in _KNOWN:
        raise DocumentError(
            f"unknown position encoding {encoding!r} (one of {', '.join(POSITION_ENCODINGS)})",
            "unknown_encoding",
            encoding=encoding,
        )


def column_of(text: str, units: int, encoding: PositionEncoding, *, line: int = 0) -> int:
    """The code point column of ``units`` (a position's ``character``) in a line's ``text``.

    ``text`` is the line without its line break. Past the end of the line it is the line's end.

    Raises:
        DocumentError: ``units`` falls inside a character (``inside_character``), or the
            encoding is unknown.
    """
    _check_encoding(encoding)
    if encoding == "utf-32" or text.isascii():
        return min(units, len(text))
    if encoding == "utf-16" and max(text) < _ASTRAL:
        return min(units, len(text))  # no surrogate pairs: one unit per code point
    utf8 = encoding == "utf-8"
    count = 0
    for index, char in enumerate(text):
        if count >= units:
            return index
        code = ord(char)
        if code < 0x80 or (not utf8 and code <= 0xFFFF):
            count += 1
            continue
        width = (2 if code <= 0x7FF else 3 if code <= 0xFFFF else 4) if utf8 else 2
        if count + width > units:
            raise DocumentError(
                f"position {line}:{units} ({encoding}) falls inside the character "
                f"U+{code:04X} at column {index} of line {line}",
                "inside_character",
                line=line,
                character=units,
                encoding=encoding,
            )
        count += width
    return len(text)


def units_of(text: str, column: int, encoding: PositionEncoding) -> int:
    """How many ``encoding`` units the first ``column`` code points of ``text`` take.

    Raises:
        DocumentError: the encoding is unknown.
    """
    _check_encoding(encoding)
    if encoding == "utf-32" or text.isascii():
        return column
    head = text[:column]
    if encoding == "utf-16":
        return len(head.encode("utf-16-le", "surrogatepass")) // 2
    return len(head.encode("utf-8", "surrogatepass"))

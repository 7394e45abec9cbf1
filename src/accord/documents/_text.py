"""A text document as an editor holds it: a line array, changed exactly, cheaply, atomically.

:class:`TextDocument` keeps its text as a list of lines, each with its line break (``\\n``,
``\\r\\n`` or a lone ``\\r``: the breaks LSP counts; nothing else splits a line) and the last
one without. A change replaces the text of a :class:`~._points.Span` and touches only the
lines it spans: the line array is patched in place (a list slice assignment: moving pointers,
never copying text), so typing into a 10,000-line document costs the length of one line, not
of the document. A break joined or split by a change is seen as the text would be read again
from scratch: ``\\r`` followed by an inserted ``\\n`` becomes one ``\\r\\n`` line break.

ACP changes (``TextDocumentContentChangeEvent``: a range in the negotiated position encoding,
or no range for the whole text) are applied by :meth:`TextDocument.apply_changes`, in order,
all or nothing: a change that does not fit (a line past the end, an offset inside a
character, a range whose end is before its start, a document growing past its limit) raises
:class:`~._points.DocumentError` and the document is left exactly as it was. Each applied
change is reported as a :class:`LineChange` (the lines before and after), which is what an
edit history is made of.

Part of :mod:`accord.documents`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, final

from ..schema import Position, Range, TextDocumentContentChangeEvent
from ._points import DocumentError, Point, PositionEncoding, Span, column_of, units_of

__all__ = ("DEFAULT_MAX_CHARS", "LineChange", "TextDocument", "split_lines")

DEFAULT_MAX_CHARS: Final = 32 * 1024 * 1024
"""The largest document kept by default, in code points (32 Mi: more than any source file,
less than what would let one client exhaust an agent's memory)."""

#: Split points: after every ``\n``, and after a ``\r`` not followed by ``\n``.
_BREAKS: Final = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")
_BREAK_CHARS: Final = ("\n", "\r")


def split_lines(text: str) -> list[str]:
    """``text`` as lines, each with its break; the last has none (it may be empty).

    ``"a\\nb"`` -> ``["a\\n", "b"]``; ``"a\\r\\n"`` -> ``["a\\r\\n", ""]``; ``""`` -> ``[""]``.
    """
    if "\n" not in text and "\r" not in text:
        return [text]
    lines = _BREAKS.split(text)
    if lines[-1] != "" and lines[-1].endswith(_BREAK_CHARS):  # pragma: no cover - by the regex
        lines.append("")
    return lines


def _content(line: str) -> str:
    """A line's text without its break."""
    if line.endswith("\n"):
        return line[:-2] if line.endswith("\r\n") else line[:-1]
    if line.endswith("\r"):
        return line[:-1]
    return line


@final
@dataclass(frozen=True, slots=True)
class LineChange:
    """One applied change, by whole lines: what lines ``first ...`` held, and hold now.

    Attributes:
        first: The first line the change touched.
        before: The text of the lines it replaced (without breaks).
        after: The text of the lines that replaced them (without breaks).
    """

    first: int
    before: tuple[str, ...]
    after: tuple[str, ...]


class TextDocument:
    """The text of one document, as lines (module docstring).

    Args:
        text: The initial text.
        max_chars: The most code points the document may hold.

    Raises:
        DocumentError: ``text`` is longer than ``max_chars`` (``document_too_large``).
    """

    __slots__ = ("_chars", "_lines", "max_chars")

    def __init__(self, text: str = "", *, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.max_chars = max_chars
        self._check_size(len(text))
        self._lines: list[str] = split_lines(text)
        self._chars = len(text)

    def __repr__(self) -> str:
        return f"TextDocument(lines={len(self._lines)}, chars={self._chars})"

    # ------------------------------------------------------------------ reading

    @property
    def text(self) -> str:
        """The whole text (joined on each call: prefer :meth:`line` for a part)."""
        return "".join(self._lines)

    @property
    def line_count(self) -> int:
        """How many lines: one more than the line breaks."""
        return len(self._lines)

    @property
    def char_count(self) -> int:
        """How many code points the text holds."""
        return self._chars

    @property
    def end(self) -> Point:
        """The point after the last character."""
        last = len(self._lines) - 1
        return Point(last, len(self._lines[last]))

    def line(self, index: int) -> str:
        """The text of line ``index`` without its break.

        Raises:
            DocumentError: there is no such line.
        """
        return _content(self._lines[self._line_index(index)])

    def lines(self, start: int, stop: int) -> list[str]:
        """The texts of lines ``start`` to ``stop - 1`` (clipped to the document)."""
        start = max(start, 0)
        return [_content(line) for line in self._lines[start : max(stop, start)]]

    def slice(self, span: Span) -> str:
        """The text of ``span`` (points as :meth:`check_span` takes them)."""
        start, end = self.check_span(span)
        if start.line == end.line:
            return self._lines[start.line][start.column : end.column]
        parts = [self._lines[start.line][start.column :]]
        parts.extend(self._lines[start.line + 1 : end.line])
        parts.append(self._lines[end.line][: end.column])
        return "".join(parts)

    # ------------------------------------------------------------------ positions

    def _line_index(self, line: int) -> int:
        if not 0 <= line < len(self._lines):
            raise DocumentError(
                f"line {line} is past the end of the document (lines 0 to {len(self._lines) - 1})",
                "line_out_of_range",
                line=line,
                lines=len(self._lines),
            )
        return line

    def check_point(self, point: Point) -> Point:
        """``point`` with its column clamped to its line's end.

        Raises:
            DocumentError: the line is past the end (``line_out_of_range``).
        """
        index = self._line_index(point.line)
        length = len(_content(self._lines[index]))
        if point.column > length:
            return Point(point.line, length)
        if point.column < 0:
            raise DocumentError(
                f"column {point.column} of line {point.line} is negative",
                "column_out_of_range",
                line=point.line,
                column=point.column,
            )
        return point

    def check_span(self, span: Span) -> tuple[Point, Point]:
        """The checked, clamped ends of ``span``.

        Raises:
            DocumentError: an end is past the document, or the end is before the start
                (``range_reversed``).
        """
        start, end = self.check_point(span.start), self.check_point(span.end)
        if end < start:
            raise DocumentError(
                f"the range ends ({end.line}:{end.column}) before it starts "
                f"({start.line}:{start.column})",
                "range_reversed",
                start={"line": start.line, "column": start.column},
                end={"line": end.line, "column": end.column},
            )
        return start, end

    def point_of(self, position: Position, encoding: PositionEncoding = "utf-16") -> Point:
        """The point of an ACP ``position`` counted in ``encoding`` (past a line's end: its end).

        Raises:
            DocumentError: the line is past the end, or the offset falls inside a character.
        """
        line = self._line_index(position.line)
        text = _content(self._lines[line])
        return Point(line, column_of(text, position.character, encoding, line=line))

    def span_of(self, range_: Range, encoding: PositionEncoding = "utf-16") -> Span:
        """The span of an ACP ``range`` (see :meth:`point_of`; the end may not precede the
        start).

        Raises:
            DocumentError: as :meth:`point_of`, or ``range_reversed``.
        """
        span = Span(self.point_of(range_.start, encoding), self.point_of(range_.end, encoding))
        self.check_span(span)
        return span

    def position_of(self, point: Point, encoding: PositionEncoding = "utf-16") -> Position:
        """The ACP ``Position`` of ``point`` counted in ``encoding``.

        Raises:
            DocumentError: the line is past the end.
        """
        checked = self.check_point(point)
        text = _content(self._lines[checked.line])
        return Position(line=checked.line, character=units_of(text, checked.column, encoding))

    def range_of(self, span: Span, encoding: PositionEncoding = "utf-16") -> Range:
        """The ACP ``Range`` of ``span`` counted in ``encoding``."""
        start, end = self.check_span(span)
        return Range(start=self.position_of(start, encoding), end=self.position_of(end, encoding))

    # ------------------------------------------------------------------ changing

    def _check_size(self, chars: int) -> None:
        if chars > self.max_chars:
            raise DocumentError(
                f"the document would hold {chars} characters; the limit is {self.max_chars}",
                "document_too_large",
                chars=chars,
                limit=self.max_chars,
            )

    def _replace(self, start: Point, end: Point, text: str) -> tuple[int, list[str], int]:
        """Replace checked ``start``-``end`` by ``text``: (first line, the old lines, how many
        new ones), so that it can be undone."""
        lines = self._lines
        first, last = start.line, end.line
        segment = lines[first][: start.column] + text + lines[last][end.column :]
        if first > 0 and segment.startswith("\n") and lines[first - 1].endswith("\r"):
            first -= 1  # a "\r" ending the line before and the "\n" now after it: one break
            segment = lines[first] + segment
        new = split_lines(segment)
        if last + 1 < len(lines):
            new.pop()  # the segment ends with the break of `last`; the next line follows
        old = lines[first : last + 1]
        lines[first : last + 1] = new
        return first, old, len(new)

    def replace(self, span: Span, text: str) -> LineChange:
        """Replace the text of ``span`` by ``text``.

        Raises:
            DocumentError: ``span`` does not fit, or the document would grow past its limit;
                nothing changed.
        """
        start, end = self.check_span(span)
        removed = self._removed_chars(start, end)
        self._check_size(self._chars - removed + len(text))
        first, old, added = self._replace(start, end, text)
        self._chars += len(text) - removed
        after = tuple(_content(line) for line in self._lines[first : first + added])
        return LineChange(first, tuple(_content(line) for line in old), after)

    def _removed_chars(self, start: Point, end: Point) -> int:
        if start.line == end.line:
            return end.column - start.column
        lines = self._lines
        between = sum(len(line) for line in lines[start.line + 1 : end.line])
        return len(lines[start.line]) - start.column + between + end.column

    def set_text(self, text: str) -> LineChange:
        """Replace the whole text.

        Raises:
            DocumentError: ``text`` is longer than the limit; nothing changed.
        """
        return self.replace(Span(Point(0, 0), self.end), text)

    def apply_changes(
        self,
        changes: Sequence[TextDocumentContentChangeEvent],
        encoding: PositionEncoding = "utf-16",
    ) -> list[LineChange]:
        """Apply ACP content changes in order, each against the text the ones before left.

        A change without a range replaces the whole text. All or nothing: when one does not
        fit, those before it are undone and the error raised.

        Raises:
            DocumentError: a change does not fit (its reason says why); nothing changed.
        """
        undo: list[tuple[int, list[str], int, int]] = []
        applied: list[LineChange] = []
        try:
            for change in changes:
                if change.range is None:
                    start, end = Point(0, 0), self.end
                else:
                    span = self.span_of(change.range, encoding)
                    start, end = span.start, span.end
                removed = self._removed_chars(start, end)
                self._check_size(self._chars - removed + len(change.text))
                chars = self._chars
                first, old, added = self._replace(start, end, change.text)
                self._chars += len(change.text) - removed
                undo.append((first, old, added, chars))
                after = tuple(_content(line) for line in self._lines[first : first + added])
                applied.append(LineChange(first, tuple(_content(line) for line in old), after))
        except DocumentError:
            for first, old, added, chars in reversed(undo):
                self._lines[first : first + added] = old
                self._chars = chars
            raise
        return applied

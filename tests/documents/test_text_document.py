"""Text documents: lines, positions in every ACP encoding, changes applied exactly or not at all.

The property at the end is the contract in one sentence: any sequence of changes, given as
ACP ranges in any encoding, leaves the document equal to the same edits applied to a plain
string, with the lines LSP would count in it.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accord.documents import (
    DocumentError,
    LineChange,
    Point,
    PositionEncoding,
    Span,
    TextDocument,
    column_of,
    split_lines,
    units_of,
)
from accord.schema import Position, Range, TextDocumentContentChangeEvent

EMOJI = "\N{GRINNING FACE}"  # U+1F600: two UTF-16 units, four UTF-8 bytes
E_ACUTE = "\N{LATIN SMALL LETTER E WITH ACUTE}"  # two UTF-8 bytes, one UTF-16 unit


def _range(a: tuple[int, int], b: tuple[int, int]) -> Range:
    return Range(start=Position(line=a[0], character=a[1]), end=Position(line=b[0], character=b[1]))


def _change(a: tuple[int, int], b: tuple[int, int], text: str) -> TextDocumentContentChangeEvent:
    return TextDocumentContentChangeEvent(range=_range(a, b), text=text)


# --------------------------------------------------------------------------- lines


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", [""]),
        ("a", ["a"]),
        ("a\n", ["a\n", ""]),
        ("a\nb", ["a\n", "b"]),
        ("a\r\nb\rc\n", ["a\r\n", "b\r", "c\n", ""]),
        ("\r\r\n\n", ["\r", "\r\n", "\n", ""]),
        ("a\u2028b\x0cc", ["a\u2028b\x0cc"]),  # only \n, \r\n and \r break a line (LSP)
    ],
)
def test_lines_are_split_where_lsp_splits_them(text: str, lines: list[str]) -> None:
    assert split_lines(text) == lines
    document = TextDocument(text)
    assert document.line_count == len(lines)
    assert document.text == text
    assert document.char_count == len(text)


def test_a_line_is_read_without_its_break() -> None:
    document = TextDocument("one\r\ntwo\rthree\n")
    assert [document.line(i) for i in range(document.line_count)] == ["one", "two", "three", ""]
    assert document.lines(1, 3) == ["two", "three"]
    assert document.end == Point(3, 0)
    with pytest.raises(DocumentError) as caught:
        document.line(4)
    assert caught.value.reason == "line_out_of_range"
    assert caught.value.code == -32602


# --------------------------------------------------------------------------- positions


@pytest.mark.parametrize(
    ("encoding", "units", "column"),
    [
        ("utf-16", 0, 0),
        ("utf-16", 1, 1),  # after "a"
        ("utf-16", 3, 2),  # after the emoji: two units
        ("utf-16", 4, 3),
        ("utf-8", 5, 2),  # "a" + 4 bytes
        ("utf-8", 7, 3),  # + é: 2 bytes
        ("utf-32", 2, 2),
        ("utf-32", 3, 3),
    ],
)
def test_columns_count_the_negotiated_units(
    encoding: PositionEncoding, units: int, column: int
) -> None:
    line = f"a{EMOJI}{E_ACUTE}z"
    assert column_of(line, units, encoding) == column
    assert units_of(line, column, encoding) == units


@pytest.mark.parametrize(
    ("encoding", "units"), [("utf-16", 2), ("utf-8", 2), ("utf-8", 4), ("utf-8", 6)]
)
def test_an_offset_inside_a_character_is_refused(encoding: PositionEncoding, units: int) -> None:
    line = f"a{EMOJI}{E_ACUTE}z"
    with pytest.raises(DocumentError) as caught:
        column_of(line, units, encoding, line=7)
    assert caught.value.reason == "inside_character"
    assert caught.value.data["line"] == 7
    assert "U+1F600" in caught.value.message or "U+00E9" in caught.value.message


def test_past_the_end_of_a_line_is_its_end_not_the_next_line() -> None:
    document = TextDocument(f"ab{EMOJI}\r\nnext")
    assert document.point_of(Position(line=0, character=99)) == Point(0, 3)
    assert document.point_of(Position(line=0, character=99), "utf-8") == Point(0, 3)
    # the break is not addressable: inserting past the end inserts before "\r\n"
    document.apply_changes([_change((0, 50), (0, 50), "!")])
    assert document.text == f"ab{EMOJI}!\r\nnext"


def test_positions_convert_both_ways() -> None:
    document = TextDocument(f"x{EMOJI}y\n{E_ACUTE}{EMOJI}")
    for encoding in ("utf-16", "utf-8", "utf-32"):
        for line in range(document.line_count):
            for column in range(len(document.line(line)) + 1):
                position = document.position_of(Point(line, column), encoding)
                assert document.point_of(position, encoding) == Point(line, column)
    assert document.range_of(Span(Point(0, 1), Point(1, 2))).to_wire() == {
        "start": {"line": 0, "character": 1},
        "end": {"line": 1, "character": 3},
    }


def test_a_line_past_the_end_and_a_reversed_range_are_refused() -> None:
    document = TextDocument("a\nb")
    with pytest.raises(DocumentError) as past:
        document.point_of(Position(line=2, character=0))
    assert past.value.reason == "line_out_of_range"
    assert past.value.data == {"reason": "line_out_of_range", "line": 2, "lines": 2}
    with pytest.raises(DocumentError) as reversed_:
        document.span_of(_range((1, 1), (0, 0)))
    assert reversed_.value.reason == "range_reversed"
    with pytest.raises(DocumentError) as negative:
        document.check_point(Point(0, -1))
    assert negative.value.reason == "column_out_of_range"


def test_an_unknown_encoding_is_refused() -> None:
    with pytest.raises(DocumentError) as caught:
        column_of("abc", 1, "utf-7")  # type: ignore[arg-type]
    assert caught.value.reason == "unknown_encoding"


# --------------------------------------------------------------------------- changes


def test_typing_inserting_lines_and_joining_them() -> None:
    document = TextDocument('fn main() {\n    println!("hello");\n}\n')
    document.apply_changes([_change((1, 4), (1, 4), "let x = 42;\n    ")])
    assert document.text == 'fn main() {\n    let x = 42;\n    println!("hello");\n}\n'
    [joined] = document.apply_changes([_change((1, 15), (2, 4), " ")])
    assert document.text == 'fn main() {\n    let x = 42; println!("hello");\n}\n'
    assert joined == LineChange(
        first=1,
        before=("    let x = 42;", '    println!("hello");'),
        after=('    let x = 42; println!("hello");',),
    )
    full = document.apply_changes([TextDocumentContentChangeEvent(text="new\ntext")])
    assert document.text == "new\ntext"
    assert full[0].first == 0 and full[0].after == ("new", "text")


def test_changes_apply_in_order_each_on_the_text_before_it() -> None:
    document = TextDocument("abc")
    document.apply_changes(
        [_change((0, 0), (0, 0), "X\n"), _change((1, 3), (1, 3), "Y"), _change((0, 0), (0, 1), "")]
    )
    assert document.text == "\nabcY"


@pytest.mark.parametrize(
    ("text", "change", "expected", "lines"),
    [
        ("a\rb", ((1, 0), (1, 0), "\n"), "a\r\nb", 2),  # "\r" + inserted "\n": one break
        ("a\r\nb", ((0, 1), (0, 1), "\r"), "a\r\r\nb", 3),
        ("a\rb\nc", ((1, 0), (1, 1), ""), "a\r\nc", 2),  # deleting "b" joins "\r" and "\n"
        ("a\r\n\nb", ((1, 0), (2, 0), ""), "a\r\nb", 2),
        ("a", ((0, 1), (0, 1), "\r"), "a\r", 2),
        ("a\r", ((1, 0), (1, 0), "\nb"), "a\r\nb", 2),
    ],
)
def test_line_breaks_are_counted_as_in_the_new_text(
    text: str, change: tuple[tuple[int, int], tuple[int, int], str], expected: str, lines: int
) -> None:
    document = TextDocument(text)
    document.apply_changes([_change(*change)])
    assert document.text == expected
    assert document.line_count == lines == len(split_lines(expected))


def test_surrogate_pairs_in_changes() -> None:
    document = TextDocument(f"{EMOJI}{EMOJI}")
    document.apply_changes([_change((0, 2), (0, 4), "x")])  # replaces the second emoji
    assert document.text == f"{EMOJI}x"
    with pytest.raises(DocumentError) as caught:
        document.apply_changes([_change((0, 1), (0, 1), "y")])
    assert caught.value.reason == "inside_character"
    assert document.text == f"{EMOJI}x"


def test_a_change_that_does_not_fit_leaves_the_document_as_it_was() -> None:
    document = TextDocument("one\ntwo\nthree")
    before = document.text
    with pytest.raises(DocumentError) as caught:
        document.apply_changes(
            [
                _change((0, 0), (0, 3), "ONE\nAND A HALF"),  # fits
                TextDocumentContentChangeEvent(text="all new\n"),  # fits
                _change((5, 0), (5, 0), "x"),  # line 5: past the end
            ]
        )
    assert caught.value.reason == "line_out_of_range"
    assert document.text == before
    assert document.line_count == 3
    assert document.char_count == len(before)


def test_a_document_may_not_grow_past_its_limit() -> None:
    with pytest.raises(DocumentError) as too_big:
        TextDocument("x" * 11, max_chars=10)
    assert too_big.value.reason == "document_too_large"
    assert too_big.value.data["limit"] == 10
    document = TextDocument("x" * 8, max_chars=10)
    document.apply_changes([_change((0, 0), (0, 2), "yyyy")])  # 8 - 2 + 4 = 10: fits
    with pytest.raises(DocumentError):
        document.apply_changes([_change((0, 0), (0, 0), "z")])
    with pytest.raises(DocumentError):
        document.set_text("w" * 11)
    assert document.text == "yyyy" + "x" * 6


def test_slicing_a_span() -> None:
    document = TextDocument("ab\r\ncd\nef")
    assert document.slice(Span(Point(0, 1), Point(2, 1))) == "b\r\ncd\ne"
    assert document.slice(Span(Point(1, 0), Point(1, 9))) == "cd"


# --------------------------------------------------------------------------- the property


_BREAK = re.compile(r"\r\n|\r|\n")


def _line_starts(text: str) -> list[tuple[int, int]]:
    """(start, end of content) of each line of ``text``, found by scanning for breaks."""
    lines: list[tuple[int, int]] = []
    start = 0
    for found in _BREAK.finditer(text):
        lines.append((start, found.start()))
        start = found.end()
    lines.append((start, len(text)))
    return lines


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text)


def _position(text: str, offset: int, encoding: str, past_end: int) -> Position:
    """The position of string offset ``offset`` (on a line's text), maybe past the line end."""
    for line, (start, end) in enumerate(_line_starts(text)):
        if start <= offset <= end:
            units = _units(text[start:offset], encoding)
            if offset == end:
                units += past_end
            return Position(line=line, character=units)
    raise AssertionError(f"offset {offset} is inside a line break")


def _addressable(text: str) -> list[int]:
    """Offsets that are on a line's text (not between a "\\r" and its "\\n")."""
    return [o for s, e in _line_starts(text) for o in range(s, e + 1)]


ALPHABET = st.sampled_from(["a", "b", " ", "\n", "\r", "\r\n", EMOJI, E_ACUTE, "\t", "z"])


@st.composite
def _edits(draw: st.DrawFn) -> tuple[str, PositionEncoding, list[tuple[int, int, str, int, int]]]:
    text = "".join(draw(st.lists(ALPHABET, max_size=30)))
    encoding: PositionEncoding = draw(st.sampled_from(["utf-16", "utf-8", "utf-32"]))
    edits: list[tuple[int, int, str, int, int]] = []
    current = text
    for _ in range(draw(st.integers(1, 12))):
        offsets = _addressable(current)
        a, b = sorted((draw(st.sampled_from(offsets)), draw(st.sampled_from(offsets))))
        new = "".join(draw(st.lists(ALPHABET, max_size=5)))
        past_a, past_b = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        edits.append((a, b, new, past_a, past_b))
        current = current[:a] + new + current[b:]
    return text, encoding, edits


@settings(max_examples=300, deadline=None)
@given(case=_edits())
def test_random_changes_equal_the_same_edits_on_a_plain_string(
    case: tuple[str, PositionEncoding, list[tuple[int, int, str, int, int]]],
) -> None:
    text, encoding, edits = case
    document = TextDocument(text)
    plain = text
    for a, b, new, past_a, past_b in edits:
        change = TextDocumentContentChangeEvent(
            range=Range(
                start=_position(plain, a, encoding, past_a),
                end=_position(plain, b, encoding, past_b),
            ),
            text=new,
        )
        document.apply_changes([change], encoding)
        plain = plain[:a] + new + plain[b:]
        assert document.text == plain
        assert document.line_count == len(_line_starts(plain))
        assert document.char_count == len(plain)
    assert [document.line(i) for i in range(document.line_count)] == [
        plain[s:e] for s, e in _line_starts(plain)
    ]

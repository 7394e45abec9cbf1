"""NDJSON framing with no I/O: ``encode_message``, ``decode_line`` and ``LineDecoder``."""

from __future__ import annotations

import inspect

import orjson
import pytest

from accord.transports import (
    MAX_MESSAGE_BYTES,
    LineDecoder,
    MalformedFrame,
    decode_line,
    encode_message,
)

MESSAGES = [
    {"jsonrpc": "2.0", "id": 0, "method": "a", "params": {"text": "caf\u00e9 \U0001f600"}},
    {"jsonrpc": "2.0", "method": "b", "params": ["x\ny", "\u2028"]},
    {"jsonrpc": "2.0", "id": "s", "result": {}},
]
STREAM = b"".join(encode_message(message) for message in MESSAGES)


def feed_all(decoder: LineDecoder, *chunks: bytes) -> list[bytes | MalformedFrame]:
    frames: list[bytes | MalformedFrame] = []
    for chunk in chunks:
        frames.extend(decoder.feed(chunk))
    return frames


def test_default_limit_is_at_least_64_mib() -> None:
    assert MAX_MESSAGE_BYTES >= 64 * 1024 * 1024
    default = inspect.signature(LineDecoder).parameters["max_message_bytes"].default
    assert default == MAX_MESSAGE_BYTES


# ----------------------------------------------------------------- encode_message / decode_line


def test_encode_is_one_utf8_line() -> None:
    line = encode_message({"text": "a\nb\r\n\u00e9\u2028", "n": 0})
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1, "a newline inside a string must be escaped"
    assert "\u00e9".encode() in line, "non-ASCII travels as raw UTF-8"
    assert decode_line(line[:-1]) == {"text": "a\nb\r\n\u00e9\u2028", "n": 0}


def test_encode_rejects_what_json_cannot_carry() -> None:
    with pytest.raises(TypeError):
        encode_message({"value": object()})


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"a": 1}', {"a": 1}),
        (b'{"a": 1}\r', {"a": 1}),
        (b'  {"a": [1, 2]}  ', {"a": [1, 2]}),
        (b"[1, 2]", [1, 2]),
        (b'"text"', "text"),
        (b"null", None),
        ('{"k": "\u00e9"}'.encode(), {"k": "\u00e9"}),
    ],
    ids=["object", "crlf", "spaces", "array", "string", "null", "utf8"],
)
def test_decode_line_valid(line: bytes, expected: object) -> None:
    assert decode_line(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b'{"jsonrpc": "2.0", "id": 1',
        b'{"a": 1} {"b": 2}',
        b"{'single': 'quotes'}",
        b"NaN",
        b'{"a": 1,}',
        b"\xff\xfe",
        b'{"text": "\\ud800", "n": NaN}',
        b"[" * 2000,
    ],
    ids=[
        "text",
        "truncated",
        "two-values",
        "single-quotes",
        "nan",
        "trailing-comma",
        "not-utf8",
        "lone-surrogate-and-nan",
        "too-deep",
    ],
)
def test_decode_line_invalid_is_parse_error(line: bytes) -> None:
    frame = decode_line(line)
    assert isinstance(frame, MalformedFrame)
    assert frame.code == -32700
    assert frame.reason.startswith("invalid JSON")


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (b'{"text": "\xc3"}', {"text": "\ufffd"}),
        (b'"\xed\xa0\x80"', "\ufffd\ufffd\ufffd"),
        (b'"\\ud800"', "\ufffd"),
        (b'{"\\udfff": ["ab\\ud83d", "\\ud83d\\ude00"]}', {"\ufffd": ["ab\ufffd", "\U0001f600"]}),
    ],
    ids=["cut-utf8-sequence", "utf8-surrogate", "escaped-lone-surrogate", "nested"],
)
def test_decode_line_reads_broken_text_lossily(line: bytes, value: object) -> None:
    """As JavaScript's JSON.parse and TextDecoder do: U+FFFD, not a lost message."""
    assert decode_line(line) == value


# ----------------------------------------------------------------- LineDecoder


def test_whole_stream_in_one_feed() -> None:
    decoder = LineDecoder()
    frames = decoder.feed(STREAM)
    assert [decode_line(f) for f in frames if isinstance(f, bytes)] == MESSAGES
    assert len(frames) == len(MESSAGES)
    assert decoder.buffered_bytes == 0
    assert decoder.end_of_stream() == []


@pytest.mark.parametrize("split", range(1, len(STREAM)))
def test_split_at_every_byte_position(split: int) -> None:
    decoder = LineDecoder()
    frames = feed_all(decoder, STREAM[:split], STREAM[split:])
    frames += decoder.end_of_stream()
    assert [decode_line(f) for f in frames if isinstance(f, bytes)] == MESSAGES


def test_one_byte_at_a_time() -> None:
    decoder = LineDecoder()
    frames = feed_all(decoder, *(STREAM[i : i + 1] for i in range(len(STREAM))))
    assert [decode_line(f) for f in frames if isinstance(f, bytes)] == MESSAGES
    assert decoder.buffered_bytes == 0


def test_buffered_bytes_counts_the_incomplete_line() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b'{"a":') == []
    assert decoder.buffered_bytes == 5
    assert decoder.feed(b" 1}\n{") == [b'{"a": 1}']
    assert decoder.buffered_bytes == 1


def test_crlf_line_endings() -> None:
    decoder = LineDecoder()
    frames = decoder.feed(b'{"a": 1}\r\n{"b": 2}\r\n')
    assert [decode_line(f) for f in frames if isinstance(f, bytes)] == [{"a": 1}, {"b": 2}]


def test_crlf_split_between_cr_and_lf() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b'{"a": 1}\r') == []
    frames = decoder.feed(b"\n")
    assert [decode_line(f) for f in frames if isinstance(f, bytes)] == [{"a": 1}]


@pytest.mark.parametrize(
    "noise", [b"\n", b"\n\n\n", b"   \n", b"\r\n", b"\t \r\n", b"\n \n"], ids=repr
)
def test_blank_lines_are_not_frames(noise: bytes) -> None:
    decoder = LineDecoder()
    frames = decoder.feed(noise + b'{"a": 1}\n' + noise + b'{"b": 2}\n' + noise)
    assert frames == [b'{"a": 1}', b'{"b": 2}']
    assert decoder.end_of_stream() == []


def test_final_line_without_newline_counts_at_eof() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b'{"a": 1}\n{"b": 2}') == [b'{"a": 1}']
    assert decoder.end_of_stream() == [b'{"b": 2}']
    assert decoder.buffered_bytes == 0
    assert decoder.end_of_stream() == [], "end_of_stream is idempotent"


def test_incomplete_final_line_is_a_parse_error_not_dropped() -> None:
    decoder = LineDecoder()
    decoder.feed(b'{"jsonrpc": "2.0", "id": 1, "meth')
    (frame,) = decoder.end_of_stream()
    assert isinstance(frame, bytes)
    malformed = decode_line(frame)
    assert isinstance(malformed, MalformedFrame)
    assert malformed.code == -32700


def test_whitespace_tail_at_eof_is_not_a_frame() -> None:
    decoder = LineDecoder()
    decoder.feed(b'{"a": 1}\n  \r')
    assert decoder.end_of_stream() == []


def test_non_utf8_line_is_framed_then_fails_to_parse() -> None:
    decoder = LineDecoder()
    frames = decoder.feed(b'\xff\xfe{"x"}\n{"a": 1}\n')
    assert len(frames) == 2
    bad, good = (decode_line(f) for f in frames if isinstance(f, bytes))
    assert isinstance(bad, MalformedFrame)
    assert bad.code == -32700
    assert good == {"a": 1}


def test_multibyte_character_split_across_feeds() -> None:
    line = encode_message({"t": "\U0001f600\u00e9"})
    emoji_start = line.index(b"\xf0")
    for split in range(emoji_start, emoji_start + 6):
        decoder = LineDecoder()
        frames = feed_all(decoder, line[:split], line[split:])
        assert [decode_line(f) for f in frames if isinstance(f, bytes)] == [
            {"t": "\U0001f600\u00e9"}
        ]


# ----------------------------------------------------------------- the size limit


def oversized(frame: bytes | MalformedFrame) -> MalformedFrame:
    assert isinstance(frame, MalformedFrame), f"expected an oversized marker, got {frame!r}"
    assert frame.code == -32600
    assert "exceeds the limit of 10 bytes" in frame.reason
    return frame


def test_line_at_the_limit_passes() -> None:
    decoder = LineDecoder(max_message_bytes=10)
    assert decoder.feed(b"[1,2,3,45]\n") == [b"[1,2,3,45]"]


def test_line_over_the_limit_in_one_feed() -> None:
    decoder = LineDecoder(max_message_bytes=10)
    frames = decoder.feed(b"[1,2,3,456]\n[1]\n")
    assert "message of 11 bytes" in oversized(frames[0]).reason
    assert frames[1:] == [b"[1]"], "the next line still works"


def test_line_over_the_limit_across_feeds_is_not_buffered() -> None:
    decoder = LineDecoder(max_message_bytes=10)
    assert decoder.feed(b"[1,2,3,4") == []
    assert decoder.buffered_bytes == 8
    frames: list[bytes | MalformedFrame] = []
    for _ in range(1000):
        frames += decoder.feed(b",0" * 50)
        assert decoder.buffered_bytes <= 10, "an oversized line must not be held in memory"
    assert frames == []
    frames = decoder.feed(b"]\n[2]\n")
    assert f"message of {8 + 1000 * 100 + 1} bytes" in oversized(frames[0]).reason
    assert frames[1:] == [b"[2]"]


def test_pending_part_plus_chunk_over_the_limit() -> None:
    decoder = LineDecoder(max_message_bytes=10)
    assert decoder.feed(b"[1,2,3") == []
    frames = decoder.feed(b",4,5]\n")
    assert "message of 11 bytes" in oversized(frames[0]).reason


def test_oversized_line_between_good_lines() -> None:
    decoder = LineDecoder(max_message_bytes=10)
    frames = decoder.feed(b"[1]\n" + b"x" * 50 + b"\n[2]\n")
    assert frames[0] == b"[1]"
    oversized(frames[1])
    assert frames[2] == b"[2]"


def test_oversized_line_at_eof_without_newline() -> None:
    decoder = LineDecoder(max_message_bytes=10)
    assert decoder.feed(b"y" * 25) == []
    (frame,) = decoder.end_of_stream()
    assert "message of 25 bytes" in oversized(frame).reason
    assert decoder.end_of_stream() == []


def test_oversized_then_split_good_line() -> None:
    decoder = LineDecoder(max_message_bytes=10)
    frames = feed_all(decoder, b"z" * 30, b"z\n[3", b"]\n")
    assert len(frames) == 2
    assert "message of 31 bytes" in oversized(frames[0]).reason
    assert frames[1] == b"[3]"


def test_oversized_marker_is_never_a_silent_truncation() -> None:
    decoder = LineDecoder(max_message_bytes=10)
    line = orjson.dumps({"data": "x" * 20}) + b"\n"
    for split in range(1, len(line)):
        decoder = LineDecoder(max_message_bytes=10)
        frames = feed_all(decoder, line[:split], line[split:]) + decoder.end_of_stream()
        assert len(frames) == 1
        oversized(frames[0])

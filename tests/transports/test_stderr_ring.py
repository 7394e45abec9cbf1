"""The bounded ring that keeps the tail of a spawned agent's stderr (no processes here)."""

from __future__ import annotations

from accord.transports._subprocess import STDERR_TAIL_BYTES, _StderrRing


def test_lines_are_split_and_returned() -> None:
    ring = _StderrRing(1000)
    assert ring.feed(b"one\ntw") == ["one"]
    assert ring.feed(b"o\nthree\n") == ["two", "three"]
    assert ring.tail() == "one\ntwo\nthree"
    assert ring.total_bytes == len(b"one\ntwo\nthree\n")


def test_partial_last_line_is_in_the_tail_and_returned_at_the_end() -> None:
    ring = _StderrRing(1000)
    ring.feed(b"Traceback (most recent call last):\nValueError: bo")
    ring.feed(b"om")
    assert ring.tail().endswith("ValueError: boom")
    assert ring.finish() == ["ValueError: boom"]
    assert ring.tail().endswith("ValueError: boom")
    assert ring.finish() == []


def test_tail_is_bounded_under_a_flood() -> None:
    limit = 4096
    ring = _StderrRing(limit)
    line = b"x" * 99 + b"\n"
    for _ in range(50_000):  # 5 MB
        ring.feed(line * 10)
    ring.feed(b"the end\n")
    tail = ring.tail()
    assert len(tail) <= limit
    assert tail.endswith("the end")
    assert ring.total_bytes == 50_000 * 1000 + 8


def test_one_endless_line_is_bounded() -> None:
    limit = 1024
    ring = _StderrRing(limit)
    for _ in range(1000):
        ring.feed(b"y" * 1000)  # never a newline
    assert len(ring.tail()) <= limit
    assert ring.finish() != []
    assert len(ring.tail()) <= limit


def test_utf8_split_across_reads_decodes_whole() -> None:
    ring = _StderrRing(1000)
    data = "caf\u00e9 \U0001f600\n".encode()
    for split in range(1, len(data)):
        ring = _StderrRing(1000)
        assert ring.feed(data[:split]) == []
        assert ring.feed(data[split:]) == ["caf\u00e9 \U0001f600"]


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    ring = _StderrRing(1000)
    assert ring.feed(b"bad \xff byte\n") == ["bad \ufffd byte"]


def test_default_tail_holds_a_traceback() -> None:
    assert STDERR_TAIL_BYTES >= 16 * 1024

"""Write coalescing in ``StreamTransport``, over real OS pipes.

With ``run_writer()`` running (a ``Connection`` starts it), a burst of messages sent without
yielding is written in a few large system calls instead of one per message, while a message
sent when the pipe is idle still goes out before ``send`` returns. These tests pin down what a
user can notice: everything arrives whole and in order, far fewer writes, no added latency for
a lone message, nothing lost at close, errors surface as ``ConnectionClosed``, a peer that does
not read holds the sender back with bounded memory, and cancelling a sender mid-write never
tears a line.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from helpers.timeouts import TIMEOUT

from accord.errors import ConnectionClosed
from accord.jsonrpc import Connection
from accord.transports import (
    BackgroundWriterTransport,
    FdReceiveStream,
    FdSendStream,
    MalformedFrame,
    encode_message,
    memory_transport_pair,
)
from accord.transports import _fd as fd_module
from accord.transports import _stream as stream_module
from accord.transports._stream import BURST_WINDOW, COALESCE_BYTES, StreamTransport

pytestmark = pytest.mark.anyio


def _message(index: int, sender: int = 0, payload: str = "") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "_test/seq",
        "params": {"s": sender, "i": index, "p": payload},
    }


class _CountingOs:
    """Stands in for ``os`` inside ``accord.transports._fd``: counts ``os.write`` per fd."""

    def __init__(self) -> None:
        self.writes: Counter[int] = Counter()

    def write(self, fd: int, data: Any) -> int:
        self.writes[fd] += 1
        return os.write(fd, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


@pytest.fixture
def counting_os(monkeypatch: pytest.MonkeyPatch) -> _CountingOs:
    counting = _CountingOs()
    monkeypatch.setattr(fd_module, "os", counting)
    return counting


@dataclass
class _Pipes:
    """Two transports joined by two OS pipes, and the raw descriptors of one direction."""

    sender: StreamTransport
    peer: StreamTransport
    #: The descriptor ``sender`` writes to.
    sender_fd: int
    #: The descriptor ``peer`` reads from (non-blocking: a test may ``os.read`` it).
    peer_fd: int
    #: The descriptor ``peer`` writes to.
    peer_write_fd: int


@asynccontextmanager
async def _pipes() -> AsyncGenerator[_Pipes]:
    peer_read, sender_write = os.pipe()
    sender_read, peer_write = os.pipe()
    ends: list[StreamTransport] = []
    for read_fd, write_fd in ((sender_read, sender_write), (peer_read, peer_write)):
        reader = FdReceiveStream(read_fd)
        reader.owns_fd = True
        ends.append(StreamTransport(reader, FdSendStream(write_fd)))
    pipes = _Pipes(ends[0], ends[1], sender_write, peer_read, peer_write)
    try:
        with anyio.fail_after(TIMEOUT):
            yield pipes
    finally:
        with anyio.CancelScope(shield=True):
            # The peer first: a sender with lines queued would otherwise spend
            # CLOSE_FLUSH_TIMEOUT trying to write them to a peer that no longer reads.
            await pipes.peer.aclose()
            await pipes.sender.aclose()


async def _receive_exactly(transport: StreamTransport, count: int) -> list[Any]:
    return [await transport.receive() for _ in range(count)]


async def _expect_end(transport: StreamTransport) -> None:
    try:
        extra = await transport.receive()
    except anyio.EndOfStream:
        return
    pytest.fail(f"expected the end of the stream, received {extra!r:.200}")


# ----------------------------------------------------------------- fewer writes, same messages


async def test_a_burst_is_written_in_few_system_calls_and_arrives_in_order(
    counting_os: _CountingOs,
) -> None:
    count = 5_000
    got: list[Any] = []
    all_read = anyio.Event()
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)

        async def read_all() -> None:
            got.extend(await _receive_exactly(p.peer, count))
            all_read.set()

        tg.start_soon(read_all)
        await anyio.wait_all_tasks_blocked()
        for index in range(count):  # a tight loop: sends yield only when the pipe is full
            await p.sender.send(_message(index))
        await all_read.wait()
        tg.cancel_scope.cancel()
    assert got == [_message(index) for index in range(count)]
    assert counting_os.writes[p.sender_fd] < 100, counting_os.writes[p.sender_fd]


@pytest.mark.asyncio_only("the burst ends when the asyncio loop turns (a loop callback)")
async def test_a_slow_burst_without_yielding_is_one_write_after_the_first(
    counting_os: _CountingOs, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A streaming agent's batch of chunks: each line takes its sender longer than
    # BURST_WINDOW to build (a fake clock: a millisecond per reading), none yields between.
    clock = iter(range(10**6))
    monkeypatch.setattr(stream_module, "perf_counter", lambda: next(clock) * 1e-3)
    count = 20
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)
        await anyio.wait_all_tasks_blocked()
        for index in range(count):
            await p.sender.send(_message(index))
        assert counting_os.writes[p.sender_fd] == 1  # the first line, at once
        assert await _receive_exactly(p.peer, count) == [_message(i) for i in range(count)]
        assert counting_os.writes[p.sender_fd] == 2  # the rest in one write
        # The loop has turned since: the next line is a burst of its own, written at once.
        await p.sender.send(_message(count))
        assert counting_os.writes[p.sender_fd] == 3
        assert os.read(p.peer_fd, 65536) == encode_message(_message(count))
        tg.cancel_scope.cancel()


async def test_without_the_writer_each_message_is_its_own_write(counting_os: _CountingOs) -> None:
    count = 500  # ~30 KB: fits in the pipe, so every write succeeds whole
    async with _pipes() as p:
        for index in range(count):
            await p.sender.send(_message(index))
        assert counting_os.writes[p.sender_fd] == count
        assert await _receive_exactly(p.peer, count) == [_message(i) for i in range(count)]


async def test_a_message_sent_while_idle_is_written_before_send_returns() -> None:
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)
        for index in range(3):
            await anyio.sleep(BURST_WINDOW * 4)  # idle: nothing sent for a while
            await p.sender.send(_message(index))
            # No checkpoint since send returned: the line must already be in the pipe.
            assert os.read(p.peer_fd, 65536) == encode_message(_message(index))
        tg.cancel_scope.cancel()


async def test_a_message_sent_after_an_answer_arrived_is_written_before_send_returns() -> None:
    # A request answered faster than BURST_WINDOW: its answer was read, so the next request
    # starts a new burst and goes out at once.
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)
        for index in range(3):
            await p.sender.send(_message(index))
            assert os.read(p.peer_fd, 65536) == encode_message(_message(index))
            os.write(p.peer_write_fd, encode_message(_message(index, sender=1)))
            assert await p.sender.receive() == _message(index, sender=1)
        tg.cancel_scope.cancel()


async def test_a_send_after_the_writer_stopped_writes_what_was_queued_first() -> None:
    async with _pipes() as p:
        async with anyio.create_task_group() as tg:
            tg.start_soon(p.sender.run_writer)
            await anyio.wait_all_tasks_blocked()
            for index in range(10):  # the first goes out, the rest queue for the writer
                await p.sender.send(_message(index))
            tg.cancel_scope.cancel()  # ...which is stopped before it ran
        await p.sender.send(_message(10))
        expected = b"".join(encode_message(_message(i)) for i in range(11))
        assert os.read(p.peer_fd, 65536) == expected


async def test_run_writer_refuses_to_run_twice() -> None:
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(RuntimeError):
            await p.sender.run_writer()
        tg.cancel_scope.cancel()


async def test_pipe_transports_offer_a_background_writer_and_memory_ones_do_not() -> None:
    async with _pipes() as p:
        assert isinstance(p.sender, BackgroundWriterTransport)
    assert not isinstance(memory_transport_pair()[0], BackgroundWriterTransport)


# ----------------------------------------------------------------- ordering between senders


async def test_concurrent_senders_never_interleave_or_reorder() -> None:
    senders, per_sender = 8, 300
    # Mostly small lines (coalesced), every tenth larger than COALESCE_BYTES (a write of its
    # own, often split by a full pipe): both must keep each sender's order, whole.
    big = "b" * (COALESCE_BYTES * 2)
    next_index = [0] * senders

    def payload(index: int) -> str:
        return big if index % 10 == 0 else "s"

    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)

        async def send_many(sender: int) -> None:
            for index in range(per_sender):
                await p.sender.send(_message(index, sender, payload(index)))
                if index % 7 == 0:
                    await anyio.lowlevel.checkpoint()  # let the other senders in

        for sender in range(senders):
            tg.start_soon(send_many, sender)
        for _ in range(senders * per_sender):
            got = await p.peer.receive()
            assert not isinstance(got, MalformedFrame), f"a torn or interleaved line: {got}"
            sender, index = got["params"]["s"], got["params"]["i"]
            assert index == next_index[sender], f"sender {sender}: {index} came out of order"
            assert got == _message(index, sender, payload(index))
            next_index[sender] += 1
        tg.cancel_scope.cancel()
    assert next_index == [per_sender] * senders


# ----------------------------------------------------------------- closing


@pytest.mark.parametrize(
    "writer_stopped_first", [True, False], ids=["writer-stopped", "writer-running"]
)
async def test_lines_queued_when_the_transport_closes_are_delivered(
    writer_stopped_first: bool,
) -> None:
    count = 50  # a few KB: below COALESCE_BYTES, so they wait for the writer
    async with _pipes() as p:
        async with anyio.create_task_group() as tg:
            tg.start_soon(p.sender.run_writer)
            await anyio.wait_all_tasks_blocked()
            for index in range(count):
                await p.sender.send(_message(index))
            assert p.sender._pending_bytes > 0  # the scenario: lines still queued
            if writer_stopped_first:
                tg.cancel_scope.cancel()  # what Connection does on exit before aclose()
            await p.sender.aclose()
            tg.cancel_scope.cancel()
        assert await _receive_exactly(p.peer, count) == [_message(i) for i in range(count)]
        await _expect_end(p.peer)


async def test_notifications_sent_just_before_a_connection_closes_are_delivered() -> None:
    count = 50
    async with _pipes() as p:
        async with Connection(p.sender, name="A") as conn:
            await anyio.wait_all_tasks_blocked()
            for index in range(count):
                await conn.notify("_test/seq", _message(index)["params"])
        assert await _receive_exactly(p.peer, count) == [_message(i) for i in range(count)]
        await _expect_end(p.peer)


async def test_close_wakes_blocked_senders_at_once_when_nothing_was_promised() -> None:
    # Without the writer, a line still queued belongs to a send that has not returned:
    # closing need not wait for a peer that does not read (it would for CLOSE_FLUSH_TIMEOUT).
    outcomes: list[str] = []
    async with _pipes() as p, anyio.create_task_group() as tg:

        async def flood(sender: int) -> None:
            try:
                for index in range(100_000):
                    await p.sender.send(_message(index, sender, "z" * 1000))
            except ConnectionClosed:
                outcomes.append("closed")

        for sender in range(3):
            tg.start_soon(flood, sender)
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(stream_module.CLOSE_FLUSH_TIMEOUT / 4):
            await p.sender.aclose()
    assert outcomes == ["closed"] * 3


async def test_close_is_bounded_when_the_peer_never_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "CLOSE_FLUSH_TIMEOUT", 0.2)
    outcome: list[str] = []
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)

        async def flood() -> None:
            try:
                for index in range(100_000):
                    await p.sender.send(_message(index, 0, "z" * 100))
            except ConnectionClosed:
                outcome.append("closed")

        tg.start_soon(flood)
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(TIMEOUT):
            await p.sender.aclose()
        await anyio.wait_all_tasks_blocked()
        assert outcome == ["closed"]
        tg.cancel_scope.cancel()


# ----------------------------------------------------------------- errors and backpressure


@pytest.mark.parametrize("yield_between", [False, True], ids=["tight-loop", "yielding"])
async def test_sends_to_a_peer_that_closed_raise_connection_closed(yield_between: bool) -> None:
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)
        await p.peer.aclose()

        async def send_until_refused() -> None:
            for index in range(10_000):
                await p.sender.send(_message(index, 0, "x" * 100))
                if yield_between:
                    # The writer, not the sender, then meets the error.
                    await anyio.lowlevel.checkpoint()

        with pytest.raises(ConnectionClosed):
            await send_until_refused()
        with pytest.raises(ConnectionClosed):  # and it stays closed
            await p.sender.send(_message(0))
        tg.cancel_scope.cancel()


async def test_a_peer_that_does_not_read_holds_the_sender_back_with_bounded_memory() -> None:
    one = len(encode_message(_message(0, 0, "m" * 200)))
    sent = 0
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)

        async def flood() -> None:
            nonlocal sent
            for index in range(100_000):
                await p.sender.send(_message(index, 0, "m" * 200))
                sent += 1

        tg.start_soon(flood)
        await anyio.wait_all_tasks_blocked()
        held_at = sent
        assert 0 < held_at < 100_000, "the sender was never held back"
        assert p.sender._pending_bytes <= COALESCE_BYTES + one
        await anyio.wait_all_tasks_blocked()
        assert sent == held_at, "the sender advanced while nobody was reading"
        got = await _receive_exactly(p.peer, held_at)
        assert got == [_message(i, 0, "m" * 200) for i in range(held_at)]
        await anyio.wait_all_tasks_blocked()
        assert sent > held_at, "the sender stayed blocked after the reader caught up"
        tg.cancel_scope.cancel()


# ----------------------------------------------------------------- cancellation mid-write


async def test_a_sender_cancelled_while_the_pipe_is_full_tears_no_line() -> None:
    payload = "x" * 500
    sent = 0
    got: list[Any] = []
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)
        await anyio.wait_all_tasks_blocked()
        with anyio.CancelScope() as scope:

            async def cancel_once_blocked() -> None:
                await anyio.wait_all_tasks_blocked()
                scope.cancel()

            tg.start_soon(cancel_once_blocked)
            while True:  # fills the pipe, then blocks writing a batch of queued lines
                await p.sender.send(_message(sent, 0, payload))
                sent += 1
        done = anyio.Event()

        async def read_until_the_last() -> None:
            while not got or got[-1] != _message(-1):
                got.append(await p.peer.receive())
            done.set()

        tg.start_soon(read_until_the_last)
        await p.sender.send(_message(-1))  # may wait: what was put back fills the queue
        await done.wait()
        tg.cancel_scope.cancel()
    # Every send that returned arrived whole and in order (the cancelled one may too).
    assert not [frame for frame in got if isinstance(frame, MalformedFrame)]
    assert got[:sent] == [_message(i, 0, payload) for i in range(sent)]
    assert len(got) in (sent + 1, sent + 2)


async def test_a_line_queued_behind_a_cancelled_sender_is_still_written() -> None:
    async with _pipes() as p, anyio.create_task_group() as tg:
        tg.start_soon(p.sender.run_writer)

        async def flood() -> None:
            for index in range(100_000):
                await p.sender.send(_message(index, 0, "x" * 500))

        async with anyio.create_task_group() as flooders:
            flooders.start_soon(flood)
            await anyio.wait_all_tasks_blocked()  # the flooder holds the pipe, blocked
            await p.sender.send(_message(-1))  # queued behind it; send returns
            flooders.cancel_scope.cancel()
        # Nobody sends again: the writer alone must deliver the queued line.
        got: list[Any] = []
        while not got or got[-1] != _message(-1):
            got.append(await p.peer.receive())
        assert not [frame for frame in got if isinstance(frame, MalformedFrame)]
        tg.cancel_scope.cancel()


# ----------------------------------------------------------------- through a Connection


async def test_a_handler_s_notifications_all_arrive_before_its_response(
    counting_os: _CountingOs,
) -> None:
    count = 2_000
    seen: list[int] = []
    handler_side: list[Connection] = []

    async def on_notification(method: str, params: Any) -> None:
        seen.append(params["i"])

    async def burst(method: str, params: Any) -> Any:
        conn = handler_side[0]
        for index in range(params["n"]):
            await conn.notify("_test/tick", {"i": index})
        return {"sent": params["n"]}

    async with (
        _pipes() as p,
        Connection(p.sender, name="A", on_notification=on_notification) as a,
        Connection(p.peer, name="B", on_request=burst) as b,
    ):
        handler_side.append(b)
        assert await a.request("_test/burst", {"n": count}) == {"sent": count}
        # The response came after every notification: all were handled before it.
        assert seen == list(range(count))
    # The handler's burst went out in a few large writes (the connection runs the writer).
    assert counting_os.writes[p.peer_write_fd] < count / 10

"""Reading a pipe from the event loop's callback, and the direct receiver it feeds.

On asyncio a ``StreamTransport`` over a pipe reads from a readiness callback registered once,
and offers each message to a direct receiver (``set_direct_receiver``) while its consumer waits
in ``receive``. On trio the receiving task reads, and the direct receiver is never offered
anything. Either way, what the receiver leaves comes out of ``receive`` in the order written,
and reading ahead of a consumer that stopped is bounded (the writer is held back).
"""

from __future__ import annotations

import logging
import os
import pathlib
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest
from helpers.timeouts import TIMEOUT

from accord.transports import (
    FdReceiveStream,
    FdSendStream,
    MalformedFrame,
    StreamTransport,
    stdio_transport,
)
from accord.transports._stream import READ_SIZE

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def piped() -> AsyncGenerator[tuple[StreamTransport, int]]:
    """A transport reading a pipe, and the pipe's write end (the test writes raw lines)."""
    read_fd, write_fd = os.pipe()
    out_read, out_write = os.pipe()
    reader = FdReceiveStream(read_fd)
    reader.owns_fd = True
    transport = StreamTransport(reader, FdSendStream(out_write))
    try:
        with anyio.fail_after(TIMEOUT):
            yield transport, write_fd
    finally:
        await transport.aclose()
        os.close(write_fd)
        os.close(out_read)


def lines(*ids: int) -> bytes:
    return b"".join(orjson.dumps({"jsonrpc": "2.0", "id": i, "result": {}}) + b"\n" for i in ids)


class Collector:
    """Receives messages in a task until told to stop, noting each message's id."""

    def __init__(self, transport: StreamTransport) -> None:
        self.transport = transport
        self.received: list[Any] = []

    async def run(self) -> None:
        while True:
            message = await self.transport.receive()
            self.received.append(message["id"] if isinstance(message, dict) else message)


async def settle() -> None:
    """Let the event loop turn until a callback and the tasks it woke have run."""
    for _ in range(20):
        await anyio.lowlevel.checkpoint()


async def test_direct_receiver_takes_in_order_and_leaves_the_rest_to_receive(
    anyio_backend: str,
) -> None:
    taken: list[int] = []

    def take(message: Any) -> bool:
        if message["id"] % 2:
            return False
        taken.append(message["id"])
        return True

    async with piped() as (transport, write_fd), anyio.create_task_group() as tg:
        transport.set_direct_receiver(take)
        collector = Collector(transport)
        tg.start_soon(collector.run)
        await settle()
        os.write(write_fd, lines(0, 2, 4, 5, 6))  # one chunk: 6 comes after the refused 5
        await settle()
        os.write(write_fd, lines(8))
        await settle()
        tg.cancel_scope.cancel()
    if anyio_backend == "asyncio":
        assert taken == [0, 2, 4, 8]
        assert collector.received == [5, 6]
    else:  # the task reads: nothing is offered, everything is received in order
        assert taken == []
        assert collector.received == [0, 2, 4, 5, 6, 8]


async def test_a_failing_direct_receiver_loses_nothing(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    def take(message: Any) -> bool:
        raise RuntimeError("broken receiver")

    async with piped() as (transport, write_fd):
        transport.set_direct_receiver(take)
        with caplog.at_level(logging.ERROR, logger="accord.transports"):
            async with anyio.create_task_group() as tg:
                collector = Collector(transport)
                tg.start_soon(collector.run)
                await settle()
                os.write(write_fd, lines(1, 2))
                await settle()
                tg.cancel_scope.cancel()
    assert collector.received == [1, 2]
    if anyio_backend == "asyncio":
        assert "direct receiver failed" in caplog.text


async def test_a_line_that_is_not_json_keeps_its_place(anyio_backend: str) -> None:
    taken: list[int] = []

    def take(message: Any) -> bool:
        taken.append(message["id"])
        return True

    async with piped() as (transport, write_fd), anyio.create_task_group() as tg:
        transport.set_direct_receiver(take)
        collector = Collector(transport)
        tg.start_soon(collector.run)
        await settle()
        os.write(write_fd, lines(0) + b"{not json\n" + lines(1))
        await settle()
        tg.cancel_scope.cancel()
    received = collector.received
    if anyio_backend == "asyncio":
        assert taken == [0]
        assert isinstance(received[0], MalformedFrame) and received[1:] == [1]
    else:
        assert taken == []
        assert received[0] == 0 and isinstance(received[1], MalformedFrame)
        assert received[2:] == [1]


async def test_reading_ahead_of_a_consumer_that_stopped_is_bounded() -> None:
    line = orjson.dumps({"jsonrpc": "2.0", "method": "n", "params": {"x": "y" * 200}}) + b"\n"
    async with piped() as (transport, write_fd):
        os.set_blocking(write_fd, False)

        def fill() -> int:
            written = 0
            while True:
                try:
                    written += os.write(write_fd, line)
                except BlockingIOError:
                    return written

        fill()
        await transport.receive()  # the consumer takes one message, then stops
        for _ in range(10):  # the writer keeps the pipe full while the loop turns
            await settle()
            fill()
        # One read's worth is held, no more: the rest waits in the pipe, and the writer
        # finds the pipe full.
        assert transport.buffered_bytes <= READ_SIZE
        assert fill() == 0


async def test_closing_ends_a_receive_that_waits() -> None:
    async with piped() as (transport, _):
        async with anyio.create_task_group() as tg:
            outcome: list[str] = []

            async def receive() -> None:
                try:
                    await transport.receive()
                except anyio.EndOfStream:
                    outcome.append("end of stream")

            tg.start_soon(receive)
            await settle()
            await transport.aclose()
        assert outcome == ["end of stream"]


async def test_the_end_of_the_pipe_delivers_a_last_line_without_newline() -> None:
    read_fd, write_fd = os.pipe()
    reader = FdReceiveStream(read_fd)
    reader.owns_fd = True
    transport = StreamTransport(reader, FdSendStream(os.open(os.devnull, os.O_WRONLY)))
    try:
        with anyio.fail_after(TIMEOUT):
            os.write(write_fd, lines(0) + b'{"jsonrpc": "2.0", "id": 1, "result": {}}')
            os.close(write_fd)
            assert (await transport.receive())["id"] == 0
            assert (await transport.receive())["id"] == 1
            with pytest.raises(anyio.EndOfStream):
                await transport.receive()
    finally:
        await transport.aclose()


async def test_stdin_redirected_from_a_regular_file_is_read_to_its_end(
    tmp_path: pathlib.Path,
) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(lines(0, 1))
    stdin_fd = os.open(requests, os.O_RDONLY)
    out_read, out_write = os.pipe()
    try:
        transport = stdio_transport(stdin_fd=stdin_fd, stdout_fd=out_write, protect_stdout=False)
        with anyio.fail_after(TIMEOUT):
            assert (await transport.receive())["id"] == 0
            assert (await transport.receive())["id"] == 1
            with pytest.raises(anyio.EndOfStream):
                await transport.receive()
            await transport.aclose()
    finally:
        for fd in (stdin_fd, out_read, out_write):
            os.close(fd)

"""A conformance suite for message transports, and a transport pair over real OS pipes.

``check_transport(make_pair)`` runs every behaviour the :class:`~accord.transports.Transport`
contract promises through a pair of connected transports: messages arrive intact and in order in
both directions, closing one end gives the other ``EndOfStream`` (after what was already sent),
sending to a closed peer raises ``ConnectionClosed``, closing an end wakes a task blocked on it,
a large message passes whole, concurrent senders never interleave, and a sender with no reader
is held back (the channel is bounded).
The in-memory pair and NDJSON over pipes pass the same suite; that is what "semantically
identical" means here.

Like ``trio.testing.check_two_way_stream``, it uses plain ``assert`` statements so that it can be
imported without pytest.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeAlias, cast

import anyio

from ..errors import ConnectionClosed
from ..transports import (
    MAX_MESSAGE_BYTES,
    FdReceiveStream,
    FdSendStream,
    StreamTransport,
    Transport,
)

__all__ = ("MakeTransportPair", "check_transport", "pipe_transport_pair")

MakeTransportPair: TypeAlias = Callable[
    [], "tuple[Transport, Transport] | Awaitable[tuple[Transport, Transport]]"
]
"""Returns two connected transports (or an awaitable of them): what one sends, the other gets."""

#: How long any single check may take before it counts as a hang.
CHECK_TIMEOUT = 20.0
#: Messages a sender tries to push with nobody reading; a bounded transport stops far sooner.
BACKPRESSURE_PROBE = 100_000
#: How long a held-back sender may take to resume once the reader has caught up.
RESUME_TIMEOUT = 2.0

#: JSON values that must survive a round trip exactly: every JSON type, id-like integers
#: including 0, text that framing could trip over (newlines, U+2028, quotes, non-ASCII).
SAMPLES: tuple[dict[str, Any], ...] = (
    {"jsonrpc": "2.0", "id": 0, "method": "m"},
    {"jsonrpc": "2.0", "id": "id-\u00e9", "method": "m", "params": {}},
    {"jsonrpc": "2.0", "method": "n", "params": []},
    {"jsonrpc": "2.0", "id": -1, "result": None},
    {"jsonrpc": "2.0", "id": 2**63 - 1, "result": {"big": -(2**63)}},
    {"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "x", "data": [1.5, 0.25]}},
    {"text": 'line 1\nline 2\r\n\ttab "quoted" \\ back\\slash', "empty": ""},
    {"unicode": "\u2028\u2029 \u00e9\u00e8 \u4e2d\u6587 \U0001f600 \u0000", "bools": [True, False]},
    {"nested": {"a": [{"b": [[], {}, None]}], "deep": [[[[[[[[1]]]]]]]]}},
    {"unicode key \u00e9": 1, "": "empty key"},
)


def _field(value: Any, key: str) -> Any:
    """``value[key]`` if ``value`` is an object that has it, else None."""
    return cast(dict[str, Any], value).get(key) if isinstance(value, dict) else None


def _message(sender: int, index: int, payload: str = "") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "seq", "params": {"s": sender, "i": index, "p": payload}}


@asynccontextmanager
async def _opened(make_pair: MakeTransportPair) -> AsyncGenerator[tuple[Transport, Transport]]:
    made = make_pair()
    pair: tuple[Transport, Transport] = await made if inspect.isawaitable(made) else made
    a, b = pair
    try:
        yield a, b
    finally:
        with anyio.CancelScope(shield=True):
            await a.aclose()
            await b.aclose()


async def _expect_end(transport: Transport, what: str) -> None:
    try:
        extra = await transport.receive()
    except anyio.EndOfStream:
        return
    raise AssertionError(f"{what}: expected EndOfStream, received {extra!r:.200}")


async def check_round_trip(make_pair: MakeTransportPair) -> None:
    """Every sample arrives equal to what was sent, in order, in both directions."""
    async with _opened(make_pair) as (a, b):
        for sender, receiver, direction in ((a, b, "a->b"), (b, a, "b->a")):
            async with anyio.create_task_group() as tg:
                for sample in SAMPLES:
                    tg.start_soon(sender.send, sample)
                    got = await receiver.receive()
                    assert got == sample, f"{direction}: sent {sample!r}, received {got!r}"


async def check_order(make_pair: MakeTransportPair, count: int = 2_000) -> None:
    """A stream of messages arrives complete and in the order sent."""
    async with _opened(make_pair) as (a, b):

        async def send_all() -> None:
            for index in range(count):
                await a.send(_message(0, index))

        async with anyio.create_task_group() as tg:
            tg.start_soon(send_all)
            for index in range(count):
                got = await b.receive()
                assert got == _message(0, index), f"message {index} arrived as {got!r:.200}"


async def check_end_of_stream(make_pair: MakeTransportPair) -> None:
    """Closing one end delivers what was sent, then ``EndOfStream`` on the other end."""
    async with _opened(make_pair) as (a, b):
        async with anyio.create_task_group() as tg:

            async def send_then_close() -> None:
                for index in range(3):
                    await a.send(_message(0, index))
                await a.aclose()

            tg.start_soon(send_then_close)
            for index in range(3):
                got = await b.receive()
                assert got == _message(0, index), f"message {index} arrived as {got!r:.200}"
        await _expect_end(b, "receive after the peer closed")
        await _expect_end(b, "a second receive after the peer closed")


async def check_blocked_receive_sees_end(make_pair: MakeTransportPair) -> None:
    """A ``receive`` already waiting when the peer closes wakes up with ``EndOfStream``."""
    async with _opened(make_pair) as (a, b), anyio.create_task_group() as tg:
        tg.start_soon(_expect_end, b, "a blocked receive when the peer closed")
        await anyio.wait_all_tasks_blocked()
        await a.aclose()


async def check_close_wakes_own_blocked_receive(make_pair: MakeTransportPair) -> None:
    """Closing an end wakes a ``receive`` blocked on that same end (no task hangs)."""
    async with _opened(make_pair) as (a, _b), anyio.create_task_group() as tg:

        async def blocked_receive() -> None:
            try:
                got = await a.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return
            raise AssertionError(f"receive on a closed end returned {got!r:.200}")

        tg.start_soon(blocked_receive)
        await anyio.wait_all_tasks_blocked()
        await a.aclose()


async def check_close_wakes_own_blocked_send(make_pair: MakeTransportPair) -> None:
    """Closing an end wakes a ``send`` blocked on that end's full channel: ``ConnectionClosed``."""
    async with _opened(make_pair) as (a, _b), anyio.create_task_group() as tg:

        async def flood() -> None:
            try:
                for index in range(BACKPRESSURE_PROBE):
                    await a.send(_message(0, index, "z" * 1000))
            except ConnectionClosed:
                return
            raise AssertionError("the sender was neither held back nor stopped by aclose()")

        tg.start_soon(flood)
        await anyio.wait_all_tasks_blocked()
        await a.aclose()


async def check_send_to_closed_peer(make_pair: MakeTransportPair) -> None:
    """Sending after the peer closed raises ``ConnectionClosed``, never hangs or succeeds."""
    async with _opened(make_pair) as (a, b):
        await b.aclose()
        try:
            # A pipe may accept a first write into its buffer; it must fail within a few.
            for _ in range(64):
                await a.send(_message(0, 0, "x" * 4096))
        except ConnectionClosed:
            pass
        else:
            raise AssertionError("send after the peer closed did not raise ConnectionClosed")


async def check_send_after_own_close(make_pair: MakeTransportPair) -> None:
    """Sending on a transport this side closed raises ``ConnectionClosed``."""
    async with _opened(make_pair) as (a, _b):
        await a.aclose()
        try:
            await a.send(_message(0, 0))
        except ConnectionClosed:
            pass
        else:
            raise AssertionError("send on a closed transport did not raise ConnectionClosed")


async def check_large_message(make_pair: MakeTransportPair, size: int = 8 * 1024 * 1024) -> None:
    """A message of several MiB passes whole (no truncation, no 64 KiB limit)."""
    big = "\u00e9abc" * (size // 4)
    message = {"jsonrpc": "2.0", "id": 1, "result": {"blob": big, "tail": "end"}}
    got: Any = None
    async with _opened(make_pair) as (a, b), anyio.create_task_group() as tg:
        tg.start_soon(a.send, message)
        got = await b.receive()
    blob = _field(_field(got, "result"), "blob")
    assert isinstance(blob, str), f"large message arrived damaged: {got!r:.200}"
    assert len(blob) == len(big), f"large message truncated: {len(blob)} of {len(big)} chars"
    assert got == message, "large message arrived altered"


async def check_concurrent_senders(
    make_pair: MakeTransportPair, senders: int = 8, per_sender: int = 20
) -> None:
    """Messages of concurrent senders never interleave; each sender's order is kept."""
    # 100 KiB payloads exceed a pipe's buffer, so a write is split and could interleave.
    payload = "y" * (100 * 1024)
    async with _opened(make_pair) as (a, b):

        async def send_many(sender: int) -> None:
            for index in range(per_sender):
                await a.send(_message(sender, index, payload))

        next_index = [0] * senders
        async with anyio.create_task_group() as tg:
            for sender in range(senders):
                tg.start_soon(send_many, sender)
            for _ in range(senders * per_sender):
                got = await b.receive()
                params = _field(got, "params")
                sender, index = _field(params, "s"), _field(params, "i")
                assert isinstance(sender, int), f"interleaved or damaged frame: {got!r:.200}"
                assert got == _message(sender, next_index[sender], payload), (
                    f"sender {sender}: expected message {next_index[sender]}, got {index}"
                )
                next_index[sender] += 1


async def check_backpressure(make_pair: MakeTransportPair) -> None:
    """With nobody reading, a sender is held back: the channel's buffer is bounded."""
    async with _opened(make_pair) as (a, b):
        sent = 0
        progressed = [anyio.Event()]

        async def flood() -> None:
            nonlocal sent
            for index in range(BACKPRESSURE_PROBE):
                await a.send(_message(0, index))
                sent += 1
                progressed[0].set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(flood)
            await anyio.wait_all_tasks_blocked()
            held_at = sent
            assert held_at < BACKPRESSURE_PROBE, "the sender was never held back: unbounded"
            await anyio.wait_all_tasks_blocked()
            assert sent == held_at, "the sender advanced while nobody was reading"
            progressed[0] = anyio.Event()
            for index in range(held_at):
                got = await b.receive()
                assert got == _message(0, index), f"message {index} arrived as {got!r:.200}"
            # The channel tells the sender it has room again: it must go on, soon.
            with anyio.move_on_after(RESUME_TIMEOUT):
                await progressed[0].wait()
            assert sent > held_at, "the sender stayed blocked after the reader caught up"
            tg.cancel_scope.cancel()


CHECKS: tuple[Callable[[MakeTransportPair], Awaitable[None]], ...] = (
    check_round_trip,
    check_order,
    check_end_of_stream,
    check_blocked_receive_sees_end,
    check_close_wakes_own_blocked_receive,
    check_close_wakes_own_blocked_send,
    check_send_to_closed_peer,
    check_send_after_own_close,
    check_large_message,
    check_concurrent_senders,
    check_backpressure,
)


async def check_transport(make_pair: MakeTransportPair) -> None:
    """Run the transport conformance suite over pairs built by ``make_pair``.

    Each check builds a fresh pair and closes both ends afterwards. Runs on any anyio backend.

    Args:
        make_pair: returns two connected transports, or an awaitable of them.

    Raises:
        AssertionError: a check failed; the message says which behaviour.
        TimeoutError: a check hung for longer than ``CHECK_TIMEOUT`` seconds.
    """
    for check in CHECKS:
        with anyio.fail_after(CHECK_TIMEOUT):
            try:
                await check(make_pair)
            except BaseException as exc:
                failure = _first_assertion(exc)
                if failure is None:
                    raise
                raise AssertionError(f"{check.__name__}: {failure}") from exc


def _first_assertion(exc: BaseException) -> AssertionError | None:
    """The assertion that failed, also when a task group wrapped it in an exception group."""
    if isinstance(exc, AssertionError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in cast(BaseExceptionGroup[BaseException], exc).exceptions:
            found = _first_assertion(inner)
            if found is not None:
                return found
    return None


def pipe_transport_pair(
    *, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> tuple[StreamTransport, StreamTransport]:
    """Return two :class:`StreamTransport` ends joined by two real OS pipes (NDJSON on the wire).

    The same code path as stdio and subprocess transports, in one process. Each end owns its
    descriptors: ``aclose()`` closes both, so the peer reads end of file and its writes fail.
    """
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    ends: list[StreamTransport] = []
    for read_fd, write_fd in ((a_read, a_write), (b_read, b_write)):
        reader = FdReceiveStream(read_fd)
        reader.owns_fd = True
        ends.append(
            StreamTransport(reader, FdSendStream(write_fd), max_message_bytes=max_message_bytes)
        )
    return ends[0], ends[1]

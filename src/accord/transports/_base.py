"""The transport contract: whole messages in, whole messages out.

A transport moves parsed JSON-RPC messages (plain ``dict``s) between two peers. It has three
operations and nothing else. ``receive`` returns a :class:`~accord.transports.MalformedFrame`
for input that could not be parsed, so the connection can answer it with the specification's
error instead of dropping it, and raises ``anyio.EndOfStream`` when the peer is gone (or a
:class:`~accord.errors.TransportError` that says more, such as the exit code of an agent).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ._framing import MalformedFrame

__all__ = ("BackgroundWriterTransport", "BatchTransport", "DirectReceiveTransport", "Transport")


@runtime_checkable
class Transport(Protocol):
    """A bidirectional channel of JSON-RPC messages."""

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message; waits while the channel is full (backpressure).

        Raises:
            ConnectionClosed: the channel can no longer send.
        """
        ...

    async def receive(self) -> dict[str, Any] | MalformedFrame | Any:
        """Return the next message, or a ``MalformedFrame`` for unparseable input.

        Raises:
            anyio.EndOfStream: the peer closed the channel.
            TransportError: the channel failed, with details.
        """
        ...

    async def aclose(self) -> None:
        """Close the channel; the peer's ``receive`` then raises ``EndOfStream``."""
        ...


@runtime_checkable
class BatchTransport(Transport, Protocol):
    """A transport that can hand over everything it has read in one call (optional).

    The connection uses it when available: one call per read instead of one per message.
    """

    async def receive_batch(self, max_messages: int) -> list[Any]:
        """Return the messages ready now: at least one (waiting for it), at most ``max_messages``.

        Raises:
            anyio.EndOfStream: the peer closed the channel.
            TransportError: the channel failed, with details.
        """
        ...


@runtime_checkable
class BackgroundWriterTransport(Transport, Protocol):
    """A transport that can write in a background task (optional).

    The connection runs :meth:`run_writer` in its task group for as long as it is open, when
    the transport has one. Messages sent while it runs may be queued and written together
    (one system call for a burst instead of one per message); ``send`` still keeps their
    order, still waits when too much is queued (backpressure), and ``aclose`` still writes
    out what was queued before closing.
    """

    async def run_writer(self) -> None:
        """Write queued messages until cancelled; may return early once writing has failed.

        Raises:
            RuntimeError: it is already running for this transport.
        """
        ...


@runtime_checkable
class DirectReceiveTransport(Transport, Protocol):
    """A transport that can hand a message over as it is read, without waking a task (optional).

    A pipe read from the event loop's readiness callback (asyncio) offers each message it reads
    to the function given here first, provided its consumer is waiting in ``receive`` (or
    ``receive_batch``) with nothing read before it still queued: so a message taken this way
    is one that ``receive`` would have returned next. The connection takes the answers to its
    requests and the peer's requests this way: a lone request then costs no hand-over to the
    reading task and no extra turn of the event loop.
    """

    def set_direct_receiver(self, take: Callable[[Any], bool] | None) -> None:
        """Offer messages to ``take`` as they are read (``None``: stop).

        ``take(message)`` runs in the event loop's callback, outside any task: it must not
        block, and returns ``True`` when it consumed the message (``receive`` never returns
        it) or ``False`` to leave it, and everything read after it, to ``receive``. An
        exception from it is logged and counts as ``False``.
        """
        ...

"""Streamable HTTP, server side: ACP connections that live across many HTTP requests.

A POST of ``initialize`` (without ``Acp-Connection-Id``) creates a :class:`HttpAcpConnection`:
a message-level Transport handed to the agent like any other, answered ``200`` with the
``initialize`` result and the new ``Acp-Connection-Id``. Later POSTs feed it (``202``); what
the agent sends goes out on long-lived GET streams (Server-Sent Events), routed as the RFD
says: a message for a session (``params.sessionId``, or the answer to a request that was
posted for a session) on that session's stream, everything else (answers to
``session/new`` and ``session/load`` among them) on the connection's stream. A stream with no
GET attached holds its messages (bounded: over the bound the connection is closed, its client
does not read) until one attaches; while one is attached a burst over the bound makes the
agent wait for the reader to take it, nothing is dropped. A connection holds at most
``max_streams_per_connection`` session streams (GETs past it are refused 429), and a stream
for a session id that nothing read or sent to is dropped when its GET ends. DELETE ends the
connection.

Above: :mod:`._server`. Below: anyio, :mod:`accord.transports`.
"""

from __future__ import annotations

import logging
import secrets
from collections import deque
from typing import Any, cast

import anyio

from ..errors import ConnectionClosed
from ..transports import encode_message

__all__ = ("HttpAcpConnection", "OutboundStream", "route_key")

_log = logging.getLogger("accord.remote")

#: Bytes of events queued for a read stream before its senders wait (the backpressure), and
#: the most one write to its socket carries; as :data:`~._websocket.WRITE_HIGH_WATER`.
STREAM_HIGH_WATER = 1 << 20

#: The default bound on the bytes a stream no GET reads holds (``ServerLimits.sse_buffer_bytes``).
STREAM_MAX_UNREAD = 4 << 20


def route_key(message_id: Any) -> str | None:
    """A JSON-RPC id as a dict key (``1`` and ``"1"`` stay distinct), or None if not an id."""
    if isinstance(message_id, bool):
        return None
    if isinstance(message_id, str):
        return f"s:{message_id}"
    if isinstance(message_id, int):
        return f"n:{message_id}"
    return None


def session_of(message: dict[str, Any]) -> str | None:
    """``params.sessionId`` of a request or notification, if it is a string."""
    params: Any = message.get("params")
    if isinstance(params, dict):
        sid = cast("dict[str, Any]", params).get("sessionId")
        if isinstance(sid, str):
            return sid
    return None


class OutboundStream:
    """Events for one GET stream: held while no receiver is attached, bounded in bytes.

    Each message is kept as the bytes of its SSE event (encoded once, when it is queued), so
    the bounds count what the server really holds: while a receiver is attached a sender
    waits once :data:`STREAM_HIGH_WATER` bytes are queued (the backpressure); with none
    attached, past ``limit`` messages or ``max_bytes`` bytes the stream is over its bound.
    """

    def __init__(self, limit: int, max_bytes: int = STREAM_MAX_UNREAD) -> None:
        """A stream holding at most ``limit`` undelivered messages and ``max_bytes`` bytes."""
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._limit = limit
        self._max_bytes = max_bytes
        self._wakeup = anyio.Event()
        self._drained = anyio.Event()
        #: Bytes of the batch being written that the socket has not taken yet (the pump's).
        self.in_flight = 0
        self.attached = False
        self.closed = False

    @property
    def buffered_bytes(self) -> int:
        """Bytes queued plus those of the write under way: what this stream holds."""
        return self._queued + self.in_flight

    def _full(self) -> bool:
        return bool(self._queue) and (
            len(self._queue) >= self._limit or self._queued >= self._max_bytes
        )

    async def put(self, message: dict[str, Any]) -> bool:
        """Queue ``message``; False if the stream is closed or over its bound (the caller
        closes the connection).

        While a receiver is attached a sender waits while :data:`STREAM_HIGH_WATER` bytes or
        ``limit`` messages are queued, for the receiver to take them (a burst is not a client
        that never reads); only an unread stream is over its bound. A message larger than
        every bound still goes alone into an empty stream.
        """
        while (
            self._queue
            and (len(self._queue) >= self._limit or self._queued >= STREAM_HIGH_WATER)
            and self.attached
            and not self.closed
        ):
            await self._drained.wait()
        if self.closed or self._full():
            return False
        event = b"data: " + encode_message(message)[:-1] + b"\n\n"
        self._queue.append(event)
        self._queued += len(event)
        self._wakeup.set()
        return True

    @property
    def empty(self) -> bool:
        """Whether no message waits for a receiver."""
        return not self._queue

    def close(self) -> None:
        """End the stream: its receiver finishes after what is queued."""
        self.closed = True
        self._wakeup.set()
        self._drain()

    def wake(self) -> None:
        """Wake the receiver waiting in :meth:`next_batch` (its reader is gone)."""
        self._wakeup.set()

    def detach(self) -> None:
        """The receiver is gone: a sender waiting for it re-checks the bound."""
        self.attached = False
        self._drain()

    def _drain(self) -> None:
        """Wake every sender waiting for room."""
        self._drained.set()
        self._drained = anyio.Event()

    async def next_batch(self, heartbeat: float) -> list[bytes] | None:
        """Wait up to ``heartbeat`` seconds for events; [] if none came, None once closed.

        A batch is the queued events up to :data:`STREAM_HIGH_WATER` bytes (at least one).
        """
        if not self._queue and not self.closed:
            with anyio.move_on_after(heartbeat):
                await self._wakeup.wait()
            self._wakeup = anyio.Event()
        if self._queue:
            batch: list[bytes] = []
            size = 0
            while self._queue and (not batch or size + len(self._queue[0]) <= STREAM_HIGH_WATER):
                event = self._queue.popleft()
                batch.append(event)
                size += len(event)
            self._queued -= size
            self._drain()
            return batch
        return None if self.closed else []

    def requeue(self, events: list[bytes]) -> None:
        """Put back events a receiver could not write (its socket broke)."""
        self._queue.extendleft(reversed(events))
        self._queued += sum(len(e) for e in events)


class HttpAcpConnection:
    """One ACP connection over Streamable HTTP: the agent's Transport, fed by POSTs."""

    def __init__(
        self, token_key: str, *, buffer: int, buffer_bytes: int = STREAM_MAX_UNREAD
    ) -> None:
        """A new connection with a fresh id; each outbound stream no GET reads holds at most
        ``buffer`` messages and ``buffer_bytes`` bytes."""
        self.connection_id = secrets.token_urlsafe(18)
        self.token_key = token_key
        self._buffer = buffer
        self._buffer_bytes = buffer_bytes
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](buffer)
        self._inbound_send = send
        self._inbound = receive
        self.streams: dict[str | None, OutboundStream] = {
            None: OutboundStream(buffer, buffer_bytes)
        }
        self._pending_routes: dict[str, str | None] = {}
        self._client_routes: dict[str, str] = {}
        self._initialize: tuple[str, anyio.Event] | None = None
        self._initialize_answer: dict[str, Any] | None = None
        self.closed = False
        self.last_activity = anyio.current_time()

    @property
    def buffered_bytes(self) -> int:
        """Bytes of events this connection holds that no socket has taken yet (all its
        streams' queues and writes under way)."""
        return sum(stream.buffered_bytes for stream in self.streams.values())

    # ------------------------------------------------------------------ the agent's side

    async def send(self, message: dict[str, Any]) -> None:
        """Route one message from the agent to its GET stream.

        Raises:
            ConnectionClosed: the connection is closed (or was closed for a stream over its
                bound: a client that never reads).
        """
        if self.closed:
            raise ConnectionClosed("the HTTP connection is closed")
        self.last_activity = anyio.current_time()
        key = route_key(message.get("id"))
        if "method" not in message:
            if self._initialize is not None and key == self._initialize[0]:
                self._initialize_answer = message
                self._initialize[1].set()
                self._initialize = None
                return
            target = self._pending_routes.pop(key, None) if key is not None else None
        else:
            target = session_of(message)
            if target is not None and key is not None:
                self._client_routes[key] = target
        stream = self.stream_for(target)
        if not await stream.put(message):
            if self.closed:  # closed while the sender waited (a reader that stopped reading)
                raise ConnectionClosed("the HTTP connection is closed")
            _log.warning(
                "closing HTTP connection %s: a stream no GET reads is over its bound "
                "(%d messages or %d bytes)",
                self.connection_id,
                self._buffer,
                self._buffer_bytes,
            )
            await self.aclose()
            raise ConnectionClosed("the client does not read its event stream")

    async def receive(self) -> dict[str, Any]:
        """The next message the client posted.

        Raises:
            anyio.EndOfStream: the connection was deleted or timed out.
        """
        try:
            return await self._inbound.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        """Close the connection: its streams end, the agent's ``receive`` sees EOF."""
        if self.closed:
            return
        self.closed = True
        self._inbound_send.close()
        for stream in self.streams.values():
            stream.close()
        if self._initialize is not None:
            self._initialize[1].set()

    # ------------------------------------------------------------------ the client's side

    def open_stream(self, session_id: str | None, limit: int) -> OutboundStream | None:
        """The stream a GET for ``session_id`` reads; None if that would pass ``limit``.

        A session's stream is made on the client's first GET for it (the client opens it
        before ``session/load`` or ``session/resume``, when no message has named it yet); at
        most ``limit`` session streams are held at once, and one nothing reads or fills is
        dropped when its reader goes (:meth:`release`), so ids a client makes up cost
        nothing once their GET ends. It carries only this connection's messages.
        """
        new = session_id is not None and session_id not in self.streams
        if new and len(self.streams) - 1 >= limit:
            return None
        return self.stream_for(session_id)

    def release(self, session_id: str | None, stream: OutboundStream) -> None:
        """A GET's reader of ``stream`` is gone: detach it, drop it if it holds nothing."""
        stream.detach()
        if session_id is not None and stream.empty and self.streams.get(session_id) is stream:
            del self.streams[session_id]

    def stream_for(self, session_id: str | None) -> OutboundStream:
        """The stream for ``session_id`` (None: the connection's), created on first use."""
        stream = self.streams.get(session_id)
        if stream is None:
            stream = self.streams[session_id] = OutboundStream(self._buffer, self._buffer_bytes)
            if self.closed:
                stream.close()
        return stream

    async def initialize(self, message: dict[str, Any], seconds: float) -> dict[str, Any] | None:
        """Post ``initialize``; wait ``seconds`` for its answer (None: closed or too late)."""
        key = route_key(message.get("id"))
        assert key is not None
        done = anyio.Event()
        self._initialize = (key, done)
        await self._inbound_send.send(message)
        with anyio.move_on_after(seconds):
            await done.wait()
        return self._initialize_answer

    def check_response_route(self, message: dict[str, Any], session_header: str | None) -> str:
        """'' if the client's answer may go on, else why not (its session header is wrong)."""
        key = route_key(message.get("id"))
        route = self._client_routes.get(key) if key is not None else None
        if route is not None and session_header is None:
            return "Missing Acp-Session-Id"
        if route is not None and session_header != route:
            return "Mismatched Acp-Session-Id"
        if key is not None:
            self._client_routes.pop(key, None)
        return ""

    async def post(self, message: dict[str, Any], session_id: str | None) -> None:
        """Hand a posted message to the agent; a request's answer goes to ``session_id``.

        Raises:
            ConnectionClosed: the connection closed meanwhile.
        """
        self.last_activity = anyio.current_time()
        if "method" in message:
            key = route_key(message.get("id"))
            if key is not None:
                method = message.get("method")
                # `session/load` is answered on the connection's stream (RFD), the rest of a
                # session's requests on the session's own.
                # A duplicate of an id still in flight is refused by the agent (answered with
                # id null): it must not take over the route of the request it duplicates.
                if key not in self._pending_routes:
                    route = None if method == "session/load" else session_id
                    self._pending_routes[key] = route
        try:
            await self._inbound_send.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise ConnectionClosed("the HTTP connection is closed") from None

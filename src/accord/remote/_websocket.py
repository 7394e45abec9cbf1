"""ACP over WebSocket: one JSON-RPC message per text frame, as a message-level Transport.

:class:`WebSocketTransport` drives a sans-IO WebSocket connection over an anyio byte stream
(plain TCP or TLS), on either side: the server builds it on a `wsproto` connection after
answering the upgrade; the client (:mod:`._client`) on a `websockets` ``ClientProtocol``
after its handshake, because the client is the side that parses the stream of updates and
websockets' frame parser costs about a third of wsproto's per frame (docs/benchmarks.md).
Messages are text frames (binary frames are ignored, as the RFD says, with a log line); a
message over the size limit closes the connection with code 1009 (message too big), as soon
as a frame's header declares more than the limit or more than it arrives, or when a message
comes in more pieces than one per 64 bytes of the limit (a flood of empty fragments adds
nothing to the size, yet each piece held costs memory); a protocol error
wsproto finds (an unmasked or fragmented control frame, RSV bits with no extension, text
that is not UTF-8) closes it with the code wsproto names (1002, 1007); no extension
(permessage-deflate) is ever negotiated. A message that is not JSON becomes a
:class:`~accord.transports.MalformedFrame` the JSON-RPC connection answers. Pings are
answered as they arrive; :meth:`WebSocketTransport.keepalive` sends the heartbeat pings and
closes a connection whose peer stopped answering or that has been idle too long.

Above: :mod:`._server`, :mod:`._client`. Below: wsproto (server), websockets (client), anyio,
:mod:`accord.transports`.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc

from ..errors import ConnectionClosed
from ..transports import MalformedFrame, decode_line, encode_message

if TYPE_CHECKING:
    from websockets.client import ClientProtocol
    from wsproto import WSConnection
    from wsproto.connection import Connection

__all__ = ("CLOSE_GOING_AWAY", "CLOSE_TOO_BIG", "WebSocketTransport")

_log = logging.getLogger("accord.remote")

#: Close codes (RFC 6455, section 7.4.1).
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_TOO_BIG = 1009

#: Seconds the write of a close frame (this side's, or the answer to the peer's) may take;
#: then, or as soon as it is written, the socket is closed. The peer's half of the handshake
#: is never waited for: a peer that stopped reading, or never answers, is dropped.
CLOSE_WRITE_TIMEOUT = 2.0

_READ_SIZE = 65536

#: Largest single write to the socket; each one taken counts as progress for the heartbeat.
_WRITE_SLICE = 256 * 1024

#: Bytes of frames queued behind a write before senders wait for it (backpressure).
WRITE_HIGH_WATER = 1 << 20

#: Close code for a peer that stopped reading (RFC 6455 1008, policy violation).
CLOSE_POLICY = 1008

#: The reason a peer that stopped reading is closed with (and the log line says).
STOPPED_READING = "the peer stopped reading"

#: A message may arrive in at most one piece per this many bytes of the message limit: empty
#: or tiny fragments add (almost) nothing to the size, yet each piece held costs memory.
BYTES_PER_PART = 64


class WebSocketTransport:
    """A :class:`~accord.transports.Transport` over one WebSocket connection."""

    def __init__(
        self,
        stream: anyio.abc.ByteStream,
        ws: Connection | WSConnection | ClientProtocol,
        *,
        max_message_bytes: int,
        pending: list[Any] | None = None,
    ) -> None:
        """Wrap an open WebSocket (handshake done) on ``stream``.

        ``pending`` holds messages already read during the handshake (a client that sent
        frames right behind its upgrade request).
        """
        self._stream = stream
        self._ws = ws
        self._max = max_message_bytes
        self._max_parts = max(1, max_message_bytes // BYTES_PER_PART)
        from websockets.exceptions import InvalidState
        from websockets.protocol import Protocol
        from wsproto.connection import Connection
        from wsproto.events import TextMessage
        from wsproto.utilities import LocalProtocolError

        self._text_message = TextMessage
        # A websockets protocol (the client side) rather than a wsproto connection.
        self._websockets = isinstance(ws, Protocol)
        # Only a server's frames go unmasked (the server side passes the bare Connection);
        # a client's are masked by its protocol layer.
        self._unmasked = isinstance(ws, Connection) and not ws.client
        self._binary = False
        # What either protocol layer raises for a frame sent on a closed connection.
        self._send_errors = (LocalProtocolError, InvalidState)
        self._ready: deque[Any] = deque(pending or ())
        self._parts: list[str | bytes | bytearray] = []
        self._size = 0
        self._queue: list[bytes] = []
        self._queued = 0
        # The pong to the newest ping not yet answered: one at most, whatever the peer sends
        # (RFC 6455, 5.5.3 lets a pong answer only the most recent ping).
        self._pong = b""
        self._in_flight = 0
        self._last_written = anyio.current_time()
        self._writing = False
        self._written = anyio.Event()
        self._writer_running = False
        self._has_data = anyio.Event()
        self._closed = False
        self._peer_closed = False
        self._close_reason = ""
        self._awaiting_pong = False
        self._last_activity = anyio.current_time()

    @property
    def closed(self) -> bool:
        """Whether the connection is closed (by either side)."""
        return self._closed or self._peer_closed

    @property
    def buffered_bytes(self) -> int:
        """Bytes of frames this side holds that the socket has not taken yet.

        Frames queued, the pong waiting to go out and the write under way: bounded by
        :data:`WRITE_HIGH_WATER` (senders wait past it) plus one frame and the pending
        pong, however many pings the peer sends and however little it reads.
        """
        return self._queued + len(self._pong) + self._in_flight

    async def send(self, message: dict[str, Any]) -> None:
        """Send ``message`` as one text frame.

        Raises:
            ConnectionClosed: the connection is closed.
        """
        payload = encode_message(message)[:-1]
        if self._unmasked:
            # A server's text frame is a header and the UTF-8 bytes as they are (RFC 6455,
            # 5.2): built here, without decoding the payload to build it again.
            await self._write(None, frame=_text_frame(payload))
        elif self._websockets:
            await self._write(("text", payload))
        else:
            await self._write(self._text_message(data=payload.decode("utf-8")))
        self._last_activity = anyio.current_time()

    async def receive(self) -> dict[str, Any] | MalformedFrame | Any:
        """The next message (or MalformedFrame), answering pings on the way.

        Raises:
            anyio.EndOfStream: the peer closed the connection (or it broke).
            ConnectionClosed: this side closed it (a message over the limit, a dead peer).
        """
        await self._handle_events()  # frames that arrived with the handshake
        while not self._ready:
            if self._closed:
                raise ConnectionClosed(self._close_reason or "the WebSocket connection is closed")
            if self._peer_closed:
                raise anyio.EndOfStream
            try:
                data = await self._stream.receive(_READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._peer_closed = True
                raise anyio.EndOfStream from None
            self._ws.receive_data(data)
            await self._handle_events()
        return self._ready.popleft()

    def _declared_over_limit(self) -> bool:
        """Whether the frame being read declares, in its header, more than the message limit.

        wsproto hands a frame's payload over as it arrives, so the limit is also checked on
        what arrived; this refuses a frame declaring 2**62 bytes at once rather than when
        the bytes come (or the heartbeat finds the connection stuck waiting for them).
        wsproto has no public view of the frame header, so this reads its decoder's state;
        should a wsproto release rename it, the check on what arrived still holds (and the
        ``declared-oversize`` attack of accord.testing fails, saying so).
        """
        if self._websockets:
            return False
        proto: Any = getattr(getattr(self._ws, "_proto", None), "_frame_decoder", None)
        declared = getattr(getattr(proto, "header", None), "payload_len", 0)
        consumed = getattr(proto, "payload_consumed", 0)
        if not isinstance(declared, int) or not isinstance(consumed, int):
            return False
        return self._size + declared - consumed > self._max

    async def receive_batch(self, max_messages: int) -> list[Any]:
        """Every message already read (at least one, waiting for it), at most ``max_messages``.

        Raises:
            anyio.EndOfStream: the peer closed the connection (or it broke).
            ConnectionClosed: this side closed it.
        """
        batch = [await self.receive()]
        ready = self._ready
        while ready and len(batch) < max_messages:
            batch.append(ready.popleft())
        return batch

    async def aclose(self) -> None:
        """Send a normal close frame (if still open) and close the socket."""
        await self._close(CLOSE_NORMAL, "")

    async def keepalive(self, interval: float, idle_timeout: float) -> None:
        """Ping every ``interval`` seconds; close a dead or idle connection. Runs until closed.

        A peer that does not read is closed ``1008`` (policy violation), with the reason
        ``the peer stopped reading``: its socket took nothing for a whole ``interval`` while
        frames waited, or it has not answered the previous ping by the next one while frames
        still wait for it (the ping itself may be among them: a peer that reads nothing never
        sees it, so which of the two is found first depends only on when the socket last took
        a slice). A peer that has not answered the previous ping with nothing left to send it
        is gone (close ``1001``); a connection with no message either way for
        ``idle_timeout`` seconds is closed ``1001`` too.
        """
        from wsproto.events import Ping

        ping: Any = ("ping", b"accord") if self._websockets else Ping(payload=b"accord")
        while not self.closed:
            await anyio.sleep(interval)
            if self.closed:
                return
            if self._stalled(interval):
                await self._close(CLOSE_POLICY, STOPPED_READING)
                return
            if self._awaiting_pong and self._waiting():
                await self._close(CLOSE_POLICY, f"{STOPPED_READING} (the ping still unanswered)")
                return
            if self._awaiting_pong:
                await self._close(CLOSE_GOING_AWAY, "no answer to the heartbeat ping")
                return
            if anyio.current_time() - self._last_activity >= idle_timeout:
                await self._close(CLOSE_GOING_AWAY, "idle timeout")
                return
            self._awaiting_pong = True
            try:
                # A control frame: never waits behind the backpressure, or a peer that
                # stopped reading would stop the heartbeat that finds it out.
                await self._write(ping, control=True)
            except ConnectionClosed:
                return

    def _waiting(self) -> bool:
        return bool(self._queue or self._pong or self._in_flight)

    def _mark_waiting(self) -> None:
        """Before a frame is queued: if nothing waited, the wait for the socket starts now."""
        if not self._waiting():
            self._last_written = anyio.current_time()

    def _stalled(self, interval: float) -> bool:
        """Whether frames have waited a whole ``interval`` with nothing taken by the socket."""
        return self._waiting() and anyio.current_time() - self._last_written >= interval

    async def _handle_events(self) -> None:
        if self._websockets:
            await self._handle_frames()
            return
        from wsproto.connection import ConnectionState
        from wsproto.events import (
            BytesMessage,
            CloseConnection,
            Ping,
            Pong,
            TextMessage,
        )

        ws = cast("Connection | WSConnection", self._ws)
        for event in ws.events():
            if isinstance(event, TextMessage | BytesMessage):
                self._size += len(event.data)
                if self._size > self._max or len(self._parts) >= self._max_parts:
                    await self._close(CLOSE_TOO_BIG, f"message over the limit of {self._max} bytes")
                    return
                self._parts.append(event.data)
                if event.message_finished:
                    parts, self._parts, self._size = self._parts, [], 0
                    if isinstance(event, BytesMessage):
                        _log.info("ignored a binary WebSocket message (ACP uses text frames)")
                        continue
                    self._last_activity = anyio.current_time()
                    text = "".join(str(p) for p in parts)
                    self._ready.append(decode_line(text.encode("utf-8", "surrogatepass")))
            elif isinstance(event, Ping):
                await self._answer_ping(event.response())
            elif isinstance(event, Pong):
                self._awaiting_pong = False
            elif isinstance(event, CloseConnection):
                if ws.state is ConnectionState.OPEN:
                    # Not the peer's close: wsproto found a protocol error (a bad frame, text
                    # that is not UTF-8) and says which code to close with (1002, 1007).
                    await self._close(event.code, event.reason or "WebSocket protocol error")
                    return
                self._peer_closed = True
                await self._answer_close(event)
                return
        if not self._closed and self._declared_over_limit():
            await self._close(CLOSE_TOO_BIG, f"message over the limit of {self._max} bytes")

    async def _handle_frames(self) -> None:
        """Take the frames websockets parsed (client side); write what it answered."""
        from websockets.frames import Frame, Opcode

        ws = cast("ClientProtocol", self._ws)
        for frame in ws.events_received():
            if not isinstance(frame, Frame):
                continue
            opcode = frame.opcode
            if opcode is Opcode.TEXT or opcode is Opcode.BINARY or opcode is Opcode.CONT:
                if opcode is not Opcode.CONT:
                    self._binary = opcode is Opcode.BINARY
                self._size += len(frame.data)
                if self._size > self._max or len(self._parts) >= self._max_parts:
                    await self._close(CLOSE_TOO_BIG, f"message over the limit of {self._max} bytes")
                    return
                self._parts.append(bytes(frame.data))
                if frame.fin:
                    parts, self._parts, self._size = self._parts, [], 0
                    if self._binary:
                        _log.info("ignored a binary WebSocket message (ACP uses text frames)")
                        continue
                    self._last_activity = anyio.current_time()
                    data = parts[0] if len(parts) == 1 else b"".join(cast("list[bytes]", parts))
                    self._ready.append(decode_line(cast("bytes", data)))
            elif opcode is Opcode.PONG:
                self._awaiting_pong = False
        # Pongs to pings, the answer to a close or to a protocol error: websockets queued them.
        answers = b"".join(ws.data_to_send())
        ending = not self._is_open()
        if answers:
            try:
                await self._write(None, closing=ending, frame=answers)
            except ConnectionClosed:
                pass
        if ending:
            self._peer_closed = True
            await self._shut_socket()

    def _is_open(self) -> bool:
        if self._websockets:
            from websockets.protocol import State

            return cast("ClientProtocol", self._ws).state is State.OPEN
        from wsproto.connection import ConnectionState

        return cast("Connection | WSConnection", self._ws).state is ConnectionState.OPEN

    def _encode(self, event: Any) -> bytes:
        """The bytes of one frame: a wsproto event, or ``(kind, payload)`` for websockets."""
        if not self._websockets:
            return cast("Connection | WSConnection", self._ws).send(event)
        kind, payload = event
        ws: Any = self._ws
        if kind == "text":
            ws.send_text(payload)
        elif kind == "ping":
            ws.send_ping(payload)
        else:
            ws.send_close(*payload)
        return b"".join(ws.data_to_send())

    async def _answer_close(self, event: Any) -> None:
        from wsproto.connection import ConnectionState

        self._pong = b""  # the answering close is the last frame
        if self._ws.state is ConnectionState.REMOTE_CLOSING:
            # Bounded as the close of this side is: a peer that sent its close and reads
            # nothing more must not hold the socket open.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_WRITE_TIMEOUT):
                try:
                    await self._write(event.response(), closing=True)
                except ConnectionClosed:
                    pass
        await self._shut_socket()

    async def _answer_ping(self, pong: Any) -> None:
        """Answer a ping: its pong replaces one still waiting, so a flood holds one pong."""
        if self._closed:
            return
        try:
            data = self._encode(pong)
        except self._send_errors:
            return
        if not self._queue and not self._writing and not self._writer_running:
            await self._write(None, frame=data)
            return
        self._mark_waiting()
        self._pong = data
        if self._writer_running:
            self._has_data.set()

    async def _write(
        self, event: Any, *, closing: bool = False, frame: bytes = b"", control: bool = False
    ) -> None:
        """Queue one frame and write the queue out (coalescing a burst into one write).

        The first sender writes; frames sent while it writes join the queue and are written
        with the next write, their senders returning at once unless the queue is over
        :data:`WRITE_HIGH_WATER` (then they wait: the backpressure); a ``control`` frame
        (the heartbeat ping) never waits.
        """
        if self._closed and not closing:
            raise ConnectionClosed(self._close_reason or "the WebSocket connection is closed")
        try:
            data = frame or self._encode(event)
        except self._send_errors as exc:
            self._peer_closed = True
            raise ConnectionClosed("the WebSocket connection is closed") from exc
        self._mark_waiting()
        self._queue.append(data)
        self._queued += len(data)
        if self._writer_running and not closing:
            self._has_data.set()
        elif not self._writing:
            await self._flush()
            return
        while not control and self._queued > WRITE_HIGH_WATER and not self._peer_closed:
            await self._written.wait()

    async def run_writer(self) -> None:
        """Write queued frames in the background until closed (the connection runs it).

        A message sent while this runs is queued and the sender goes on; the frames queued
        meanwhile go out in one write. Senders wait only past :data:`WRITE_HIGH_WATER`.

        Raises:
            RuntimeError: it is already running.
        """
        if self._writer_running:
            raise RuntimeError("run_writer is already running for this transport")
        self._writer_running = True
        try:
            while not self.closed:
                if not self._queue and not self._pong:
                    await self._has_data.wait()
                    self._has_data = anyio.Event()
                    continue
                if self._writing:
                    await self._written.wait()
                    continue
                try:
                    await self._flush()
                except ConnectionClosed:
                    return
        finally:
            self._writer_running = False

    async def _flush(self) -> None:
        self._writing = True
        try:
            while self._queue or self._pong:
                if self._pong:
                    self._queue.append(self._pong)
                    self._pong = b""
                chunk = b"".join(self._queue)
                self._queue.clear()
                self._queued = 0
                # In slices, so a peer that reads slowly shows progress (:meth:`_stalled`).
                for start in range(0, len(chunk), _WRITE_SLICE):
                    piece = chunk[start : start + _WRITE_SLICE]
                    self._in_flight = len(chunk) - start
                    await self._stream.send(piece)
                    self._last_written = anyio.current_time()
                self._in_flight = 0
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._peer_closed = True
            self._queue.clear()
            self._pong = b""
            raise ConnectionClosed("the WebSocket connection is closed") from exc
        finally:
            self._in_flight = 0
            self._writing = False
            self._written.set()
            self._written = anyio.Event()

    async def _drain(self) -> None:
        while self._writing:
            await self._written.wait()
        if self._queue or self._pong:
            await self._flush()

    async def _close(self, code: int, reason: str) -> None:
        from wsproto.events import CloseConnection

        if self._closed:
            return
        self._closed = True
        self._pong = b""  # nothing may follow the close frame (RFC 6455, 5.5.1)
        self._has_data.set()  # the background writer stops
        self._close_reason = reason or "the WebSocket connection is closed"
        if reason:
            _log.info("closing a WebSocket connection (%d): %s", code, reason)
        with anyio.CancelScope(shield=True):
            # The close frame's write is bounded; the socket is closed whatever became of it
            # (a peer that takes no byte must not keep it open).
            with anyio.move_on_after(CLOSE_WRITE_TIMEOUT):
                if self._is_open():
                    close: Any = (
                        ("close", (code, reason))
                        if self._websockets
                        else CloseConnection(code=code, reason=reason)
                    )
                    try:
                        await self._write(close, closing=True)
                        await self._drain()
                    except ConnectionClosed:
                        pass
            await self._shut_socket()

    async def _shut_socket(self) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_WRITE_TIMEOUT):
            try:
                await self._stream.aclose()
            except (anyio.BrokenResourceError, OSError):
                pass


def _text_frame(payload: bytes) -> bytes:
    """One unmasked, final text frame carrying ``payload``."""
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    if size < 65536:
        return bytes((0x81, 126)) + size.to_bytes(2, "big") + payload
    return bytes((0x81, 127)) + size.to_bytes(8, "big") + payload

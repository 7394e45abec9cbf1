"""The served agent: ACP at ``/acp`` over WebSocket and Streamable HTTP, on one TCP port.

:func:`serve_remote` listens (plain TCP or TLS), reads each socket's requests with h11, and
for every request checks, in this order: the credential is not in the URL, the bearer token
(401 with ``WWW-Authenticate: Bearer``), the ``Origin`` (403), the path (404), then routes:

* ``GET`` with ``Upgrade: websocket``: the upgrade, answered ``101`` with
  ``Acp-Connection-Id``; the socket becomes a :class:`~._websocket.WebSocketTransport`.
* ``POST``: one JSON-RPC message (``application/json``, at most the message limit);
  ``initialize`` without ``Acp-Connection-Id`` creates a connection and is answered ``200``
  with its result, the rest ``202``.
* ``GET`` with ``Accept: text/event-stream``: the connection's or a session's event stream.
* ``DELETE``: ends the connection.

Every accepted ACP connection becomes one :class:`~accord.transports.Transport` handed to
``handler`` (the agent runtime's ``serve``), in its own task; a failing connection is logged
and closed, the server keeps serving. Bad HTTP, a bad upgrade, an unknown connection id or a
hostile header gets its status code and the socket is closed.

Above: the CLI (``accord serve --listen``). Below: :mod:`._auth`, :mod:`._limits`,
:mod:`._http11`, :mod:`._websocket`, :mod:`._streamable`, h11, wsproto, anyio.
"""

from __future__ import annotations

import base64
import binascii
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import h11
import orjson

from ..errors import ConnectionClosed
from ..transports import Transport
from ._admission import Admission, Ticket, address_key
from ._auth import AccessPolicy, Refusal
from ._http11 import BadFraming, BodyTooLarge, HttpChannel, header_map
from ._limits import ServerLimits
from ._request_head import HeadProblem, read_head
from ._streamable import HttpAcpConnection, OutboundStream, route_key, session_of
from ._websocket import WebSocketTransport

__all__ = ("ACP_PATH", "CONNECTION_HEADER", "SESSION_HEADER", "serve_remote")

_log = logging.getLogger("accord.remote")

#: The one endpoint (RFD: a single ``/acp`` endpoint for every profile).
ACP_PATH = b"/acp"
CONNECTION_HEADER = "Acp-Connection-Id"
SESSION_HEADER = "Acp-Session-Id"

#: Largest single write to an event stream's socket; a slice not taken within a heartbeat
#: interval is a client that stopped reading.
_WRITE_SLICE = 256 * 1024

#: Seconds ``initialize`` may take over HTTP before the POST is answered 504.
INITIALIZE_TIMEOUT = 120.0

Handler = Callable[[Transport], Awaitable[None]]


async def serve_remote(
    handler: Handler,
    *,
    host: str,
    port: int,
    policy: AccessPolicy,
    limits: ServerLimits | None = None,
    ssl_context: ssl.SSLContext | None = None,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ACP at ``/acp`` on ``host:port`` until cancelled; reports the bound port.

    Start it with ``port = await task_group.start(partial(serve_remote, handler, ...))``
    (port 0 picks a free one). ``handler`` is called once per ACP connection with its
    transport and returns when the connection is over.

    Raises:
        OSError: the address cannot be bound.
    """
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    bound = listener.extra(anyio.abc.SocketAttribute.local_port)
    limits = limits or ServerLimits()
    async with anyio.create_task_group() as task_group:
        server = _Server(handler, policy, limits, task_group, ssl_context)
        task_status.started(bound)
        await listener.serve(server.handle_socket, task_group=task_group)


class _Server:
    def __init__(
        self,
        handler: Handler,
        policy: AccessPolicy,
        limits: ServerLimits,
        task_group: anyio.abc.TaskGroup,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        self._handler = handler
        self._policy = policy
        self._limits = limits
        self._task_group = task_group
        self._ssl_context = ssl_context
        self._http: dict[str, HttpAcpConnection] = {}
        self._live = 0  # connections held by the token (one token per server)
        self._admission = Admission(
            per_address=limits.max_unauthenticated_per_address,
            total=limits.max_unauthenticated,
        )

    async def handle_socket(self, stream: anyio.abc.SocketStream) -> None:
        address = address_key(stream.extra(anyio.abc.SocketAttribute.remote_address, ""))
        ticket = self._admission.admit(address)
        byte_stream: anyio.abc.ByteStream = stream
        try:
            with ticket.scope:
                if self._ssl_context is not None:
                    byte_stream = await self._tls(stream, self._ssl_context)
                    if byte_stream is stream:
                        return
                await self._serve_socket(byte_stream, ticket)
        finally:
            ticket.release()
            with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                await byte_stream.aclose()

    async def _tls(
        self, stream: anyio.abc.SocketStream, context: ssl.SSLContext
    ) -> anyio.abc.ByteStream:
        """The TLS stream over ``stream``; ``stream`` itself if the handshake failed."""
        from anyio.streams.tls import TLSStream

        try:
            with anyio.fail_after(self._limits.request_timeout):
                return await TLSStream.wrap(
                    stream, server_side=True, ssl_context=context, standard_compatible=False
                )
        except (TimeoutError, ssl.SSLError, OSError, anyio.BrokenResourceError, anyio.EndOfStream):
            return stream

    async def _serve_socket(self, stream: anyio.abc.ByteStream, ticket: Ticket) -> None:
        channel = HttpChannel(stream, h11.SERVER, max_header_bytes=self._limits.max_header_bytes)
        try:
            await self._serve_requests(channel, ticket)
        except h11.RemoteProtocolError as exc:
            await self._refuse_bad_http(channel, exc)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
            pass
        except Exception:  # one bad connection must never stop the server
            _log.exception("an ACP connection failed")

    async def _serve_requests(self, channel: HttpChannel, ticket: Ticket) -> None:
        wait = self._limits.request_timeout
        while True:
            event: Any = None
            with anyio.move_on_after(wait):
                event = await channel.next_event()
            if not isinstance(event, h11.Request):
                return
            if not await self._dispatch(channel, event, ticket):
                return
            if channel.h11.their_state is h11.SEND_BODY:
                # A request whose body nothing read (a 404, a DELETE): read it past, bounded,
                # so the next request on the connection starts where it should.
                with anyio.move_on_after(self._limits.request_timeout):
                    try:
                        await channel.read_body(self._limits.max_message_bytes)
                    except BodyTooLarge:
                        return
            if channel.h11.our_state is not h11.DONE or channel.h11.their_state is not h11.DONE:
                return
            channel.h11.start_next_cycle()
            wait = self._limits.idle_timeout

    async def _refuse_bad_http(self, channel: HttpChannel, exc: h11.RemoteProtocolError) -> None:
        status = exc.error_status_hint
        # h11's messages quote the client's bytes (a request line with a token in its query,
        # say): only this server's own reasons are logged and sent back.
        reason = str(exc) if isinstance(exc, BadFraming) else "bad request"
        _log.info("refused malformed HTTP (%d): %s", status, reason)
        if channel.h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            try:
                body = reason.encode() + b"\n"
                await channel.respond(status, body, [("Connection", "close")])
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, h11.LocalProtocolError):
                pass

    async def _dispatch(self, channel: HttpChannel, request: h11.Request, ticket: Ticket) -> bool:
        """Answer one request; False when the socket must close (or was handed over)."""
        head = read_head(
            request.method,
            request.target,
            request.headers,
            max_bytes=self._limits.max_header_bytes,
            max_headers=self._limits.max_headers,
            version=request.http_version,
        )
        if isinstance(head, HeadProblem):
            reason = head.reason.encode() + b"\n"
            await channel.respond(head.status, reason, [("Connection", "close")])
            return False
        headers = header_map(request.headers)
        refusal = self._policy.check(head.query, headers, head.authority)
        if refusal is not None:
            await _refuse(channel, refusal)
            return False
        ticket.authenticated()
        if head.path != ACP_PATH:
            await channel.respond(404, b"not found: ACP is served at /acp\n")
            return True
        method = request.method
        if method == b"GET" and b"websocket" in headers.get(b"upgrade", b"").lower():
            if request.http_version != b"1.1":
                await channel.respond(400, b"a WebSocket upgrade needs HTTP/1.1\n")
                return False
            await self._websocket(channel, headers)
            return False
        if method == b"GET":
            await self._event_stream(channel, headers)
            return False
        if method == b"POST":
            return await self._post(channel, headers)
        if method == b"DELETE":
            await self._delete(channel, headers)
            return True
        await channel.respond(405, b"method not allowed\n", [("Allow", "GET, POST, DELETE")])
        return True

    # ------------------------------------------------------------------ WebSocket

    async def _websocket(self, channel: HttpChannel, headers: dict[bytes, bytes]) -> None:
        from wsproto.connection import Connection, ConnectionType
        from wsproto.utilities import generate_accept_token

        key = headers.get(b"sec-websocket-key", b"")
        if headers.get(b"sec-websocket-version") != b"13":
            await channel.respond(
                426, b"WebSocket version 13 required\n", [("Sec-WebSocket-Version", "13")]
            )
            return
        if b"upgrade" not in headers.get(b"connection", b"").lower() or not _valid_key(key):
            await channel.respond(400, b"bad WebSocket upgrade\n")
            return
        if not self._acquire():
            await channel.respond(429, b"too many connections for this token\n")
            return
        try:
            connection_id = _new_id()
            await channel.send(
                h11.InformationalResponse(
                    status_code=101,
                    headers=[
                        (b"upgrade", b"websocket"),
                        (b"connection", b"Upgrade"),
                        (b"sec-websocket-accept", generate_accept_token(key)),
                        (CONNECTION_HEADER.encode(), connection_id.encode()),
                    ],
                )
            )
            trailing, _ = channel.h11.trailing_data
            ws = Connection(ConnectionType.SERVER, trailing_data=bytes(trailing))
            transport = WebSocketTransport(
                channel.stream, ws, max_message_bytes=self._limits.max_message_bytes
            )
            _log.info("WebSocket connection %s opened", connection_id)
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    transport.keepalive,
                    self._limits.heartbeat_interval,
                    self._limits.idle_timeout,
                )
                try:
                    await self._handler(transport)
                finally:
                    tg.cancel_scope.cancel()
                    await transport.aclose()
            _log.info("WebSocket connection %s closed", connection_id)
        finally:
            self._live -= 1

    # ------------------------------------------------------------------ Streamable HTTP

    async def _post(self, channel: HttpChannel, headers: dict[bytes, bytes]) -> bool:
        content_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        if content_type != b"application/json":
            await channel.respond(415, b"Content-Type must be application/json\n")
            return False
        limit = self._limits.max_message_bytes
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await channel.respond(413, b"message too large\n", [("Connection", "close")])
            return False
        if channel.h11.they_are_waiting_for_100_continue:
            await channel.send(h11.InformationalResponse(status_code=100, headers=[]))
        try:
            with anyio.fail_after(self._limits.request_timeout):
                body = await channel.read_body(limit)
        except BodyTooLarge:
            await channel.respond(413, b"message too large\n", [("Connection", "close")])
            return False
        except TimeoutError:
            await channel.respond(408, b"request body too slow\n", [("Connection", "close")])
            return False
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            await channel.respond(400, b"Invalid JSON\n")
            return True
        if isinstance(message, list):
            error = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": "JSON-RPC batches are not supported"},
            }
            await channel.respond(501, orjson.dumps(error), content_type="application/json")
            return True
        if not isinstance(message, dict):
            await channel.respond(400, b"Invalid JSON-RPC message: not an object\n")
            return True
        await self._post_message(channel, headers, message)  # pyright: ignore[reportUnknownArgumentType]
        return True

    async def _post_message(
        self, channel: HttpChannel, headers: dict[bytes, bytes], message: dict[str, Any]
    ) -> None:
        connection_id = _header(headers, CONNECTION_HEADER)
        if message.get("method") == "initialize" and "id" in message:
            if connection_id is not None:
                await channel.respond(400, b"Initialize not allowed on an existing connection\n")
                return
            if route_key(message["id"]) is None:
                # Its answer is matched by id to be this POST's: null (or what is no id at
                # all) would look like the agent's answer to any message it could not read.
                await _invalid_request(channel, "initialize needs an id: a string or an integer")
                return
            await self._initialize(channel, message)
            return
        if connection_id is None:
            await channel.respond(400, b"Missing Acp-Connection-Id\n")
            return
        connection = self._http.get(connection_id)
        if connection is None:
            await channel.respond(404, b"Unknown Acp-Connection-Id\n")
            return
        session_header = _header(headers, SESSION_HEADER)
        if "method" not in message:
            problem = connection.check_response_route(message, session_header)
            route = session_header
        else:
            params_session = session_of(message)
            problem = ""
            if params_session is not None and session_header is None:
                problem = "Missing Acp-Session-Id"
            elif params_session is not None and session_header != params_session:
                problem = "Mismatched Acp-Session-Id"
            route = session_header
        if problem:
            await channel.respond(400, problem.encode() + b"\n")
            return
        try:
            await connection.post(message, route)
        except ConnectionClosed:
            await channel.respond(404, b"Unknown Acp-Connection-Id\n")
            return
        await channel.respond(202)

    async def _initialize(self, channel: HttpChannel, message: dict[str, Any]) -> None:
        if not self._acquire():
            await channel.respond(429, b"too many connections for this token\n")
            return
        connection = HttpAcpConnection(
            "token", buffer=self._limits.sse_buffer, buffer_bytes=self._limits.sse_buffer_bytes
        )
        self._http[connection.connection_id] = connection
        self._task_group.start_soon(self._run_http_connection, connection)
        answer = await connection.initialize(message, INITIALIZE_TIMEOUT)
        if answer is None:
            await connection.aclose()
            await channel.respond(504, b"the agent did not answer initialize\n")
            return
        await channel.respond(
            200,
            orjson.dumps(answer),
            [(CONNECTION_HEADER, connection.connection_id)],
            content_type="application/json",
        )

    async def _run_http_connection(self, connection: HttpAcpConnection) -> None:
        _log.info("HTTP connection %s opened", connection.connection_id)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._reap_idle, connection)
                try:
                    await self._handler(connection)
                except Exception:
                    _log.exception("an ACP connection failed")
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await connection.aclose()
            self._http.pop(connection.connection_id, None)
            self._live -= 1
            _log.info("HTTP connection %s closed", connection.connection_id)

    async def _reap_idle(self, connection: HttpAcpConnection) -> None:
        """Close an HTTP connection with no message either way for the idle timeout.

        As over WebSocket, only messages count (a POST, or one the agent sends): a GET held
        open and the heartbeat comments written to it do not, so a client that only listens
        to a quiet connection is closed all the same (its sessions run on and can be resumed).
        """
        while not connection.closed:
            await anyio.sleep(min(self._limits.heartbeat_interval, self._limits.idle_timeout))
            quiet = anyio.current_time() - connection.last_activity
            if quiet >= self._limits.idle_timeout:
                _log.info("HTTP connection %s idle: closed", connection.connection_id)
                await connection.aclose()

    async def _event_stream(self, channel: HttpChannel, headers: dict[bytes, bytes]) -> None:
        if b"text/event-stream" not in headers.get(b"accept", b"").lower():
            await channel.respond(406, b"Accept must include text/event-stream\n")
            return
        connection_id = _header(headers, CONNECTION_HEADER)
        if connection_id is None:
            await channel.respond(400, b"Missing Acp-Connection-Id\n")
            return
        connection = self._http.get(connection_id)
        if connection is None or connection.closed:
            await channel.respond(404, b"Unknown Acp-Connection-Id\n")
            return
        session_id = _header(headers, SESSION_HEADER)
        stream = connection.open_stream(session_id, self._limits.max_streams_per_connection)
        if stream is None:
            await channel.respond(429, b"too many event streams on this connection\n")
            return
        if stream.attached:
            await channel.respond(409, b"this stream already has a reader\n")
            return
        stream.attached = True
        try:
            await channel.send(
                h11.Response(
                    status_code=200,
                    headers=[
                        (b"content-type", b"text/event-stream"),
                        (b"cache-control", b"no-cache"),
                    ],
                )
            )
            async with anyio.create_task_group() as tg:
                gone = anyio.Event()
                tg.start_soon(_watch_reader, channel, stream, gone)
                await self._pump(channel, connection, stream, gone)
                tg.cancel_scope.cancel()
        finally:
            connection.release(session_id, stream)

    async def _pump(
        self,
        channel: HttpChannel,
        connection: HttpAcpConnection,
        stream: OutboundStream,
        gone: anyio.Event,
    ) -> None:
        """Write ``stream``'s events (or a heartbeat) until it ends or its reader is gone.

        A batch goes out in slices of :data:`_WRITE_SLICE`; a slice the socket has not taken
        within a heartbeat interval means the client stopped reading: the connection is
        closed (the agent's sessions go on for their grace period and can be resumed).
        """
        interval = self._limits.heartbeat_interval
        while True:
            batch = await stream.next_batch(interval)
            if gone.is_set():
                stream.requeue(batch or [])
                return
            if batch is None:
                await channel.send(h11.EndOfMessage())
                return
            data = b"".join(batch) or b": ping\n\n"
            stream.in_flight = len(data)
            start = 0
            try:
                for start in range(0, len(data), _WRITE_SLICE):
                    with anyio.move_on_after(interval) as scope:
                        await channel.send(h11.Data(data=data[start : start + _WRITE_SLICE]))
                    if scope.cancelled_caught:
                        _log.info(
                            "closing HTTP connection %s: the peer stopped reading",
                            connection.connection_id,
                        )
                        await connection.aclose()
                        return
                    stream.in_flight = max(0, len(data) - start - _WRITE_SLICE)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                stream.requeue(_unsent(batch, start))  # for the next GET: nothing lost
                return
            finally:
                stream.in_flight = 0

    async def _delete(self, channel: HttpChannel, headers: dict[bytes, bytes]) -> None:
        connection_id = _header(headers, CONNECTION_HEADER)
        if connection_id is None:
            await channel.respond(400, b"Missing Acp-Connection-Id\n")
            return
        connection = self._http.pop(connection_id, None)
        if connection is None or connection.closed:  # ended, as on GET and POST
            await channel.respond(404, b"Unknown Acp-Connection-Id\n")
            return
        await connection.aclose()
        await channel.respond(202)

    def _acquire(self) -> bool:
        if self._live >= self._limits.max_connections_per_token:
            return False
        self._live += 1
        return True


async def _watch_reader(channel: HttpChannel, stream: OutboundStream, gone: anyio.Event) -> None:
    """Wait until the client of a GET stream hangs up (or sends anything: a client has
    nothing to send behind a stream that never ends), then wake the stream's writer.

    Without it a stream's reader would be found gone only at the next heartbeat write, and
    held (409 to the client's next GET, counted against the connection's streams) till then.
    """
    try:
        await channel.stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    gone.set()
    stream.wake()


async def _invalid_request(channel: HttpChannel, reason: str) -> None:
    """Answer ``400`` with the JSON-RPC error -32600 (id null) saying ``reason``."""
    error = {"code": -32600, "message": "Invalid request", "data": reason}
    body = orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error})
    await channel.respond(400, body, content_type="application/json")


async def _refuse(channel: HttpChannel, refusal: Refusal) -> None:
    body = (refusal.reason + "\n").encode()
    await channel.respond(refusal.status, body, [*refusal.headers, ("Connection", "close")])


def _header(headers: dict[bytes, bytes], name: str) -> str | None:
    value = headers.get(name.lower().encode())
    if value is None:
        return None
    try:
        text = value.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    return text or None


def _valid_key(key: bytes) -> bool:
    try:
        return len(base64.b64decode(key, validate=True)) == 16
    except (binascii.Error, ValueError):
        return False


def _new_id() -> str:
    import secrets

    return secrets.token_urlsafe(18)


def _unsent(batch: list[bytes], sent: int) -> list[bytes]:
    """The events of ``batch`` not wholly within its first ``sent`` bytes (the socket took
    those before it broke); an event cut in the middle is sent again whole."""
    end = 0
    for index, event in enumerate(batch):
        end += len(event)
        if end > sent:
            return batch[index:]
    return []

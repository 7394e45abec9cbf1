"""Streamable HTTP, client side: POST each message, read the answers from event streams.

The first message must be ``initialize``: its POST is answered ``200`` with the result and the
``Acp-Connection-Id``, and the connection's event stream (GET) is opened. An answer naming a
new session (``result.sessionId``: ``session/new``, ``session/fork``) opens that session's
stream before it is handed on, since the agent sends the session's first updates right after
it. A message for a session (``params.sessionId``, or the answer to a request that came on a
session's stream) first opens that session's stream, then goes out with ``Acp-Session-Id``.
Messages from every stream arrive through one bounded queue, in the order each stream
delivers them. A request whose POST is refused is answered locally with a JSON-RPC error
(``data: {status}``); a refused notification or answer, or the connection's stream ending,
closes the transport.
Closing sends ``DELETE``.

Above: :mod:`._client`. Below: :mod:`._endpoint`, :mod:`._http11`, :mod:`._sse`, h11, anyio.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import anyio.abc
import h11
import orjson

from ..errors import ConnectionClosed
from ..transports import encode_message
from ._endpoint import RemoteEndpoint, refusal
from ._http11 import BodyTooLarge, HttpChannel, header_map
from ._sse import SseDecoder, SseTooLarge
from ._streamable import route_key, session_of

__all__ = ("HttpClientTransport", "open_http_transport")

_log = logging.getLogger("accord.remote")

#: Messages from the event streams held until the connection reads them.
INBOUND_BUFFER = 1024
_MAX_MESSAGE = 16 * 1024 * 1024

#: Seconds to reach the server and get a request's whole answer (or an event stream's
#: head): past the server's own wait for the agent's ``initialize`` answer (120 s), so only
#: a server that stopped answering trips it.
RESPONSE_TIMEOUT = 150.0


@asynccontextmanager
async def open_http_transport(
    endpoint: RemoteEndpoint, token: str, ssl_context: ssl.SSLContext | None
) -> AsyncGenerator[HttpClientTransport]:
    """A Streamable HTTP transport to ``endpoint``; its streams run in a task group."""
    async with anyio.create_task_group() as tg:
        transport = HttpClientTransport(endpoint, token, ssl_context, tg)
        try:
            yield transport
        finally:
            await transport.aclose()
            tg.cancel_scope.cancel()


class HttpClientTransport:
    """A :class:`~accord.transports.Transport` over Streamable HTTP."""

    def __init__(
        self,
        endpoint: RemoteEndpoint,
        token: str,
        ssl_context: ssl.SSLContext | None,
        task_group: anyio.abc.TaskGroup,
    ) -> None:
        """Use :func:`open_http_transport`."""
        self._endpoint = endpoint
        self._auth = f"Bearer {token}"
        self._ssl = ssl_context
        self._tg = task_group
        self._connection_id: str | None = None
        self._sessions: set[str] = set()
        self._answer_sessions: dict[str, str] = {}
        send, receive = anyio.create_memory_object_stream[Any](INBOUND_BUFFER)
        self._inbound_send = send
        self._inbound = receive
        self._post_lock = anyio.Lock()
        self._channel: HttpChannel | None = None
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        """POST ``message`` (opening the event streams it needs).

        Raises:
            ConnectionRefused: the server refused (401, 403, 404: the connection is gone).
            ConnectionClosed: the transport is closed or the server is unreachable.
        """
        if self._closed:
            raise ConnectionClosed("the HTTP transport is closed")
        if self._connection_id is None:
            await self._initialize(message)
            return
        session = session_of(message) if "method" in message else None
        if "method" not in message:
            key = route_key(message.get("id"))
            session = self._answer_sessions.pop(key, None) if key is not None else None
        if session is not None and session not in self._sessions:
            self._sessions.add(session)
            await self._tg.start(self._read_stream, session)
        headers = [("Acp-Connection-Id", self._connection_id)]
        if session is not None:
            headers.append(("Acp-Session-Id", session))
        status, body, answer_headers = await self._post(message, headers)
        if status in (200, 202):
            return
        if "method" in message and "id" in message and status not in (401, 403, 404, 410):
            await self._inbound_send.send(_error_answer(message["id"], status, body))
            return
        await self._fail()

        raise refusal(status, body, answer_headers.get(b"location"))

    async def receive(self) -> Any:
        """The next message from any event stream.

        Raises:
            anyio.EndOfStream: the connection's stream ended (the server closed it).
        """
        try:
            return await self._inbound.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        """End the connection (``DELETE``) and stop reading."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            if self._connection_id is not None:
                try:
                    await self._request(
                        "DELETE", None, [("Acp-Connection-Id", self._connection_id)]
                    )
                except (OSError, ConnectionClosed, h11.ProtocolError, anyio.BrokenResourceError):
                    pass
            if self._channel is not None:
                await self._channel.stream.aclose()
        self._inbound_send.close()
        self._inbound.close()
        self._tg.cancel_scope.cancel()

    async def _initialize(self, message: dict[str, Any]) -> None:
        if message.get("method") != "initialize":
            raise ConnectionClosed("the first message over Streamable HTTP must be initialize")
        status, body, headers = await self._post(message, [])
        connection_id = headers.get(b"acp-connection-id")
        if status != 200 or connection_id is None:
            await self._fail()
            raise refusal(status, body, headers.get(b"location"))
        self._connection_id = connection_id.decode("ascii")
        await self._tg.start(self._read_stream, None)
        await self._inbound_send.send(orjson.loads(body))

    async def _post(
        self, message: dict[str, Any], headers: list[tuple[str, str]]
    ) -> tuple[int, bytes, dict[bytes, bytes]]:
        body = encode_message(message)[:-1]
        return await self._request("POST", body, [("Content-Type", "application/json"), *headers])

    async def _request(
        self, method: str, body: bytes | None, headers: list[tuple[str, str]]
    ) -> tuple[int, bytes, dict[bytes, bytes]]:
        """One request on the kept-alive connection (reopened when the server closed it)."""
        async with self._post_lock:
            for attempt in (1, 2):
                channel = self._channel
                fresh = channel is None
                if channel is None:
                    channel = self._channel = await self._open_channel()
                try:
                    with anyio.fail_after(RESPONSE_TIMEOUT):
                        return await self._exchange(channel, method, body, headers)
                except TimeoutError:
                    self._channel = None
                    with anyio.CancelScope(shield=True):
                        await channel.stream.aclose()
                    raise ConnectionClosed(
                        f"the agent's server did not answer within {RESPONSE_TIMEOUT:g} s"
                    ) from None
                except (
                    anyio.BrokenResourceError,
                    anyio.EndOfStream,
                    h11.ProtocolError,
                    OSError,
                ) as exc:
                    self._channel = None
                    with anyio.CancelScope(shield=True):
                        await channel.stream.aclose()
                    if fresh or attempt == 2:
                        if isinstance(exc, h11.ProtocolError):
                            raise ConnectionClosed(
                                f"the agent's server did not answer in HTTP: {exc}"
                            ) from None
                        raise ConnectionClosed("the agent's server closed the connection") from None
            raise AssertionError("unreachable")

    async def _exchange(
        self, channel: HttpChannel, method: str, body: bytes | None, headers: list[tuple[str, str]]
    ) -> tuple[int, bytes, dict[bytes, bytes]]:
        head = [
            ("Host", self._endpoint.host_header),
            ("Authorization", self._auth),
            *headers,
            ("Content-Length", str(len(body or b""))),
        ]
        await channel.send(h11.Request(method=method, target=self._endpoint.target, headers=head))
        if body:
            await channel.send(h11.Data(data=body))
        await channel.send(h11.EndOfMessage())
        event = await channel.next_event()
        while isinstance(event, h11.InformationalResponse):
            event = await channel.next_event()
        if not isinstance(event, h11.Response):
            raise h11.RemoteProtocolError("no response")
        try:
            answer = await channel.read_body(_MAX_MESSAGE)
        except BodyTooLarge:
            raise h11.RemoteProtocolError("response too large") from None
        if channel.h11.our_state is h11.DONE and channel.h11.their_state is h11.DONE:
            channel.h11.start_next_cycle()
        else:
            self._channel = None
            await channel.stream.aclose()
        return event.status_code, answer, header_map(event.headers)

    async def _open_channel(self) -> HttpChannel:
        try:
            with anyio.fail_after(RESPONSE_TIMEOUT):
                stream = await self._endpoint.connect_tcp(self._ssl)
        except TimeoutError:
            raise ConnectionClosed(
                f"cannot reach the agent's server within {RESPONSE_TIMEOUT:g} s"
            ) from None
        except OSError as exc:
            raise ConnectionClosed(f"cannot reach the agent's server: {exc}") from exc
        return HttpChannel(stream, h11.CLIENT)

    async def _read_stream(
        self,
        session: str | None,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        assert self._connection_id is not None
        channel = await self._open_channel()
        headers = [
            ("Host", self._endpoint.host_header),
            ("Authorization", self._auth),
            ("Accept", "text/event-stream"),
            ("Acp-Connection-Id", self._connection_id),
        ]
        if session is not None:
            headers.append(("Acp-Session-Id", session))
        try:
            await channel.send(
                h11.Request(method="GET", target=self._endpoint.target, headers=headers)
            )
            await channel.send(h11.EndOfMessage())
            response: Any = None
            with anyio.move_on_after(RESPONSE_TIMEOUT):
                response = await channel.next_event()
            if not isinstance(response, h11.Response) or response.status_code != 200:
                status = getattr(response, "status_code", 0)
                _log.warning("event stream refused (%s) for session %s", status, session)
                task_status.started()
                if session is None:
                    await self._fail()
                self._sessions.discard(session or "")
                return
            task_status.started()
            decoder = SseDecoder(_MAX_MESSAGE)
            while True:
                event = await channel.next_event()
                if not isinstance(event, h11.Data):
                    break
                for data in decoder.feed(bytes(event.data)):
                    message = orjson.loads(data)
                    if session is not None and isinstance(message, dict) and "method" in message:
                        key = route_key(message.get("id"))  # pyright: ignore[reportUnknownMemberType]
                        if key is not None:
                            self._answer_sessions[key] = session
                    opened = _opened_session(message)
                    if opened is not None and opened not in self._sessions:
                        # A new session's updates go on its own stream, and the agent sends
                        # some right after this answer: listen before handing it on.
                        self._sessions.add(opened)
                        try:
                            await self._tg.start(self._read_stream, opened)
                        except ConnectionClosed as exc:
                            self._sessions.discard(opened)
                            _log.warning("cannot open the event stream of %s: %s", opened, exc)
                    await self._inbound_send.send(message)
        except (
            h11.ProtocolError,
            anyio.BrokenResourceError,
            anyio.EndOfStream,
            SseTooLarge,
            orjson.JSONDecodeError,
            OSError,
            anyio.ClosedResourceError,
        ) as exc:
            _log.info("event stream for %s ended: %s", session or "the connection", exc)
        finally:
            with anyio.CancelScope(shield=True):
                await channel.stream.aclose()
        self._sessions.discard(session or "")
        if session is None:
            await self._fail()

    async def _fail(self) -> None:
        """The connection is unusable: let the reader see the end."""
        self._inbound_send.close()


def _opened_session(message: Any) -> str | None:
    """``result.sessionId`` of an answer (``session/new``, ``session/fork``), if any."""
    if not isinstance(message, dict):
        return None
    answer = cast("dict[str, Any]", message)
    if "method" in answer:
        return None
    result: Any = answer.get("result")
    if isinstance(result, dict):
        sid = cast("dict[str, Any]", result).get("sessionId")
        if isinstance(sid, str) and sid:
            return sid
    return None


def _error_answer(request_id: Any, status: int, body: bytes) -> dict[str, Any]:
    text = body.decode("utf-8", "replace").strip()[:500]
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": -32603,
            "message": f"the agent's server refused the request (HTTP {status})",
            "data": {"status": status, "body": text},
        },
    }

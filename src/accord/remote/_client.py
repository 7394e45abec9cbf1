"""Reaching a served agent: a WebSocket or Streamable HTTP transport from a URL.

``async with open_remote(url, token=...) as transport:`` yields a message-level
:class:`~accord.transports.Transport` to the agent at ``url`` (a plain one: a drop ends it;
``connect(url)`` and ``accord bridge`` reconnect above it): ``ws://`` / ``wss://`` open a
WebSocket (the token in ``Authorization: Bearer``, never in the URL); ``http://`` /
``https://`` use Streamable HTTP (:mod:`._http_client`). The token defaults to
``ACCORD_TOKEN``. A refusal (wrong token, origin, too many connections) raises
:class:`~accord.errors.ConnectionRefused` with the HTTP status.

Above: :mod:`accord.client` (``connect("ws://...")``), the CLI's bridge. Below:
:mod:`._endpoint`, :mod:`._websocket`, :mod:`._http_client`, websockets, anyio.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc

from ..errors import ConnectionRefused, LocalProtocolError
from ..transports import Transport
from ._auth import TOKEN_ENV
from ._endpoint import RemoteEndpoint, is_remote_url, refusal
from ._websocket import WebSocketTransport

__all__ = ("CONNECT_TIMEOUT", "RemoteEndpoint", "is_remote_url", "open_remote")

#: Seconds to open the TCP (and TLS) connection and finish the handshake.
CONNECT_TIMEOUT = 30.0

#: Largest message accepted from the server (the server's own default limit).
CLIENT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


def resolve_token(token: str | None, environ: Mapping[str, str] | None = None) -> str:
    """``token``, else ``ACCORD_TOKEN``.

    Raises:
        LocalProtocolError: neither is set.
    """
    value = token or (os.environ if environ is None else environ).get(TOKEN_ENV, "").strip()
    if not value:
        raise LocalProtocolError(
            f"a remote agent needs its token: set {TOKEN_ENV} (accord serve --listen prints it)"
        )
    return value


@asynccontextmanager
async def open_remote(
    url: str,
    *,
    token: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    heartbeat_interval: float = 20.0,
) -> AsyncGenerator[Transport]:
    """Open a transport to the agent at ``url``; closed on exit.

    Args:
        url: ``ws://host:port/acp`` (or ``wss://``, ``http://``, ``https://``).
        token: the bearer token (default: ``ACCORD_TOKEN``).
        ssl_context: verifies the server for wss/https (default: the system's trust store,
            which ``SSL_CERT_FILE`` can point elsewhere).
        heartbeat_interval: seconds between WebSocket pings to the server.

    Raises:
        ValueError: ``url`` is not an agent URL.
        LocalProtocolError: no token.
        ConnectionRefused: the server refused (401 token, 403 origin, 429, ...).
        OSError: the server cannot be reached.
        TimeoutError: the connection took longer than :data:`CONNECT_TIMEOUT`.
    """
    RemoteEndpoint.parse(url)  # a bad URL is told before a missing token
    secret = resolve_token(token)
    endpoint = RemoteEndpoint.parse(url, token=secret)

    try:
        async with _open(endpoint, secret, ssl_context, heartbeat_interval) as transport:
            yield transport
    except BaseExceptionGroup as group:
        # The transport's task group wraps what the block raised: hand it back as itself.
        if len(group.exceptions) != 1:
            raise
        raise group.exceptions[0] from None


@asynccontextmanager
async def _open(
    endpoint: RemoteEndpoint,
    secret: str,
    ssl_context: ssl.SSLContext | None,
    heartbeat_interval: float,
) -> AsyncGenerator[Transport]:
    if endpoint.scheme in ("http", "https"):
        from ._http_client import open_http_transport

        async with open_http_transport(endpoint, secret, ssl_context) as transport:
            yield transport
        return
    try:
        with anyio.fail_after(CONNECT_TIMEOUT):
            stream = await endpoint.connect_tcp(ssl_context)
            try:
                ws = await _handshake(stream, endpoint, secret)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
                raise
    except TimeoutError:
        raise TimeoutError(
            f"the agent's server at {endpoint.host_header} did not complete the WebSocket "
            f"upgrade within {CONNECT_TIMEOUT:g} s"
        ) from None
    transport = WebSocketTransport(stream, ws, max_message_bytes=CLIENT_MAX_MESSAGE_BYTES)
    async with anyio.create_task_group() as tg:
        # The server closes idle connections; the client's own heartbeat never does.
        tg.start_soon(transport.keepalive, heartbeat_interval, float("inf"))
        try:
            yield transport
        finally:
            tg.cancel_scope.cancel()
            await transport.aclose()


async def _handshake(stream: anyio.abc.ByteStream, endpoint: RemoteEndpoint, token: str) -> Any:
    """Upgrade ``stream`` with websockets' sans-IO client; its protocol carries the frames."""
    from websockets.client import ClientProtocol
    from websockets.http11 import Response
    from websockets.uri import parse_uri

    scheme = "wss" if endpoint.secure else "ws"
    uri = parse_uri(f"{scheme}://{endpoint.host_header}{endpoint.target}")
    # max_size: a frame whose header declares more is refused (close 1009) before its bytes
    # arrive (websockets keeps a frame whole until it ends); the transport bounds messages
    # of many frames itself.
    ws = ClientProtocol(uri, max_size=CLIENT_MAX_MESSAGE_BYTES)
    request = ws.connect()
    request.headers["Authorization"] = f"Bearer {token}"
    ws.send_request(request)
    await stream.send(b"".join(ws.data_to_send()))
    while True:
        try:
            data = await stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            ws.receive_eof()
            data = b""
        else:
            ws.receive_data(data)
        for event in ws.events_received():
            if isinstance(event, Response):
                if ws.handshake_exc is None:
                    return ws
                if event.status_code == 101:
                    raise ConnectionRefused(
                        101, f"the agent's server sent a broken upgrade: {ws.handshake_exc}"
                    )
                location = event.headers.get("Location")
                raise refusal(
                    event.status_code,
                    bytes(event.body),
                    location.encode("latin-1", "replace") if location else None,
                )
        if ws.handshake_exc is not None:
            raise ConnectionRefused(
                0, f"the agent's server did not answer the upgrade in HTTP: {ws.handshake_exc}"
            )
        if not data:
            raise ConnectionRefused(0, "the server closed the connection during the upgrade")

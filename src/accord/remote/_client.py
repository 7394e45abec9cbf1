"""Reaching a served agent: a WebSocket or Streamable HTTP transport from a URL.

``async with open_remote(url, token=...) as transport:`` yields a message-level
:class:`~accord.transports.Transport` to the agent at ``url``: ``ws://`` / ``wss://`` open a
WebSocket (the token in ``Authorization: Bearer``, never in the URL); ``http://`` /
``https://`` use Streamable HTTP (:mod:`._http_client`). The token defaults to
``ACCORD_TOKEN``. A refusal (wrong token, origin, too many connections) raises
:class:`~accord.errors.ConnectionRefused` with the HTTP status.

Above: :mod:`accord.client` (``connect("ws://...")``), the CLI's bridge. Below:
:mod:`._websocket`, :mod:`._http_client`, websockets, anyio.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from ..errors import ConnectionRefused, LocalProtocolError
from ..transports import Transport
from ._auth import TOKEN_ENV
from ._websocket import WebSocketTransport

__all__ = ("CONNECT_TIMEOUT", "RemoteEndpoint", "is_remote_url", "open_remote")

#: Seconds to open the TCP (and TLS) connection and finish the handshake.
CONNECT_TIMEOUT = 30.0

#: Largest message accepted from the server (the server's own default limit).
CLIENT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024

_SCHEMES = {"ws": False, "wss": True, "http": False, "https": True}

_REFUSALS = {
    401: "the agent's server refused the token (401): check ACCORD_TOKEN or --token-file",
    403: "the agent's server refused this origin (403)",
    404: "the agent's server has no ACP endpoint at this path (404)",
    429: "the agent's server has too many connections for this token (429)",
}


def is_remote_url(value: object) -> bool:
    """Whether ``value`` is a ``ws://``, ``wss://``, ``http://`` or ``https://`` URL."""
    return isinstance(value, str) and urlsplit(value).scheme.lower() in _SCHEMES


@dataclass(frozen=True, slots=True)
class RemoteEndpoint:
    """A parsed agent URL: where to connect and what to send.

    Attributes:
        scheme: ``ws``, ``wss``, ``http`` or ``https``.
        host: the host name or address (IPv6 without brackets).
        port: the TCP port (default 80 / 443).
        target: the request target (path and query), ``/acp`` when the URL has no path.
        secure: TLS is used.
    """

    scheme: str
    host: str
    port: int
    target: str
    secure: bool

    @classmethod
    def parse(cls, url: str) -> RemoteEndpoint:
        """Parse ``url``.

        Raises:
            ValueError: not a ws/wss/http/https URL, no host, or a credential in it.
        """
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise ValueError(f"not an agent URL (ws://, wss://, http://, https://): {url!r}")
        if not parts.hostname:
            raise ValueError(f"the agent URL has no host: {url!r}")
        if parts.username or parts.password or "token=" in parts.query.lower():
            raise ValueError("put the token in ACCORD_TOKEN or --token-file, never in the URL")
        secure = _SCHEMES[scheme]
        port = parts.port or (443 if secure else 80)
        target = (parts.path or "/acp") + (f"?{parts.query}" if parts.query else "")
        return cls(scheme, parts.hostname, port, target, secure)

    @property
    def host_header(self) -> str:
        """The ``Host`` header's value."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.secure else 80
        return host if self.port == default else f"{host}:{self.port}"

    async def connect_tcp(self, ssl_context: ssl.SSLContext | None) -> anyio.abc.ByteStream:
        """Open the TCP connection (TLS for wss/https, verified against ``ssl_context``).

        Raises:
            OSError: the server cannot be reached.
        """
        if not self.secure:
            return await anyio.connect_tcp(self.host, self.port)
        return await anyio.connect_tcp(
            self.host,
            self.port,
            tls=True,
            ssl_context=ssl_context or ssl.create_default_context(),
            tls_hostname=self.host,
            tls_standard_compatible=False,
        )


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
    reconnect: bool = False,
    on_status: Callable[[str], None] | None = None,
) -> AsyncGenerator[Transport]:
    """Open a transport to the agent at ``url``; closed on exit.

    Args:
        url: ``ws://host:port/acp`` (or ``wss://``, ``http://``, ``https://``).
        token: the bearer token (default: ``ACCORD_TOKEN``).
        ssl_context: verifies the server for wss/https (default: the system's trust store,
            which ``SSL_CERT_FILE`` can point elsewhere).
        heartbeat_interval: seconds between WebSocket pings to the server.
        reconnect: after a drop, reconnect and resume the sessions
            (:class:`~accord.remote.ReconnectingTransport`).
        on_status: told about drops and reconnects in one line each (default: logged).

    Raises:
        ValueError: ``url`` is not an agent URL.
        LocalProtocolError: no token.
        ConnectionRefused: the server refused (401 token, 403 origin, 429, ...).
        OSError: the server cannot be reached.
        TimeoutError: the connection took longer than :data:`CONNECT_TIMEOUT`.
    """
    endpoint = RemoteEndpoint.parse(url)
    secret = resolve_token(token)

    def opener() -> AbstractAsyncContextManager[Transport]:
        return _open(endpoint, secret, ssl_context, heartbeat_interval)

    try:
        if reconnect:
            from ._reconnect import open_reconnecting

            async with open_reconnecting(opener, on_status=on_status) as transport:
                yield transport
            return
        async with opener() as transport:
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
    with anyio.fail_after(CONNECT_TIMEOUT):
        stream = await endpoint.connect_tcp(ssl_context)
        try:
            ws = await _handshake(stream, endpoint, secret)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise
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
    # max_size=None: the transport enforces the message limit (close 1009) itself.
    ws = ClientProtocol(uri, max_size=None)
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
                raise _refused(event.status_code, bytes(event.body))
        if ws.handshake_exc is not None or not data:
            raise ConnectionRefused(0, "the server closed the connection during the upgrade")


def _refused(status: int, body: bytes) -> ConnectionRefused:
    known = _REFUSALS.get(status)
    if known is not None:
        return ConnectionRefused(status, known)
    text = body.decode("utf-8", "replace").strip().splitlines()
    detail = f": {text[0][:200]}" if text else ""
    return ConnectionRefused(
        status, f"the agent's server refused the connection ({status}){detail}"
    )


def refusal(status: int, body: bytes) -> ConnectionRefused:
    """The :class:`~accord.errors.ConnectionRefused` for an HTTP error ``status``."""
    return _refused(status, body)

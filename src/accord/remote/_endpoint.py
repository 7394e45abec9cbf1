"""Where a served agent is: its URL parsed, and what its server's refusals mean.

:class:`RemoteEndpoint` (scheme, host, port, target; the TCP/TLS connection) and
:func:`refusal` (the :class:`~accord.errors.ConnectionRefused` for an HTTP error status) are
shared by both client transports. Above: :mod:`._client` (WebSocket) and :mod:`._http_client`
(Streamable HTTP). Below: :mod:`._auth` (which query parameters are credentials, the rule the
server applies), anyio and the standard library.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio
import anyio.abc

from ..errors import ConnectionRefused
from ._auth import query_carries_credential

__all__ = ("RemoteEndpoint", "is_remote_url", "refusal")

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
    def parse(cls, url: str, *, token: str | None = None) -> RemoteEndpoint:
        """Parse ``url``; ``token``, when known, must not appear in it either.

        A credential in the URL is refused by the same rule the server applies
        (:func:`~._auth.query_carries_credential`): user information, a query parameter
        named like a credential (``token``, ``api_key``, ``accessToken``, ...), or a
        parameter whose name or value is ``token``.

        Raises:
            ValueError: not a ws/wss/http/https URL, no host, or a credential in it.
        """
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise ValueError(f"not an agent URL (ws://, wss://, http://, https://): {url!r}")
        if not parts.hostname:
            raise ValueError(f"the agent URL has no host: {url!r}")
        if (
            parts.username
            or parts.password
            or query_carries_credential(parts.query.encode("utf-8", "surrogateescape"), token)
        ):
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


def refusal(status: int, body: bytes, location: bytes | None = None) -> ConnectionRefused:
    """The :class:`~accord.errors.ConnectionRefused` for an HTTP error ``status`` and body.

    A redirect (3xx, ``location`` its ``Location``) is never followed: the bearer token
    would go with the request to wherever the server points; the error names the place.
    """
    if 300 <= status < 400:
        where = location.decode("latin-1", "replace").strip()[:200] if location else "nowhere"
        return ConnectionRefused(
            status,
            f"the agent's server redirects ({status}) to {where}; not followed, since the "
            "token would go with it: connect to that URL if you trust it",
        )
    known = _REFUSALS.get(status)
    if known is not None:
        return ConnectionRefused(status, known)
    text = body.decode("utf-8", "replace").strip().splitlines()
    detail = f": {text[0][:200]}" if text else ""
    return ConnectionRefused(
        status, f"the agent's server refused the connection ({status}){detail}"
    )

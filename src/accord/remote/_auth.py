"""Who may talk to a served agent: the bearer token and the ``Origin`` policy.

Every HTTP request and every WebSocket upgrade is checked here before anything else is read
or created. The token travels only in ``Authorization: Bearer <token>``; it is compared in
constant time (:func:`hmac.compare_digest`), never logged, and a request that carries one in
its URL (``?token=``, ``?access_token=``) is refused outright, so it cannot leak through logs,
proxies or browser history. ``Origin`` is what a browser adds to a page's requests: a page on
another site must not drive a local agent, so only the origins allowed here pass (none is
fine: editors, the CLI and the SDKs send no ``Origin``).

Above: :mod:`._server`. Below: the standard library only.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

__all__ = (
    "TOKEN_ENV",
    "AccessPolicy",
    "Refusal",
    "generate_token",
    "is_loopback_host",
    "read_token",
)

#: The environment variable holding the token, on both sides.
TOKEN_ENV = "ACCORD_TOKEN"

#: Query parameters that would put a credential in a URL; refused wherever they appear.
_TOKEN_PARAMETERS = frozenset({"token", "access_token", "accesstoken", "auth", "bearer", "key"})

#: Shortest token accepted from a file or the environment: a guessable token is no token.
MIN_TOKEN_LENGTH = 16


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused: its HTTP status, the headers to send, and a short body."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...] = ()


_UNAUTHORIZED = Refusal(401, "unauthorized", (("WWW-Authenticate", 'Bearer realm="accord"'),))


def generate_token() -> str:
    """A fresh random token (32 bytes, URL-safe base64): what ``accord serve`` prints."""
    return secrets.token_urlsafe(32)


def read_token(token_file: str | os.PathLike[str] | None, environ: Mapping[str, str]) -> str | None:
    """The token from ``token_file`` (first line, stripped) or ``ACCORD_TOKEN``; None if neither.

    Raises:
        OSError: the file cannot be read.
        ValueError: the token is shorter than 16 characters or holds whitespace.
    """
    if token_file is not None:
        text = Path(token_file).read_text(encoding="utf-8")
        token = text.splitlines()[0].strip() if text.strip() else ""
        source = f"token file {os.fspath(token_file)}"
    else:
        token = environ.get(TOKEN_ENV, "").strip()
        source = TOKEN_ENV
        if not token:
            return None
    if len(token) < MIN_TOKEN_LENGTH:
        raise ValueError(f"the token from {source} is shorter than {MIN_TOKEN_LENGTH} characters")
    if any(ch.isspace() or ord(ch) < 0x21 or ord(ch) > 0x7E for ch in token):
        raise ValueError(f"the token from {source} must be printable ASCII without spaces")
    return token


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    if host.lower() in {"localhost", "localhost.", "ip6-localhost"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """The token and the allowed origins; :meth:`check` decides each request.

    Attributes:
        token: the bearer token every request must carry.
        allowed_origins: extra origins a browser page may come from (``https://host:port``).
        loopback: the server listens on loopback only, so pages served from this machine
            (``http://localhost:*``, ``http://127.0.0.1:*``) are allowed too.
    """

    token: str
    allowed_origins: frozenset[str] = field(default_factory=frozenset[str])
    loopback: bool = True

    @classmethod
    def build(cls, token: str, *, origins: Iterable[str] = (), loopback: bool) -> AccessPolicy:
        """A policy from the token and ``--allow-origin`` values (normalised, lower case)."""
        return cls(token, frozenset(o.strip().rstrip("/").lower() for o in origins), loopback)

    def check(self, target: bytes, headers: Mapping[bytes, bytes]) -> Refusal | None:
        """None if the request may go on, else the refusal to answer with.

        ``headers`` are the request's, names lower case. Checked in this order: a credential in
        the URL (401, before anything reveals whether it was right), the bearer token (401),
        then ``Origin`` (403).
        """
        query = urlsplit(target.decode("latin-1")).query
        if any(name.lower() in _TOKEN_PARAMETERS for name, _ in parse_qsl(query, True)):
            return _UNAUTHORIZED
        if not self._token_ok(headers.get(b"authorization")):
            return _UNAUTHORIZED
        origin = headers.get(b"origin")
        if origin is not None and not self.origin_allowed(origin.decode("latin-1")):
            return Refusal(403, "origin not allowed")
        return None

    def origin_allowed(self, origin: str) -> bool:
        """Whether a browser page from ``origin`` may use the agent."""
        normalised = origin.strip().rstrip("/").lower()
        if normalised in self.allowed_origins:
            return True
        if not self.loopback:
            return False
        parts = urlsplit(normalised)
        return parts.scheme in {"http", "https"} and is_loopback_host(parts.hostname or "")

    def _token_ok(self, header: bytes | None) -> bool:
        expected = b"Bearer " + self.token.encode("ascii")
        # Compare the whole header in constant time: its length leaks nothing useful, since a
        # right header has a fixed, public length given the token's.
        supplied = header or b""
        if supplied[:7].lower() == b"bearer ":
            supplied = b"Bearer " + supplied[7:].strip()
        return hmac.compare_digest(supplied, expected)

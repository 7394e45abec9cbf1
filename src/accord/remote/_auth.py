"""Who may talk to a served agent: the bearer token and the ``Origin`` policy.

Every HTTP request and every WebSocket upgrade is checked here before anything else is read
or created. The token travels only in ``Authorization: Bearer <token>``; it is compared in
constant time (:func:`same_secret`: :func:`hmac.compare_digest` on two digests of one
length, so neither the content nor the length of what was sent decides how long it takes),
never logged, and a request that carries one in
its URL is refused outright (401), so it cannot leak through logs, proxies or browser
history: a query parameter whose name is a credential's (:func:`is_credential_parameter`,
the one rule the client applies too), or whose name or value is the token itself
(``?TOKEN``, ``?x=TOKEN``, ``?x=Bearer%20TOKEN``); ``&`` and ``;`` separate parameters,
percent-escapes are decoded. The query is never logged. ``Origin`` is what a browser adds
to a page's requests: a page on another site must not drive a local agent, so only the
origins allowed here pass (none is fine: editors, the CLI and the SDKs send no ``Origin``).
``Host`` is what a browser sends as the name it looked up: a page that rebinds its own name
to 127.0.0.1 (DNS rebinding) sends its name, so a loopback server serves only loopback names
and the names it was told to (``--allow-host``).

Above: :mod:`._server`, :mod:`._endpoint` (the client's URL check). Below: the standard library
only.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

__all__ = (
    "TOKEN_ENV",
    "AccessPolicy",
    "Refusal",
    "generate_token",
    "is_credential_parameter",
    "is_loopback_host",
    "query_carries_credential",
    "read_token",
    "same_secret",
    "split_authority",
)

#: The environment variable holding the token, on both sides.
TOKEN_ENV = "ACCORD_TOKEN"

#: Words that make a query parameter's name a credential's, wherever they stand in it.
_CREDENTIAL_WORDS = frozenset(
    {
        "apikey",
        "auth",
        "authorization",
        "bearer",
        "credential",
        "credentials",
        "jwt",
        "key",
        "passwd",
        "password",
        "secret",
        "token",
    }
)

#: Endings that make one word of a name a credential's (``accesstoken``, ``clientsecret``);
#: plain ``key`` is not among them, so ``monkey`` and ``hotkey`` stay ordinary names.
_CREDENTIAL_ENDINGS = (
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "accesskey",
    "authkey",
    "privatekey",
    "secretkey",
    "signingkey",
)


def is_credential_parameter(name: str) -> bool:
    """Whether a URL query parameter called ``name`` (already percent-decoded) holds a credential.

    The name is cut into words at every character that is not a letter or a digit and where
    a lower-case letter or a digit is followed by an upper-case one (``apiKey`` is ``api``,
    ``key``; ``X-Api-Key`` is ``x``, ``api``, ``key``), each word lower-cased. It is a
    credential's if one word is ``token``, ``key``, ``apikey``, ``auth``, ``authorization``,
    ``bearer``, ``secret``, ``password``, ``passwd``, ``jwt``, ``credential(s)``, or ends in
    ``token``, ``secret``, ``password``, ``passwd``, ``apikey``, ``accesskey``, ``authkey``,
    ``privatekey``, ``secretkey`` or ``signingkey``. So ``access_token``, ``accessToken``,
    ``api-key``, ``APIKEY``, ``key``, ``sort_key`` and ``client_secret`` are credentials;
    ``monkey``, ``keyboard``, ``keys``, ``hotkey``, ``author`` and ``tokens`` are not.
    """
    return any(
        word in _CREDENTIAL_WORDS or word.endswith(_CREDENTIAL_ENDINGS)
        for word in _name_words(name)
    )


#: A key drawn once per process: what :func:`same_secret` digests both sides with, so a
#: client cannot precompute digests that share a prefix with the token's.
_DIGEST_KEY = secrets.token_bytes(32)


def same_secret(supplied: bytes, expected: bytes) -> bool:
    """Whether ``supplied`` is ``expected``, in time that depends on neither's content.

    Every comparison with the token goes through here. Both sides are digested (HMAC-SHA256
    under a per-process key) and the two 32-byte digests compared with
    :func:`hmac.compare_digest`: equal lengths always, so not even a wrong length returns
    early. The digests cost time linear in the lengths, which are not secret (a right
    header has a fixed, public length given the token's).
    """
    mine = hmac.new(_DIGEST_KEY, expected, hashlib.sha256).digest()
    theirs = hmac.new(_DIGEST_KEY, supplied, hashlib.sha256).digest()
    return hmac.compare_digest(theirs, mine)


def query_carries_credential(query: bytes, token: str | None = None) -> bool:
    """Whether a URL's ``query`` (without ``?``) names a credential or carries ``token``.

    Parameters are separated by ``&`` or ``;``; each name and value is percent-decoded (``+``
    as a space). A name :func:`is_credential_parameter` accepts is a credential whatever its
    value. With ``token`` (the server always has it, a client when it knows it), every name
    and value is also compared with it in constant time, after a ``Bearer`` prefix too, so
    ``?TOKEN`` and ``?q=TOKEN`` are caught; an empty name or value never matches.
    """
    secret = token.encode("ascii") if token else None
    found = False
    for part in query.replace(b";", b"&").split(b"&"):
        name, _, value = part.partition(b"=")
        name = unquote_to_bytes(name.replace(b"+", b" "))
        value = unquote_to_bytes(value.replace(b"+", b" "))
        if is_credential_parameter(name.decode("latin-1")):
            found = True
        if secret is None:
            continue
        for item in (name, value):
            item = item.strip()
            if item[:7].lower() == b"bearer ":
                item = item[7:].strip()
            # No early exit: every parameter costs the same whether or not one matched.
            found = same_secret(item, secret) or found
    return found


def _name_words(name: str) -> list[str]:
    words: list[str] = []
    current: list[str] = []
    previous = ""
    for ch in name:
        if not ch.isascii() or not ch.isalnum():
            if current:
                words.append("".join(current))
            current, previous = [], ""
            continue
        if ch.isupper() and (previous.islower() or previous.isdigit()) and current:
            words.append("".join(current))
            current = []
        current.append(ch)
        previous = ch
    if current:
        words.append("".join(current))
    return [word.lower() for word in words]


#: Shortest token accepted from a file or the environment: a guessable token is no token.
MIN_TOKEN_LENGTH = 16


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused: its HTTP status, the headers to send, and a short body."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...] = ()


_UNAUTHORIZED = Refusal(401, "unauthorized", (("WWW-Authenticate", 'Bearer realm="accord"'),))
_HOST_REFUSED = Refusal(403, "host not allowed")
_ORIGIN_REFUSED = Refusal(403, "origin not allowed")


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
    if not _printable(token):
        raise ValueError(f"the token from {source} must be printable ASCII without spaces")
    return token


def _printable(token: str) -> bool:
    return all(0x21 <= ord(ch) <= 0x7E for ch in token)


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    if host.lower() in {"localhost", "localhost.", "ip6-localhost"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def split_authority(authority: str) -> tuple[str, str] | None:
    """``host[:port]`` (``[v6]:port`` for IPv6) as lower-case host and port; None if malformed.

    The port may be empty (none given); anything with user information, a path, spaces or a
    port that is not digits is malformed.
    """
    text = authority.strip().lower()
    if not text or any(ch in text for ch in "@/\\?# \t") or any(ord(ch) < 0x21 for ch in text):
        return None
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    else:
        host, _, port = text.partition(":")
        if ":" in port:
            return None
    if not host or (port and not port.isdigit()):
        return None
    return host, port


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """The token and the allowed origins; :meth:`check` decides each request.

    Attributes:
        token: the bearer token every request must carry.
        allowed_origins: extra origins a browser page may come from (``https://host:port``).
        loopback: the server listens on loopback only, so pages served from this machine
            (``http://localhost:*``, ``http://127.0.0.1:*``) are allowed too, and only
            loopback names (or ``allowed_hosts``) may appear in ``Host``.
        allowed_hosts: extra names (lower case, without port) a request's ``Host`` may carry;
            on a listener that is not loopback, when given, the only ones.
    """

    token: str
    allowed_origins: frozenset[str] = field(default_factory=frozenset[str])
    loopback: bool = True
    allowed_hosts: frozenset[str] = field(default_factory=frozenset[str])

    def __post_init__(self) -> None:
        # An empty token would let ``Authorization: Bearer`` in, and match every empty query
        # parameter: a policy always has a real one (``accord serve`` generates it if none
        # was given).
        if len(self.token) < MIN_TOKEN_LENGTH or not _printable(self.token):
            raise ValueError(
                f"the token must be at least {MIN_TOKEN_LENGTH} printable ASCII characters "
                "without spaces"
            )

    @classmethod
    def build(
        cls,
        token: str,
        *,
        origins: Iterable[str] = (),
        loopback: bool,
        hosts: Iterable[str] = (),
    ) -> AccessPolicy:
        """A policy from the token, ``--allow-origin`` and ``--allow-host`` values (lower case).

        Raises:
            ValueError: a host is not a bare name or address (a port, a path, a space).
        """
        names: set[str] = set()
        for host in hosts:
            parts = split_authority(host)
            if parts is None or parts[1]:
                raise ValueError(f"--allow-host wants a name without port, not {host!r}")
            names.add(parts[0].rstrip("."))
        origin_set = frozenset(o.strip().rstrip("/").lower() for o in origins)
        return cls(token, origin_set, loopback, frozenset(names))

    def check(
        self, query: bytes, headers: Mapping[bytes, bytes], authority: bytes | None = None
    ) -> Refusal | None:
        """None if the request may go on, else the refusal to answer with.

        ``query`` is the request target's query; ``headers`` are the request's, names lower
        case; ``authority`` the name it was sent to (the ``Host``, or an absolute target's).
        Checked in this order: a credential in the URL (401, before anything reveals whether
        it was right), the ``Host`` (403), the bearer token (401), then ``Origin`` (403).
        """
        if query and query_carries_credential(query, self.token):
            return _UNAUTHORIZED
        if authority is not None and not self.host_allowed(authority.decode("latin-1")):
            return _HOST_REFUSED
        if not self._token_ok(headers.get(b"authorization")):
            return _UNAUTHORIZED
        origin = headers.get(b"origin")
        if origin is not None and not self.origin_allowed(origin.decode("latin-1")):
            return _ORIGIN_REFUSED
        return None

    def credential_in_query(self, query: bytes) -> bool:
        """Whether ``query`` (without ``?``) names a credential or carries this token.

        :func:`query_carries_credential` with the policy's token.
        """
        return query_carries_credential(query, self.token)

    def host_allowed(self, authority: str) -> bool:
        """Whether a request naming ``authority`` (a ``Host`` value) is for this server."""
        parts = split_authority(authority)
        if parts is None:
            return False
        host = parts[0].rstrip(".")
        if host in self.allowed_hosts:
            return True
        if self.loopback:
            return is_loopback_host(host)
        return not self.allowed_hosts

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
        # Compare the whole header in constant time (:func:`same_secret`): only the scheme
        # word, which is public, is looked at before.
        supplied = header or b""
        if supplied[:7].lower() == b"bearer ":
            supplied = b"Bearer " + supplied[7:].strip()
        return same_secret(supplied, expected)

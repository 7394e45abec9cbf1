"""The model providers the coder routes through, as unstable ACP ``providers/*`` sees them.

The coder can route two of pydantic-ai's providers (:data:`ROUTABLE_PROVIDERS`): ``openai``
(pydantic-ai's ``openai:``, ``openai-chat:`` and ``openai-responses:`` models, and every model of
an OpenAI-compatible ``--base-url`` server) and ``anthropic`` (``anthropic:`` models). Other
pydantic-ai models (``google-gla:``, ...) are used as before, with their provider's own
environment variable, and are not listed.

* ``providers/list``: one :class:`~accord.schema.ProviderInfo` per routable provider.
  ``current`` is where its requests go: the URL ``providers/set`` gave, else the configured
  ``--base-url`` (``openai``), else the provider's public API; ``null`` once disabled.
  ``required`` is true for the provider of the default model (new sessions start with it).
  ``_meta`` says more, for display: ``accord/name`` (a label), ``accord/inUse`` (the default
  model's provider) and ``accord/keyConfigured`` (a key is there: in the headers set, in the
  provider's variable, or saved by ``accord serve --configure``).
* ``providers/set``: the provider's whole configuration replaced (protocol, base URL, headers).
  The key goes in the headers, as the provider's API expects it (``Authorization: Bearer ...``
  for ``openai``, ``x-api-key`` or ``Authorization: Bearer ...`` for ``anthropic``); without
  one, the provider's variable is used (a server other than the public API may take no key).
  Refused with -32602: an unknown provider id, a protocol the provider does not speak, a base
  URL that is not ``http(s)://host...`` or carries credentials, a header name that is not an
  HTTP token, a value with a line break, an empty value (an empty key). The refusal names the
  header, never its value.
* ``providers/disable``: the provider's configuration forgotten and its models no longer
  built; a session choosing one of them is refused. The default model's provider cannot be
  disabled (it is ``required``: -32602). ``providers/set`` enables a provider again.

Where it is kept: the routing (protocol, URL, whether headers are set, which providers are
disabled) in ``<user config dir>/accord/providers.json`` (``0600``); the headers, which hold
the key, only where ``accord serve --configure`` keeps keys (the keyring, else the private
file, under ``providers/<id>``: :func:`~._credentials.store_secret`). Never in a session's
state, the session store, a log line or an error message. A change applies to the sessions
opened after it (``session/new``, and ``session/load`` / ``resume`` / ``fork``, which build
their model again); a live session keeps the model it built until it closes. Changes persist:
the next ``accord serve`` reads them.

This module imports nothing of pydantic-ai.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import urlsplit

from ..errors import InvalidParams
from ..schema import ProviderCurrentConfig, ProviderInfo, SetProviderRequest
from ._credentials import (
    delete_secret,
    read_json,
    read_secret,
    store_secret,
    write_private,
)

__all__ = (
    "PROVIDERS_FILE",
    "ROUTABLE_PROVIDERS",
    "ProviderRoutes",
    "RoutableProvider",
    "Route",
    "routable_provider",
)

_log = logging.getLogger("accord.coder")

PROVIDERS_FILE: Final = "providers.json"
"""The file (in the accord config dir) with the providers' routing; never a header's value."""

_TOKEN: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
"""An HTTP header name (RFC 9110 ``token``)."""


@dataclass(frozen=True, slots=True)
class RoutableProvider:
    """A pydantic-ai provider the coder can route (module docstring).

    Attributes:
        id: The ``providerId`` on the wire.
        name: A label for display.
        protocol: The one ``LlmProtocol`` it speaks.
        default_base_url: Its public API.
        key_variable: The environment variable its key is read from otherwise.
        key_headers: The headers (lower case) that carry its key.
        model_prefixes: The pydantic-ai provider names (before the ``:``) it serves.
    """

    id: str
    name: str
    protocol: str
    default_base_url: str
    key_variable: str
    key_headers: tuple[str, ...]
    model_prefixes: tuple[str, ...]


ROUTABLE_PROVIDERS: Final = (
    RoutableProvider(
        "openai",
        "OpenAI",
        "openai",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        ("authorization",),
        ("openai", "openai-chat", "openai-responses"),
    ),
    RoutableProvider(
        "anthropic",
        "Anthropic",
        "anthropic",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        ("x-api-key", "authorization"),
        ("anthropic",),
    ),
)
"""The providers ``providers/list`` shows, in order."""


def routable_provider(model: str, *, base_url: str | None = None) -> RoutableProvider | None:
    """The routable provider serving pydantic-ai model ``model`` (with a ``--base-url``:
    ``openai``), or ``None``."""
    if base_url is not None:
        return ROUTABLE_PROVIDERS[0]
    prefix = model.split(":", 1)[0] if ":" in model else ""
    return next((p for p in ROUTABLE_PROVIDERS if prefix in p.model_prefixes), None)


def _bearer(value: str) -> str:
    scheme, _, token = value.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else value.strip()


@dataclass(frozen=True, slots=True)
class Route:
    """Where one provider's requests go, as ``providers/set`` gave it (headers never shown).

    Attributes:
        provider_id: The provider.
        api_type: The protocol.
        base_url: The server.
        headers: Every header to send (the key among them), as name / value pairs.
    """

    provider_id: str
    api_type: str
    base_url: str
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (any case), or ``None``."""
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)

    def key(self) -> str | None:
        """The API key the headers carry (a bearer token or the provider's key header)."""
        provider = next(p for p in ROUTABLE_PROVIDERS if p.id == self.provider_id)
        for name in provider.key_headers:
            value = self.header(name)
            if value:
                return _bearer(value) if name == "authorization" else value
        return None


def _check(request: SetProviderRequest) -> tuple[RoutableProvider, Route]:
    """The provider and route ``request`` asks for.

    Raises:
        InvalidParams: module docstring (-32602, no header value in the message).
    """
    provider = next((p for p in ROUTABLE_PROVIDERS if p.id == request.provider_id), None)
    known = [p.id for p in ROUTABLE_PROVIDERS]
    if provider is None:
        raise InvalidParams(
            f"unknown provider {request.provider_id!r}; this agent routes {', '.join(known)}",
            {"providerId": request.provider_id, "known": known},
        )
    if request.api_type != provider.protocol:
        raise InvalidParams(
            f"provider {provider.id!r} speaks {provider.protocol!r}, not {request.api_type!r}",
            {"providerId": provider.id, "supported": [provider.protocol]},
        )
    parts = urlsplit(request.base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidParams(
            "baseUrl must be an http:// or https:// URL with a host",
            {"providerId": provider.id, "field": "baseUrl"},
        )
    if parts.username is not None or parts.password is not None:
        raise InvalidParams(
            "baseUrl must not carry credentials; send the key in headers",
            {"providerId": provider.id, "field": "baseUrl"},
        )
    for name, value in request.headers.items():
        if not _TOKEN.match(name):
            raise InvalidParams(
                f"header name {name!r} is not an HTTP token",
                {"providerId": provider.id, "header": name},
            )
        if any(c in value for c in "\r\n\0"):
            raise InvalidParams(
                f"the value of header {name!r} contains a line break or NUL",
                {"providerId": provider.id, "header": name},
            )
        empty = not value.strip() or (name.lower() == "authorization" and not _bearer(value))
        if empty:
            what = "the key" if name.lower() in provider.key_headers else "the value"
            raise InvalidParams(
                f"{what} in header {name!r} is empty",
                {"providerId": provider.id, "header": name},
            )
    route = Route(
        provider.id,
        provider.protocol,
        request.base_url.rstrip("/"),
        tuple(sorted(request.headers.items())),
    )
    return provider, route


def _secret_name(provider_id: str) -> str:
    return f"providers/{provider_id}"


class ProviderRoutes:
    """The routes set and the providers disabled, kept in ``directory`` (module docstring).

    Read from disk once (:meth:`load`, blocking: run it in a worker thread); every change is
    written before it returns.

    Args:
        directory: The accord config dir.
    """

    def __init__(self, directory: Path) -> None:
        """Remember where; nothing is read yet."""
        self._directory = directory
        self._routes: dict[str, Route] = {}
        self._disabled: set[str] = set()
        self._loaded = False

    @property
    def directory(self) -> Path:
        """The accord config dir."""
        return self._directory

    def load(self) -> None:
        """Read the routing and the headers (once; blocking)."""
        if self._loaded:
            return
        self._loaded = True
        data = read_json(self._directory / PROVIDERS_FILE) or {}
        for provider in ROUTABLE_PROVIDERS:
            raw: object = data.get(provider.id)
            if not isinstance(raw, dict):
                continue
            entry = cast(dict[str, Any], raw)
            if entry.get("disabled") is True:
                self._disabled.add(provider.id)
                continue
            base_url = entry.get("baseUrl")
            if not isinstance(base_url, str) or not base_url:
                continue
            headers: tuple[tuple[str, str], ...] = ()
            if entry.get("headers") is True:
                headers = self._read_headers(provider.id)
            self._routes[provider.id] = Route(provider.id, provider.protocol, base_url, headers)

    def _read_headers(self, provider_id: str) -> tuple[tuple[str, str], ...]:
        text = read_secret(self._directory, _secret_name(provider_id))
        if text is None:
            _log.warning("the headers set for provider %s were not found", provider_id)
            return ()
        try:
            value: Any = json.loads(text)
        except ValueError:
            _log.warning("the headers kept for provider %s are not readable", provider_id)
            return ()
        if not isinstance(value, dict):
            return ()
        pairs = cast(dict[str, Any], value).items()
        return tuple(sorted((str(k), str(v)) for k, v in pairs))

    def route(self, provider_id: str) -> Route | None:
        """The route set for ``provider_id``, or ``None``."""
        return self._routes.get(provider_id)

    def disabled(self, provider_id: str) -> bool:
        """Whether ``provider_id`` is disabled."""
        return provider_id in self._disabled

    def _save(self) -> None:
        data: dict[str, Any] = {}
        for provider in ROUTABLE_PROVIDERS:
            route = self._routes.get(provider.id)
            if provider.id in self._disabled:
                data[provider.id] = {"disabled": True}
            elif route is not None:
                data[provider.id] = {
                    "apiType": route.api_type,
                    "baseUrl": route.base_url,
                    "headers": bool(route.headers),
                }
        write_private(self._directory / PROVIDERS_FILE, data)

    def set(self, request: SetProviderRequest) -> Route:
        """Check ``request`` and keep its route (blocking); the route kept.

        Raises:
            InvalidParams: module docstring.
            OSError: the configuration cannot be written.
        """
        self.load()
        provider, route = _check(request)
        if route.headers:
            secret = json.dumps(dict(route.headers))
            store_secret(self._directory, _secret_name(provider.id), secret)
        else:
            delete_secret(self._directory, _secret_name(provider.id))
        self._routes[provider.id] = route
        self._disabled.discard(provider.id)
        self._save()
        return route

    def disable(self, provider_id: str, *, required: str | None) -> None:
        """Disable ``provider_id`` and forget its route (blocking).

        Raises:
            InvalidParams: an unknown id, or ``required`` (the default model's provider).
            OSError: the configuration cannot be written.
        """
        self.load()
        known = [p.id for p in ROUTABLE_PROVIDERS]
        if provider_id not in known:
            raise InvalidParams(
                f"unknown provider {provider_id!r}; this agent routes {', '.join(known)}",
                {"providerId": provider_id, "known": known},
            )
        if provider_id == required:
            raise InvalidParams(
                f"provider {provider_id!r} serves the default model (it is required) and cannot "
                "be disabled; start the agent with another model first",
                {"providerId": provider_id, "required": True},
            )
        delete_secret(self._directory, _secret_name(provider_id))
        self._routes.pop(provider_id, None)
        self._disabled.add(provider_id)
        self._save()

    def describe(
        self,
        *,
        in_use: str | None,
        base_url: str | None,
        environ: Mapping[str, str] | None = None,
    ) -> list[ProviderInfo]:
        """``providers/list``'s answer (blocking: it may read the keyring).

        Args:
            in_use: The default model's provider (``required``).
            base_url: The configured ``--base-url`` (the ``openai`` provider's default).
            environ: Where the providers' variables are looked up (default: this process's).
        """
        self.load()
        env = os.environ if environ is None else environ
        described: list[ProviderInfo] = []
        for provider in ROUTABLE_PROVIDERS:
            route = self._routes.get(provider.id)
            current: ProviderCurrentConfig | None = None
            if route is not None:
                current = ProviderCurrentConfig(api_type=route.api_type, base_url=route.base_url)
            elif provider.id not in self._disabled:
                url = base_url if base_url and provider.id == "openai" else None
                current = ProviderCurrentConfig(
                    api_type=provider.protocol, base_url=url or provider.default_base_url
                )
            key = (route is not None and route.key() is not None) or bool(
                env.get(provider.key_variable)
                or read_secret(self._directory, provider.key_variable)
            )
            described.append(
                ProviderInfo(
                    provider_id=provider.id,
                    supported=[provider.protocol],
                    required=provider.id == in_use,
                    current=current,
                    meta={
                        "accord/name": provider.name,
                        "accord/inUse": provider.id == in_use,
                        "accord/keyConfigured": key,
                    },
                )
            )
        return described

"""The context window an OpenAI-compatible server reports for one of its models.

A model behind ``--base-url`` (Ollama, vLLM, llama.cpp, LM Studio, a proxy) is known by a
name no pydantic-ai profile describes, so its window comes from the server, where it says:

* ``GET {base}/models``, the entry whose ``id`` is the model's: vLLM's ``max_model_len``;
  the ``context_length`` / ``context_window`` / ``max_context_length`` that proxies and
  hosted servers add (OpenRouter, Groq, LM Studio); llama.cpp's ``meta.n_ctx_train`` (the
  length the model was trained for);
* llama.cpp (an entry with ``meta``, or ``owned_by: llamacpp``): ``GET {root}/props``,
  ``default_generation_settings.n_ctx``, the context the server was started with (``-c``),
  which wins over ``n_ctx_train``: it is what the server truncates at;
* Ollama (``owned_by: library`` or a namespace, no window in ``/models``):
  ``POST {root}/api/show`` for the model's ``num_ctx`` parameter, else ``GET {root}/api/ps``
  for the context the loaded model runs with (``context_length``). The length the model
  was trained for (``model_info``) is not used: Ollama runs a model with a smaller default
  context unless told otherwise, so it would overstate the window.

``{root}`` is the base URL without its ``/v1``. :class:`ServedWindow` asks once per process
and model and remembers the answer (also "nothing reported"); a server that cannot be
reached is asked again after :data:`RETRY_SECONDS`. Each request is bounded by
:data:`LOOKUP_TIMEOUT`. The API key, when one is set, is sent as a bearer token, as the
OpenAI client does; nothing of the answer is logged but the window.

This module sits on httpx (a pydantic-ai dependency); :mod:`._models` asks it through
:attr:`~._models.ModelChoice.window_lookup`, and the coder builds one per ``--base-url`` model.
"""

from __future__ import annotations

import logging
import time
from typing import Final, cast

import anyio
import httpx

__all__ = ("LOOKUP_TIMEOUT", "RETRY_SECONDS", "ServedWindow", "served_context_window")

_log = logging.getLogger("accord.engines.pydantic_ai")

LOOKUP_TIMEOUT: Final = 3.0
"""Seconds one request of the lookup may take."""

RETRY_SECONDS: Final = 60.0
"""How long an unreachable server is left alone before it is asked again."""

_WINDOW_KEYS: Final = ("max_model_len", "context_length", "context_window", "max_context_length")
"""Fields of a ``/models`` entry that hold the window (vLLM's, then proxies' and others')."""

_LLAMA_CPP_N_CTX: Final = ("default_generation_settings", "n_ctx")


def _field(value: object, *path: str) -> object:
    """``value[path[0]][path[1]]...`` of decoded JSON; ``None`` where an object is missing."""
    for key in path:
        if not isinstance(value, dict):
            return None
        value = cast(dict[str, object], value).get(key)
    return value


def _items(value: object) -> list[object]:
    """The items of a decoded JSON array (none for anything else)."""
    return cast(list[object], value) if isinstance(value, list) else []


def _positive(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = int(value)
    return number if number > 0 and number == value else None


def _entry(listing: object, model_id: str) -> object:
    """The ``/models`` entry of ``model_id`` (or the only entry, when the server has one)."""
    entries = [e for e in _items(_field(listing, "data")) if _field(e, "id") is not None]
    for entry in entries:
        if _field(entry, "id") == model_id:
            return entry
    return entries[0] if len(entries) == 1 else None


def _num_ctx(parameters: object) -> int | None:
    """``num_ctx`` from Ollama's ``parameters`` text (one ``name value`` per line)."""
    if not isinstance(parameters, str):
        return None
    for line in parameters.splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return _positive(int(value.strip()))
    return None


class _Probe:
    """The requests of one lookup, on one HTTP client."""

    def __init__(self, client: httpx.AsyncClient, base_url: str, model_id: str) -> None:
        self._client = client
        self._base = base_url.rstrip("/")
        self._root = self._base.removesuffix("/v1")
        self._model_id = model_id

    async def _json(self, method: str, url: str, body: object = None) -> object:
        """The JSON of a successful answer; ``None`` for an error status or a non-JSON body."""
        response = await self._client.request(method, url, json=body)
        if response.status_code != 200:
            return None
        try:
            return cast(object, response.json())
        except ValueError:
            return None

    async def window(self) -> int | None:
        entry = _entry(await self._json("GET", f"{self._base}/models"), self._model_id)
        if entry is None:
            return await self._ollama()
        meta = _field(entry, "meta")
        if meta is not None or _field(entry, "owned_by") == "llamacpp":
            served = _positive(
                _field(await self._json("GET", f"{self._root}/props"), *_LLAMA_CPP_N_CTX)
            )
            if served is not None:
                return served
        for key in _WINDOW_KEYS:
            found = _positive(_field(entry, key))
            if found is not None:
                return found
        trained = _positive(_field(meta, "n_ctx_train"))
        if trained is not None:
            return trained
        return await self._ollama()

    async def _ollama(self) -> int | None:
        shown = await self._json("POST", f"{self._root}/api/show", {"model": self._model_id})
        configured = _num_ctx(_field(shown, "parameters"))
        if configured is not None:
            return configured
        running = await self._json("GET", f"{self._root}/api/ps")
        for model in _items(_field(running, "models")):
            if self._model_id in (_field(model, "name"), _field(model, "model")):
                return _positive(_field(model, "context_length"))
        return None


async def served_context_window(
    base_url: str,
    model_id: str,
    *,
    api_key: str | None = None,
    request_timeout: float = LOOKUP_TIMEOUT,
    transport: httpx.AsyncBaseTransport | None = None,
) -> int | None:
    """Ask the server at ``base_url`` for the context window of ``model_id`` (module docstring).

    Returns ``None`` when the server reports none. ``request_timeout`` bounds each request;
    ``transport`` replaces httpx's (tests).

    Raises:
        httpx.HTTPError: the server cannot be reached, or a request timed out.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    async with httpx.AsyncClient(
        headers=headers, timeout=request_timeout, transport=transport, follow_redirects=False
    ) as client:
        return await _Probe(client, base_url, model_id).window()


class ServedWindow:
    """The context window of one model on one server, asked once (module docstring).

    Args:
        base_url: The server's OpenAI-compatible endpoint (``http://localhost:11434/v1``).
        model_id: The model's id on that server.
        api_key: Sent as a bearer token, when set.
    """

    __slots__ = ("_api_key", "_base_url", "_failed_at", "_known", "_lock", "_model_id")

    def __init__(self, base_url: str, model_id: str, *, api_key: str | None = None) -> None:
        """Remember the server and model; nothing is asked before the first call."""
        self._base_url = base_url
        self._model_id = model_id
        self._api_key = api_key
        self._known: tuple[int | None] | None = None
        self._failed_at: float | None = None
        self._lock: anyio.Lock | None = None

    @property
    def known(self) -> int | None:
        """The window once asked (``None``: not asked yet, or the server reports none)."""
        return None if self._known is None else self._known[0]

    async def __call__(self) -> int | None:
        """The model's window as the server reports it; ``None`` when it does not (or is down).

        One lookup at a time; an unreachable server is asked again only after
        :data:`RETRY_SECONDS`.
        """
        if self._known is not None:
            return self._known[0]
        if self._failed_at is not None and time.monotonic() - self._failed_at < RETRY_SECONDS:
            return None
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._known is not None:
                return self._known[0]
            try:
                window = await served_context_window(
                    self._base_url, self._model_id, api_key=self._api_key
                )
            except httpx.HTTPError as error:
                self._failed_at = time.monotonic()
                _log.info("no context window from %s: %s", self._base_url, error)
                return None
            self._known = (window,)
            if window is not None:
                _log.info("context window of %r: %d tokens (server)", self._model_id, window)
            return window

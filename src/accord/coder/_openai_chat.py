"""The OpenAI SDK client of the coder's chat models, without the SDK's walk over every message.

The SDK's ``AsyncCompletions.create`` runs its whole request through ``async_maybe_transform``
against the request's ``TypedDict`` types before encoding it: a walk of every message of the
history in which each part is tried against every member of its type's union, key by key. For a
chat request that walk changes nothing: no request parameter type of the chat API carries a key
alias or a format (``PropertyInfo``; a test checks it on every message shape pydantic-ai sends),
and pydantic-ai hands over the messages as lists of plain dicts. But it costs a few tens of
microseconds a message, every turn, for the whole history: in the soak (``bench_soak.py``,
conversations of up to 200 turns) it was more than half of the agent's CPU (issue 21).

:class:`PlainChatOpenAI` is the SDK's ``AsyncOpenAI`` whose chat requests put ``messages``
into the body as they are: through ``extra_body``, which the SDK merges over the transformed
body unchanged; every other field (a few scalars, the tool definitions) still takes the SDK's
path. Its chat bodies are encoded by :func:`accord.coder._chat_body.encode_body`: the bytes
the SDK writes, each earlier message's text taken from a cache of what was encoded before rather
than encoded again for every turn (issue 21). It keeps no state of its own (the cache is the
process's), so the SDK's copies (``with_options``, which pydantic-ai uses for ``max_retries``)
are of the same class and share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import httpx2
from openai import AsyncOpenAI
from openai._base_client import _merge_mappings
from openai._models import FinalRequestOptions
from openai.resources.chat import AsyncChat
from openai.resources.chat.completions import AsyncCompletions

from ._chat_body import encode_body

__all__ = ("PlainChatOpenAI", "plain_chat")


class _PlainCompletions(AsyncCompletions):
    """Chat completions whose ``messages`` reach the body untransformed."""

    async def create(  # type: ignore[override]  # the SDK's overloads, forwarded as they are
        self,
        *,
        messages: Iterable[Any],
        extra_body: Mapping[str, object] | None = None,
        **params: Any,
    ) -> Any:
        """The SDK's ``create`` with ``messages`` sent as given (a list, never re-walked).

        A ``messages`` key in ``extra_body`` wins, as it does in the SDK.
        """
        body: dict[str, object] = {
            "messages": messages if isinstance(messages, list) else list(messages)
        }
        body.update(extra_body or {})
        sdk: Any = super()  # its overloads take what pydantic-ai passes, unchanged
        return await sdk.create(messages=[], extra_body=body, **params)


class _PlainChat(AsyncChat):
    """The chat resource of :class:`PlainChatOpenAI`."""

    @property
    def completions(self) -> AsyncCompletions:
        """Chat completions with the messages sent as they are (made once)."""
        made = self.__dict__.get("_plain_completions")
        if made is None:
            made = self.__dict__["_plain_completions"] = _PlainCompletions(self._client)
        return made


class PlainChatOpenAI(AsyncOpenAI):
    """``AsyncOpenAI`` whose chat requests send their messages without the SDK's type walk,
    each earlier message's encoded text reused."""

    def _build_request(
        self, options: FinalRequestOptions, *, retries_taken: int = 0
    ) -> httpx2.Request:
        """The SDK's request, a chat body encoded by ``encode_body`` (the same bytes).

        Only a JSON ``POST`` to ``/chat/completions`` with a mapping body and no ``content``
        or ``files`` of its own; any other request is the SDK's, untouched.
        """
        body = _chat_body_of(options)
        if body is not None:
            options = options.model_copy(
                update={"json_data": encode_body(body), "extra_json": None}
            )
        return super()._build_request(options, retries_taken=retries_taken)

    @property
    def chat(self) -> AsyncChat:
        """The chat resource, its completions sending the messages as they are (made once)."""
        made = self.__dict__.get("_plain_chat")
        if made is None:
            made = self.__dict__["_plain_chat"] = _PlainChat(self)
        return made


def _chat_body_of(options: FinalRequestOptions) -> Mapping[str, object] | None:
    """The chat body the SDK would encode for `options` (its ``extra_json`` merged as the SDK
    merges it), or None when the request is not a plain JSON chat completion."""
    if options.method.lower() != "post" or not options.url.endswith("/chat/completions"):
        return None
    if options.content is not None or options.files is not None:
        return None
    headers: Any = options.headers
    if isinstance(headers, Mapping) and "multipart" in str(headers.get("Content-Type", "")):  # pyright: ignore[reportUnknownMemberType,reportUnknownArgumentType]
        return None
    body: object = options.json_data
    extra = options.extra_json
    if extra is not None:
        if body is None:
            body = extra
        elif isinstance(body, Mapping):
            body = _merge_mappings(body, extra)  # pyright: ignore[reportUnknownArgumentType]
        else:
            return None
    return body if isinstance(body, dict) else None  # pyright: ignore[reportUnknownVariableType]


def plain_chat(client: AsyncOpenAI) -> AsyncOpenAI:
    """``client`` as a :class:`PlainChatOpenAI`, when it is exactly the SDK's ``AsyncOpenAI``.

    The class is swapped in place (the subclass adds no state), so the client keeps everything
    its maker gave it (HTTP client, headers, key, retries). Any other class (Azure's, a
    caller's own subclass) is returned unchanged: its requests may need what the walk does.
    """
    if type(client) is AsyncOpenAI and "chat" not in vars(client):
        client.__class__ = PlainChatOpenAI
    return client

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
path, and the body is encoded by the SDK as before. It keeps no state of its own, so the SDK's
copies (``with_options``, which pydantic-ai uses for ``max_retries``) are of the same class.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from openai import AsyncOpenAI
from openai.resources.chat import AsyncChat
from openai.resources.chat.completions import AsyncCompletions

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
    """``AsyncOpenAI`` whose chat requests send their messages without the SDK's type walk."""

    @property
    def chat(self) -> AsyncChat:
        """The chat resource, its completions sending the messages as they are (made once)."""
        made = self.__dict__.get("_plain_chat")
        if made is None:
            made = self.__dict__["_plain_chat"] = _PlainChat(self)
        return made


def plain_chat(client: AsyncOpenAI) -> AsyncOpenAI:
    """``client`` as a :class:`PlainChatOpenAI`, when it is exactly the SDK's ``AsyncOpenAI``.

    The class is swapped in place (the subclass adds no state), so the client keeps everything
    its maker gave it (HTTP client, headers, key, retries). Any other class (Azure's, a
    caller's own subclass) is returned unchanged: its requests may need what the walk does.
    """
    if type(client) is AsyncOpenAI and "chat" not in vars(client):
        client.__class__ = PlainChatOpenAI
    return client

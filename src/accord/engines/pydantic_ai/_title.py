"""A session's title from its first prompt: a short one the model writes, else the first line.

:func:`session_title` asks the session's own model for a few words (one small request, no
tools, no history, at most :data:`TITLE_MAX_TOKENS` tokens, marked with
:data:`~accord.agent.MODEL_PURPOSE_HEADER` ``title`` so proxies and test fakes can tell it from
the turn's requests), bounded by :data:`TITLE_TIMEOUT_SECONDS`. When the model fails, is slow
or answers nothing usable, the title is the prompt's first non-empty line. Either way it is
one line of printable text, at most :data:`TITLE_MAX_CHARS` characters.

Used by :class:`~._session.PydanticAISession` (when the engine is built with ``titles=True``)
in a task beside the session's first turn; it sits on pydantic-ai's direct model API.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence
from typing import Any, Final

import anyio
from pydantic_ai.direct import model_request
from pydantic_ai.messages import ModelRequest, SystemPromptPart, TextPart, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ...schema import ContentBlock, TextContentBlock
from .. import MODEL_PURPOSE_HEADER

__all__ = (
    "TITLE_INSTRUCTIONS",
    "TITLE_MAX_CHARS",
    "TITLE_MAX_TOKENS",
    "TITLE_TIMEOUT_SECONDS",
    "first_line_title",
    "prompt_text",
    "session_title",
)

_log = logging.getLogger("accord.engines.pydantic_ai")

TITLE_TIMEOUT_SECONDS: Final = 8.0
"""How long the model may take to write a title before the first line is used instead."""

TITLE_MAX_TOKENS: Final = 24
"""The most tokens the title request may produce."""

TITLE_MAX_CHARS: Final = 80
"""The longest title kept (longer ones are cut at a word and end with an ellipsis)."""

_PROMPT_CHARS: Final = 2000
"""How much of the prompt the title request sends."""

TITLE_INSTRUCTIONS: Final = (
    "Write a title of at most six words for a conversation that starts with the user's "
    "message below. Answer with the title only: no quotes, no punctuation at the end."
)
"""What the title request asks the model."""


def _clean(text: str) -> str:
    """One line of printable text: control and format characters dropped, spaces collapsed."""
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in text
        if ch.isspace() or unicodedata.category(ch)[0] != "C"
    )
    return " ".join(kept.split())


def _bounded(title: str) -> str:
    if len(title) <= TITLE_MAX_CHARS:
        return title
    cut = title[: TITLE_MAX_CHARS - 1]
    if " " in cut[TITLE_MAX_CHARS // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


def prompt_text(prompt: Sequence[ContentBlock]) -> str:
    """The text of a prompt's text blocks (what a title is made from)."""
    return "\n".join(block.text for block in prompt if isinstance(block, TextContentBlock))


def first_line_title(text: str) -> str | None:
    """The prompt's first non-empty line as a title (``None`` when it has no text)."""
    for line in text.splitlines():
        cleaned = _clean(line)
        if cleaned:
            return _bounded(cleaned)
    return None


async def _ask_model(model: Model[Any] | str, text: str) -> str | None:
    settings = ModelSettings(
        max_tokens=TITLE_MAX_TOKENS,
        timeout=TITLE_TIMEOUT_SECONDS,
        extra_headers={MODEL_PURPOSE_HEADER: "title"},
    )
    request = ModelRequest(
        parts=[SystemPromptPart(TITLE_INSTRUCTIONS), UserPromptPart(text[:_PROMPT_CHARS])]
    )
    response = await model_request(model, [request], model_settings=settings)
    words = "".join(part.content for part in response.parts if isinstance(part, TextPart))
    title = _clean(words).strip("\"'`*#").strip()
    return _bounded(title) if title else None


async def session_title(model: Model[Any] | str | None, text: str) -> str | None:
    """A title for a conversation that starts with ``text`` (module docstring).

    ``model`` is the session's model (``None``: only the first line is used). Returns
    ``None`` only when ``text`` has nothing to title it with. Never raises for the model's
    failures (logged at debug level); cancellation propagates.
    """
    fallback = first_line_title(text)
    if fallback is None:
        return None
    if model is None:
        return fallback
    title: str | None = None
    with anyio.move_on_after(TITLE_TIMEOUT_SECONDS):
        try:
            title = await _ask_model(model, text)
        except Exception as exc:  # any failure of the model: the first line will do
            _log.debug("the model wrote no title (%s); using the first line", exc)
    return title or fallback

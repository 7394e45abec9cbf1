"""Context compaction: older turns of a history replaced, for the model, by a summary it wrote.

A long session fills the model's window. :class:`Compaction` (an engine setting, see
:class:`~._engine.PydanticAIEngine`) says when to compact: before a turn whose model request
would take more than ``share`` of the window (the context the last response left, or the
history's text at four characters a token after a compaction, plus the new prompt, also at
four characters a token), and whenever the session is asked to (the coder's ``/compact``).
A compaction:

1. splits the history (:func:`split_history`) at a turn's start: the system prompt parts of
   the first request, the older turns, and the last ``keep_turns`` turns (a turn starts at a
   request with a user prompt, so every tool call is in the same part as its result, and the
   unfinished ones are in the kept turns);
2. asks the model for a summary of the older turns in one request marked
   ``x-accord-purpose: compact`` (:data:`~accord.engines.MODEL_PURPOSE_HEADER`), optionally
   with the user's instruction (what to keep);
3. builds the history the model sees from then on (:func:`compacted_history`): one request
   with the system prompt parts and the summary, then the kept turns.

A failed summary (the model's error, an empty answer) raises :class:`CompactionFailed` and the
history stays as it was. Only what the model sees is shortened: every turn's events stay in
the session's event chain (``session/load`` replays them all) and the session says what
happened with :class:`~accord.engines.CompactionChanged` events.

This module sits on pydantic-ai and the engine protocol; the session uses it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from .. import MODEL_PURPOSE_HEADER
from ._history import context_tokens

__all__ = (
    "COMPACT_INSTRUCTIONS",
    "COMPACT_PURPOSE",
    "SUMMARY_PREFIX",
    "Compaction",
    "CompactionFailed",
    "compacted_history",
    "estimate_tokens",
    "split_history",
    "summarise",
    "text_size",
    "transcript",
)

COMPACT_PURPOSE: Final = "compact"
"""The :data:`~accord.engines.MODEL_PURPOSE_HEADER` value of the summary request."""

COMPACT_INSTRUCTIONS: Final = (
    "You are summarising the earlier part of a conversation between a user and a coding "
    "assistant so that the assistant can continue it with only your summary. Keep every fact "
    "the rest of the conversation may need: the user's goals and constraints, decisions taken, "
    "files and names involved, what was done and what is still open. Answer with the summary "
    "only."
)
"""What the summary request asks the model."""

SUMMARY_PREFIX: Final = "[Summary of the earlier turns of this conversation]\n"
"""What the summary starts with in the history the model sees."""

_TOOL_TEXT_CHARS: Final = 2000
"""How much of one tool call's arguments or result the transcript sent for a summary holds."""

_CHARS_PER_TOKEN: Final = 4
"""The rough size of a token, in characters, for estimates before the model says."""


class CompactionFailed(Exception):
    """The model wrote no summary; the history is left as it was."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    """When and how a session compacts its history (module docstring).

    Args:
        share: Compact before a turn whose request would exceed this share of the window
            (``0 < share <= 1``; default 85%). Without a known window there is no automatic
            compaction (compaction on request still works).
        keep_turns: The last turns kept as they are (at least 1).
        max_summary_tokens: The most tokens the summary may take (``None``: the model's own
            limit).

    Raises:
        ValueError: a setting out of range.
    """

    share: float = 0.85
    keep_turns: int = 2
    max_summary_tokens: int | None = 4096

    def __post_init__(self) -> None:
        """Check the settings."""
        if isinstance(self.share, bool) or not 0 < self.share <= 1:
            raise ValueError(f"compaction share must be in (0, 1]: {self.share!r}")
        if type(self.keep_turns) is not int or self.keep_turns < 1:
            raise ValueError(f"compaction keep_turns must be a positive int: {self.keep_turns!r}")
        tokens = self.max_summary_tokens
        if tokens is not None and (type(tokens) is not int or tokens < 1):
            raise ValueError(f"compaction max_summary_tokens must be positive: {tokens!r}")

    def due(self, used: int, window: int | None) -> bool:
        """Whether a request of ``used`` tokens is over the share of ``window``."""
        return window is not None and window > 0 and used > self.share * window


def estimate_tokens(messages: Sequence[ModelMessage], prompt: str, *, measured: bool) -> int:
    """The tokens the next request would take, roughly, with ``prompt`` added.

    ``measured``: the last response's usage measures the history as it is (no compaction
    since); its context is then the base. Otherwise (or without usage) the history's text at
    four characters a token. The prompt counts four characters a token.
    """
    prompt_tokens = math.ceil(len(prompt) / _CHARS_PER_TOKEN)
    if measured:
        for message in reversed(messages):
            if isinstance(message, ModelResponse):
                used = context_tokens(message)
                if used:
                    return used + prompt_tokens
                break
    return math.ceil(text_size(messages) / _CHARS_PER_TOKEN) + prompt_tokens


def _turn_starts(messages: Sequence[ModelMessage]) -> list[int]:
    return [
        index
        for index, message in enumerate(messages)
        if isinstance(message, ModelRequest)
        and any(isinstance(part, UserPromptPart) for part in message.parts)
    ]


def split_history(
    messages: Sequence[ModelMessage], keep_turns: int
) -> tuple[list[ModelRequestPart], list[ModelMessage], list[ModelMessage]] | None:
    """``(system parts, older messages, kept messages)``, or ``None`` with nothing to summarise.

    The system parts are the first request's system prompt parts (kept, not summarised).
    """
    starts = _turn_starts(messages)
    if len(starts) <= keep_turns:
        return None
    cut = starts[-keep_turns]
    system: list[ModelRequestPart] = []
    older = list(messages[:cut])
    first = older[0] if older else None
    if isinstance(first, ModelRequest):
        system = [part for part in first.parts if isinstance(part, SystemPromptPart)]
        rest = [part for part in first.parts if not isinstance(part, SystemPromptPart)]
        older[0] = dataclasses.replace(first, parts=rest)
    return system, older, list(messages[cut:])


def _clip(text: str) -> str:
    if len(text) <= _TOOL_TEXT_CHARS:
        return text
    return f"{text[:_TOOL_TEXT_CHARS]} [... {len(text) - _TOOL_TEXT_CHARS:,} characters left out]"


def _part_text(part: Any) -> str:
    match part:
        case UserPromptPart():
            content = part.content
            if isinstance(content, str):
                return content
            return " ".join(item if isinstance(item, str) else f"[{item.kind}]" for item in content)
        case SystemPromptPart() | TextPart() | ThinkingPart():
            return part.content
        case ToolCallPart():
            return f"{part.tool_name}({part.args_as_json_str()})"
        case ToolReturnPart():
            return part.model_response_str()
        case _:
            return ""


def transcript(messages: Sequence[ModelMessage]) -> str:
    """The older turns as plain text for the summary request (tool text clipped)."""
    lines: list[str] = []
    for message in messages:
        for part in message.parts:
            text = _part_text(part)
            if not text:
                continue
            match part:
                case UserPromptPart():
                    lines.append(f"User: {text}")
                case SystemPromptPart():
                    lines.append(f"System: {text}")
                case TextPart():
                    lines.append(f"Assistant: {text}")
                case ToolCallPart():
                    lines.append(f"Assistant called {_clip(text)}")
                case ToolReturnPart():
                    lines.append(f"Tool result: {_clip(text)}")
                case _:
                    pass
    return "\n\n".join(lines)


async def summarise(
    model: Model[Any] | str,
    older: Sequence[ModelMessage],
    *,
    instruction: str = "",
    max_tokens: int | None = None,
) -> str:
    """The model's summary of ``older`` (one request marked ``compact``).

    Raises:
        CompactionFailed: the request failed or the answer has no text.
    """
    headers = {MODEL_PURPOSE_HEADER: COMPACT_PURPOSE}
    settings = (
        ModelSettings(extra_headers=headers)
        if max_tokens is None
        else ModelSettings(extra_headers=headers, max_tokens=max_tokens)
    )
    ask = f"The conversation so far:\n\n{transcript(older)}\n\nWrite the summary."
    if instruction:
        ask += f" The user asks: {instruction}"
    request = ModelRequest(parts=[SystemPromptPart(COMPACT_INSTRUCTIONS), UserPromptPart(ask)])
    try:
        response = await model_request(model, [request], model_settings=settings)
    except ModelHTTPError as exc:
        raise CompactionFailed(
            f"the model answered the summary request with HTTP {exc.status_code}"
            f"{_error_text(exc.body)}"
        ) from exc
    except Exception as exc:
        raise CompactionFailed(f"the summary request failed: {exc}") from exc
    text = "".join(part.content for part in response.parts if isinstance(part, TextPart)).strip()
    if not text:
        raise CompactionFailed("the model's summary was empty")
    return text


def _error_text(body: object) -> str:
    """``": <message>"`` of an OpenAI-style error body (``{"message": ...}``), else nothing."""
    if isinstance(body, dict):
        message = cast(dict[str, object], body).get("message")
        if isinstance(message, str) and message:
            return f": {message[:500]}"
    return ""


def compacted_history(
    system: Sequence[ModelRequestPart], summary: str, kept: Sequence[ModelMessage]
) -> list[ModelMessage]:
    """The history the model sees after a compaction: system parts and summary, kept turns."""
    return [ModelRequest(parts=[*system, UserPromptPart(SUMMARY_PREFIX + summary)]), *kept]


def text_size(messages: Sequence[ModelMessage]) -> int:
    """The characters of a history's parts (the estimate's base after a compaction)."""
    return sum(len(_part_text(part)) for message in messages for part in message.parts)

"""Tool results bounded in what the model sees: a pydantic-ai history processor.

A tool result of thousands of lines fills the model's window for the rest of the session.
:func:`bound_tool_results` returns a history processor that cuts every tool result longer
than a bound to its first ``limit`` characters plus a note saying how much was left out; the
client still gets the whole result as the tool call's content (the engine reports it from the
tool's return value, before any history processor runs). Any agent served through
:class:`~accord.engines.pydantic_ai.PydanticAIEngine` opts in with pydantic-ai's own hook::

    from pydantic_ai.capabilities import ProcessHistory

    agent = Agent(..., capabilities=[ProcessHistory(bound_tool_results(40_000))])

The processor is idempotent (a cut result is cut again to the same text), so running it
before every model request costs one length check per tool result. pydantic-ai keeps what
the processor returns as the run's history, so the stored history holds the cut results too.

This module sits on pydantic-ai alone; the coder uses it for its agent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Final

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, ToolReturnPart

__all__ = ("TRUNCATION_NOTE", "bound_tool_results")

TRUNCATION_NOTE: Final = (
    "\n\n[accord: this tool result was cut to its first {shown:,} of {total:,} characters for "
    "the model; ask for a smaller part (an offset, a limit, a narrower pattern) to see the rest]"
)
"""The note appended to a cut tool result (``shown`` and ``total`` are character counts)."""

_NOTE_MARK: Final = "\n\n[accord: this tool result was cut to its first "


def bound_tool_results(limit: int) -> Callable[[list[ModelMessage]], list[ModelMessage]]:
    """A history processor cutting tool results longer than ``limit`` characters (module doc).

    Raises:
        ValueError: ``limit`` is not a positive number of characters.
    """
    if type(limit) is not int or limit < 1:  # also a bool or a float passed unchecked
        raise ValueError(
            f"the tool result bound must be a positive number of characters: {limit!r}"
        )

    def process(messages: list[ModelMessage]) -> list[ModelMessage]:
        return [_bounded(message, limit) for message in messages]

    return process


def _bounded(message: ModelMessage, limit: int) -> ModelMessage:
    if not isinstance(message, ModelRequest):
        return message
    parts: list[ModelRequestPart] = []
    changed = False
    for part in message.parts:
        if isinstance(part, ToolReturnPart):
            cut = _cut(part, limit)
            changed = changed or cut is not part
            parts.append(cut)
        else:
            parts.append(part)
    return dataclasses.replace(message, parts=parts) if changed else message


def _cut(part: ToolReturnPart, limit: int) -> ToolReturnPart:
    text = part.model_response_str()
    if len(text) <= limit:
        return part
    mark = text.find(_NOTE_MARK, limit)
    if mark == limit:  # cut before: the same text again
        return part if isinstance(part.content, str) else dataclasses.replace(part, content=text)
    note = TRUNCATION_NOTE.format(shown=limit, total=len(text))
    return dataclasses.replace(part, content=text[:limit] + note)

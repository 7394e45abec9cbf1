"""``ask_user``: the coder asks the user a question through the editor, and waits.

When the model cannot go on without a decision or a fact only the user has (which of two
designs, a name, a value), it calls ``ask_user``. The question becomes an ACP elicitation
(``elicitation/create``, form mode: one ``answer`` field, free text or one of ``choices``)
and the tool returns the answer as text for the model.

The tool is offered only when the editor advertised form elicitation (its ``prepare`` hides
it otherwise); the system prompt tells the model that without ``ask_user`` it asks in its
reply and ends its turn, so the fallback is a plain question in the conversation. The
outcomes the model reads: the answer, "declined", "dismissed"; a question the editor could
not show fails the call with the reason. A cancelled turn withdraws the question.

Secrets must never be asked this way (ACP forbids it for forms): the docstring says so.

This module sits on pydantic-ai and the engine protocol's :class:`~accord.engines.TurnContext`.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.tools import ToolDefinition

from ..engines.pydantic_ai import ToolBehaviour, ToolCallInput
from ..errors import AcpError
from ..schema import ElicitationSchema
from ._deps import CoderDeps

__all__ = ("ANSWER_FIELD", "ASK_USER_BEHAVIOUR", "MAX_CHOICES", "ask_user", "offer_ask_user")

ANSWER_FIELD: Final = "answer"
"""The one field of the form the question is shown with."""

MAX_CHOICES: Final = 20
"""Choices beyond this are refused (a question, not a menu)."""


async def ask_user(
    ctx: RunContext[CoderDeps], question: str, choices: list[str] | None = None
) -> str:
    """Ask the user a question and wait for the answer.

    Use it only when you cannot continue without a decision or a fact only the user has;
    never to ask for passwords, API keys or other secrets.

    Args:
        question: The question, complete and self-explaining (the user sees only this).
        choices: The possible answers, when there are a few (the user picks one).
    """
    turn = ctx.deps.turn
    if turn is None or "form" not in turn.elicitation_modes:
        return (
            "The editor cannot show questions. Ask the user in your reply instead, and end "
            "your turn to wait for the answer."
        )
    options = [choice.strip() for choice in choices or () if choice.strip()]
    if len(options) > MAX_CHOICES:
        raise ToolFailed(f"at most {MAX_CHOICES} choices can be offered")
    answer_field: dict[str, Any] = {"type": "string", "title": "Answer"}
    if options:
        answer_field["enum"] = list(dict.fromkeys(options))
    else:
        answer_field["minLength"] = 1
    schema = ElicitationSchema.model_validate(
        {"type": "object", "properties": {ANSWER_FIELD: answer_field}, "required": [ANSWER_FIELD]}
    )
    try:
        reply = await turn.elicit_form(
            question, schema, tool_call_id=ctx.deps.acp_tool_call_id(ctx.tool_call_id or "")
        )
    except AcpError as exc:
        raise ToolFailed(f"the question could not be asked: {exc}") from exc
    if reply.action == "decline":
        return "The user declined to answer."
    if reply.action == "cancel":
        return "The user dismissed the question without answering."
    return f"The user answered: {reply.content.get(ANSWER_FIELD, '')}"


async def offer_ask_user(
    ctx: RunContext[CoderDeps], definition: ToolDefinition
) -> ToolDefinition | None:
    """``prepare`` for :func:`ask_user`: offered only when the editor can show a form."""
    turn = ctx.deps.turn
    if turn is None or "form" not in turn.elicitation_modes:
        return None
    return definition


def _title(call: ToolCallInput) -> str:
    question = call.args.get("question")
    if isinstance(question, str) and question.strip():
        text = " ".join(question.split())
        return f"Ask: {text if len(text) <= 70 else text[:69] + '…'}"
    return "Ask the user"


ASK_USER_BEHAVIOUR: Final = ToolBehaviour(kind="other", title_from_args=_title)
"""How an ``ask_user`` call is shown to ACP clients."""

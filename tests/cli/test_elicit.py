"""``accord run``'s questions on the terminal: one field at a time, by type, re-asked when wrong.

The policy is driven with typed lines (what ``accord run`` reads from the terminal) and its
output captured; the pty test in ``test_run_elicitation.py`` drives the real command.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

from accord.cli._elicit import TerminalElicitation, printable
from accord.client import Accept, Cancel, Decline, ElicitationContext
from accord.schema import CreateElicitationRequest, ElicitationSchema

pytestmark = [pytest.mark.anyio, pytest.mark.asyncio_only("the command line runs on asyncio")]


class Typist:
    """Answers each question with the next line; records the questions."""

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)
        self.questions: list[str] = []

    async def __call__(self, question: str) -> str:
        self.questions.append(question)
        return self.lines.pop(0)


def form(properties: dict[str, Any], required: list[str] | None = None) -> ElicitationContext:
    schema = ElicitationSchema.model_validate(
        {"type": "object", "properties": properties, "required": required or []}
    )
    request = CreateElicitationRequest(
        message="Set up\x1b[31m the deploy", mode="form", requested_schema=schema, session_id="s"
    )
    return ElicitationContext(request=request)


async def ask(context: ElicitationContext, *lines: str) -> tuple[object, Typist, str]:
    typist = Typist(*lines)
    out = io.StringIO()
    decision = await TerminalElicitation(typist, out).decide(context)
    assert not typist.lines, "every typed line was read"
    return decision, typist, out.getvalue()


async def test_each_type_is_asked_and_parsed() -> None:
    context = form(
        {
            "name": {"type": "string", "title": "Name", "description": "who deploys"},
            "region": {
                "type": "string",
                "oneOf": [{"const": "eu", "title": "Europe"}, {"const": "us", "title": "America"}],
            },
            "replicas": {"type": "integer", "minimum": 1},
            "ratio": {"type": "number"},
            "dry": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        },
        required=["name"],
    )
    decision, typist, out = await ask(context, "y", "Ada", "2", "3", "0.5", "n", "1, c")
    assert decision == Accept(
        {
            "name": "Ada",
            "region": "us",
            "replicas": 3,
            "ratio": 0.5,
            "dry": False,
            "tags": ["a", "c"],
        }
    )
    assert "The agent asks: Set up the deploy" in out  # no escape sequence reaches the terminal
    assert typist.questions[1] == "Name (who deploys): "
    assert "1. Europe" in typist.questions[2] and "2. America" in typist.questions[2]
    assert typist.questions[3] == "replicas (a whole number) [optional]: "


async def test_defaults_optional_and_required_fields() -> None:
    context = form(
        {
            "region": {"type": "string", "enum": ["eu", "us"], "default": "eu"},
            "note": {"type": "string"},
            "name": {"type": "string"},
            "dry": {"type": "boolean", "default": True},
        },
        required=["name", "region"],
    )
    decision, typist, out = await ask(context, "yes", "", "", "", "Ada", "")
    assert decision == Accept({"region": "eu", "name": "Ada", "dry": True})
    assert "[default: eu]" in typist.questions[1]
    assert "[default: yes]" in typist.questions[-1]
    assert "an answer is required" in out


async def test_wrong_answers_are_explained_and_asked_again() -> None:
    context = form(
        {
            "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
            "email": {"type": "string", "format": "email"},
            "region": {"type": "string", "enum": ["eu", "us"]},
        },
        required=["replicas", "email", "region"],
    )
    decision, _, out = await ask(
        context, "y", "many", "9", "4", "ada", "ada@example.org", "7", "us"
    )
    assert decision == Accept({"replicas": 4, "email": "ada@example.org", "region": "us"})
    assert "must be a whole number" in out
    assert "must be at most 5" in out
    assert "must be a valid email" in out
    assert "must be one of 'eu', 'us'" in out


async def test_decline_cancel_and_a_stuck_answerer() -> None:
    context = form({"n": {"type": "integer"}}, required=["n"])
    assert (await ask(context, "n"))[0] == Decline()
    assert (await ask(context, "c"))[0] == Cancel()
    decision, _, out = await ask(context, "y", *["x"] * 5)
    assert decision == Cancel() and "too many wrong answers" in out


async def test_a_field_it_cannot_show_is_never_shown_as_another_control() -> None:
    optional = form({"w": {"type": "_vendor_widget"}, "n": {"type": "string"}})
    decision, _, out = await ask(optional, "y", "x")
    assert decision == Accept({"n": "x"}) and "skipped" in out
    required = form({"w": {"type": "_vendor_widget"}}, required=["w"])
    decision, _, out = await ask(required, "y")
    assert decision == Decline() and "cannot show the field" in out


async def test_a_url_question_shows_the_address() -> None:
    request = CreateElicitationRequest(
        message="Sign in",
        mode="url",
        url="https://example.test/\x07login",
        elicitation_id="e",
        session_id="s",
    )
    context = ElicitationContext(request=request)
    decision, _, out = await ask(context, "y")
    assert decision == Accept() and "https://example.test/login" in out
    assert (await ask(context, ""))[0] == Decline()


def test_printable_removes_control_characters_but_keeps_lines() -> None:
    assert printable("a\x1b]0;title\x07b\nc\td\x1b[2Je\x00") == "ab\nc\tde"

"""Elicitation: the form modal checks the answer against the schema; URLs; decline, cancel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _tui_support import SIZE, RawAgent, chat_app, text_of, until
from textual.widgets import Input, Select, Switch

from accord.schema import (
    BooleanElicitationPropertySchema,
    CreateElicitationRequest,
    ElicitationSchema,
    IntegerElicitationPropertySchema,
    PromptRequest,
    PromptResponse,
    StringElicitationPropertySchema,
)
from accord.tui._elicitation import ElicitationScreen

pytestmark = pytest.mark.anyio

FORM = ElicitationSchema(
    properties={
        "name": StringElicitationPropertySchema(title="Project [b]name[/b]", min_length=1),
        "license": StringElicitationPropertySchema(enum=["MIT", "Apache-2.0"], default="MIT"),
        "workers": IntegerElicitationPropertySchema(minimum=1, maximum=8),
        "tests": BooleanElicitationPropertySchema(default=True),
    },
    required=["name", "workers"],
)


class AskingAgent(RawAgent):
    """Asks one elicitation question per prompt; the answers are recorded."""

    def __init__(self, questions: list[CreateElicitationRequest]) -> None:
        super().__init__()
        self.questions = questions
        self.replies: list[Any] = []

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        question = self.questions.pop(0)
        question.session_id = self.session_id
        self.replies.append(await self.client.create_elicitation(question))
        return PromptResponse(stop_reason="end_turn")


async def ask(pilot, app) -> ElicitationScreen:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: app.active_pane is not None)
    await until(pilot, lambda: app.active_pane.session.state == "idle")
    await pilot.press(*"go", "enter")
    await until(pilot, lambda: isinstance(app.question, ElicitationScreen))
    return app.screen


async def test_a_form_is_filled_checked_against_its_schema_and_accepted(tmp_path: Path) -> None:
    agent = AskingAgent(
        [
            CreateElicitationRequest(
                message="Set up the project", mode="form", requested_schema=FORM
            ),
            CreateElicitationRequest(message="Again?", mode="form", requested_schema=FORM),
            CreateElicitationRequest(message="Once more?", mode="form", requested_schema=FORM),
        ]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ask(pilot, app)
        labels = [text_of(s) for s in screen.query(".field-label")]
        assert labels == ["Project [b]name[/b] *", "license", "workers *", "tests"]
        assert screen.query_one(Select).value == "MIT"
        assert screen.query_one(Switch).value is True
        assert app.bells == 1
        await pilot.press("ctrl+s")  # name and workers missing: refused locally
        assert isinstance(app.screen, ElicitationScreen)
        assert "name" in text_of(screen.query_one("#problems"))
        name, workers = screen.query(Input)
        name.value = "accord"
        workers.value = "4"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: len(agent.replies) == 1)

        await ask(pilot, app)
        await pilot.press("ctrl+d")
        await until(pilot, lambda: len(agent.replies) == 2)
        await ask(pilot, app)
        await pilot.press("escape")
        await until(pilot, lambda: len(agent.replies) == 3)
    accepted, declined, cancelled = agent.replies
    assert accepted.action == "accept"
    assert accepted.content == {"name": "accord", "license": "MIT", "workers": 4, "tests": True}
    assert declined.action == "decline" and cancelled.action == "cancel"


async def test_a_url_question_shows_the_url_literally(tmp_path: Path) -> None:
    url = "https://example.test/login?next=[b]x[/b]"
    agent = AskingAgent(
        [CreateElicitationRequest(message="Sign in", mode="url", url=url, elicitation_id="e1")]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ask(pilot, app)
        assert text_of(screen.query_one(".url")) == url
        await pilot.click("#accept")
        await until(pilot, lambda: agent.replies)
    assert agent.replies[0].action == "accept"

"""Session titles from the first prompt (``PydanticAIEngine(titles=True)``), through the real
OpenAI provider code against the fake server: the model's title, cleaned and bounded; the
prompt's first line when the model fails, is slow or is not asked; never twice."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from _engines_support import ModelCounter, of_type, opened, run_turn
from pydantic_ai import Agent

import accord.engines.pydantic_ai._title as title_module
from accord.engines import TextChunk, TitleChanged, TurnOutput
from accord.engines.pydantic_ai import PydanticAIEngine
from accord.testing import FakeOpenAIServer, ScriptedError, ScriptedReply

pytestmark = pytest.mark.anyio


def _engine(server: FakeOpenAIServer, *, titles: bool = True) -> PydanticAIEngine:
    return PydanticAIEngine(
        Agent(), models=[ModelCounter().choice(server, "fake-model")], titles=titles
    )


def _titles(events: Sequence[TurnOutput]) -> list[str | None]:
    return [e.title for e in of_type(events, TitleChanged)]


async def test_the_model_titles_the_first_prompt_once() -> None:
    replies = [ScriptedReply(text=["One"]), ScriptedReply(text=["Two"])]
    side = {"title": [ScriptedReply(text=["Rename the module"])]}
    with FakeOpenAIServer(replies, side_scripts=side) as server:
        async with opened(_engine(server)) as session:
            first = await run_turn(session, "rename mod.py to core.py please")
            second = await run_turn(session, "and the imports")
    assert _titles(first) == ["Rename the module"]
    assert _titles(second) == []
    assert [e.content.text for e in of_type(first, TextChunk)] == ["One"]
    (asked,) = server.side_requests
    assert asked.headers["x-accord-purpose"] == "title"
    assert asked.body["messages"][-1]["content"] == "rename mod.py to core.py please"
    assert "tools" not in asked.body
    assert len(server.requests) == 2  # the turns' own requests, untouched


async def test_a_hostile_title_is_one_bounded_line_of_printable_text() -> None:
    evil = "\x1b[2J\x1b]0;pwned\x07Fix\n\u202eit\x00 " + "very " * 60
    side = {"title": [ScriptedReply(text=[evil])]}
    with FakeOpenAIServer([ScriptedReply(text=["ok"])], side_scripts=side) as server:
        async with opened(_engine(server)) as session:
            (title,) = _titles(await run_turn(session, "go"))
    assert title is not None
    assert len(title) <= title_module.TITLE_MAX_CHARS
    assert title.startswith("[2J]0;pwnedFix it very")
    assert title.endswith("…")
    assert all(ch.isprintable() for ch in title)


async def test_a_failing_model_leaves_the_first_line() -> None:
    error = ScriptedReply(error=ScriptedError(status=500, message="down"))
    side = {"title": [error, error, error]}
    with FakeOpenAIServer([ScriptedReply(text=["ok"])], side_scripts=side) as server:
        async with opened(_engine(server)) as session:
            events = await run_turn(session, "\n  \n  Fix   the\tbug \nin add()")
    assert _titles(events) == ["Fix the bug"]


async def test_a_slow_model_leaves_the_first_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(title_module, "TITLE_TIMEOUT_SECONDS", 0.2)
    side = {"title": [ScriptedReply(text=["Too late"], hang_after=0, hang_timeout=10.0)]}
    with FakeOpenAIServer([ScriptedReply(text=["ok"])], side_scripts=side) as server:
        async with opened(_engine(server)) as session:
            events = await run_turn(session, "make it faster")
    assert _titles(events) == ["make it faster"]


async def test_a_titled_session_and_an_engine_without_titles_ask_nothing() -> None:
    replies = [ScriptedReply(text=["a"]), ScriptedReply(text=["b"])]
    with FakeOpenAIServer(replies) as server:
        async with opened(_engine(server), title="Kept") as titled:
            kept = await run_turn(titled, "hello")
        async with opened(_engine(server, titles=False)) as plain:
            untitled = await run_turn(plain, "hello")
    assert _titles(kept) == [] and _titles(untitled) == []
    assert server.side_requests == ()


def test_first_line_title_skips_blank_lines_and_has_none_without_text() -> None:
    assert title_module.first_line_title("\n\t\nhello  world\nmore") == "hello world"
    assert title_module.first_line_title(" \n\x1b\n") is None

"""A refused prompt (``stopReason: refusal``) is not part of the next prompt's history.

The model's content filter ends a response with ``finish_reason: content_filter``, with some
text or with none (pydantic-ai then raises ``ContentFilterError``); either way the turn ends
``refusal``, its snapshot is the history from before the turn, and the next request to the
model does not carry the refused prompt or anything after it.
"""

from __future__ import annotations

import json

import pytest
from _engines_support import ModelCounter, of_type, opened, run_turn
from helpers.snapshots import fold_snapshots
from pydantic_ai import Agent

from accord.engines import StateSnapshot, TextChunk, TurnCompleted
from accord.engines.pydantic_ai import PydanticAIEngine, history_to_json
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.anyio


def _contents(body: object) -> str:
    return json.dumps(body)


@pytest.mark.parametrize("said", [["I will not"], []], ids=["with-text", "empty"])
async def test_a_refused_prompt_leaves_the_history_as_it_was(said: list[str]) -> None:
    replies = [
        ScriptedReply(text=["Hello"]),
        ScriptedReply(text=said, finish_reason="content_filter"),
        ScriptedReply(text=["Fine"]),
    ]
    with FakeOpenAIServer(replies) as server:
        engine = PydanticAIEngine(Agent(), models=[ModelCounter().choice(server, "fake-model")])
        async with opened(engine) as session:
            first = of_type(await run_turn(session, "hi"), StateSnapshot)
            before = list(session.history)
            refused = await run_turn(session, "forbidden words")
            after_refusal = list(session.history)
            await run_turn(session, "something else")
    assert of_type(refused, TurnCompleted) == [TurnCompleted(stop_reason="refusal")]
    assert [e.content.text for e in of_type(refused, TextChunk)] == said
    (snapshot,) = of_type(refused, StateSnapshot)
    assert fold_snapshots([*first, snapshot]) == history_to_json(before)
    assert snapshot.items == ()  # nothing appended to what the runtime holds
    assert after_refusal == before
    next_request = _contents(server.requests[2].body)
    assert "forbidden words" not in next_request and "I will not" not in next_request
    assert "hi" in next_request and "something else" in next_request

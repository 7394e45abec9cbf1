"""``ask_user``: the coder asks through the editor when it can, and says to ask in the reply
when it cannot.

The coder runs in process against the fake OpenAI server; accord's client answers questions
through an elicitation policy (or advertises none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _coder_support import system_text, tool_names

from accord.client import (
    Accept,
    DeclineAll,
    ElicitationCallback,
    ElicitationContext,
    ElicitationDecision,
    ElicitationPolicy,
    connect,
)
from accord.coder import CoderConfig, CoderRuntime
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, RecordedRequest, ScriptedReply, ScriptedToolCall

pytestmark = pytest.mark.anyio


def tool_result(request: RecordedRequest) -> str:
    """The content of the last tool message sent to the model."""
    [*_, last] = [m for m in request.messages if m.get("role") == "tool"]
    return str(last["content"])


async def run(
    project: Path, arguments: dict[str, Any], policy: ElicitationPolicy | None
) -> tuple[tuple[RecordedRequest, ...], str]:
    script = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="ask_user", arguments=arguments)]),
        ScriptedReply(text=["ok"]),
    ]
    with FakeOpenAIServer(script) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        options: dict[str, Any] = {} if policy is None else {"elicitation_policy": policy}
        try:
            async with connect(runtime, cwd=project, **options) as connection:
                session = await connection.new_session(project)
                result = await session.prompt("set up the deployment")
        finally:
            await runtime.aclose()
        return server.requests, result.text


async def test_the_question_goes_to_the_user_and_the_answer_to_the_model(project: Path) -> None:
    asked: list[ElicitationContext] = []

    async def answer(context: ElicitationContext) -> ElicitationDecision:
        asked.append(context)
        return Accept({"answer": "eu"})

    requests, text = await run(
        project,
        {"question": "Which region?", "choices": ["eu", "us"]},
        ElicitationCallback(answer),
    )
    assert "ask_user" in tool_names(requests[0])
    [context] = asked
    assert context.message == "Which region?"
    assert context.schema.to_wire()["properties"]["answer"]["enum"] == ["eu", "us"]
    assert context.schema.required == ["answer"]
    # The question names its open tool call, which the client's view knows as ask_user's.
    assert context.request.tool_call_id is not None
    assert context.tool_call is not None and context.tool_call.title == "Ask: Which region?"
    assert context.tool_call.tool_call_id == context.request.tool_call_id
    assert tool_result(requests[1]) == "The user answered: eu"
    assert text == "ok"


async def test_a_declined_question_is_reported_to_the_model(project: Path) -> None:
    requests, _ = await run(project, {"question": "Your name?"}, DeclineAll())
    assert tool_result(requests[1]) == "The user declined to answer."


async def test_without_elicitation_the_tool_is_not_offered_and_the_model_is_told(
    project: Path,
) -> None:
    requests, _ = await run(project, {"question": "Which region?"}, None)
    assert "ask_user" not in tool_names(requests[0])
    assert "otherwise ask in your reply and end your turn" in system_text(requests[0])

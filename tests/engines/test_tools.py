"""Tool calls: lifecycle, kind, title, locations, results, diffs and failures."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _engines_support import CWD, ModelCounter, Turn, collect, of_type, opened, run_turn
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelResponse, ToolCallPart, ToolKind

from accord.engines import StateSnapshot, ToolCallEnded, ToolCallProgress, ToolCallStarted
from accord.engines.pydantic_ai import (
    MAX_RESULT_TEXT,
    PydanticAIEngine,
    ToolBehaviour,
    ToolCallInput,
    path_locations,
    path_title,
    replace_diff,
)
from accord.schema import (
    ContentToolCallContent,
    DiffToolCallContent,
    ToolCallLocation,
)
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = pytest.mark.anyio

READ = ToolBehaviour(
    kind="read",
    title_from_args=path_title("Read"),
    locations_from_args=path_locations("path", line_arg="line"),
)
EDIT = ToolBehaviour(
    kind="edit",
    title_from_args=path_title("Edit"),
    locations_from_args=path_locations(),
    diff_from_args=replace_diff("path", "old_text", "new_text"),
)


def tool_agent() -> Agent[None, str]:
    agent: Agent[None, str] = Agent()

    @agent.tool_plain
    def read_file(path: str, line: int = 1) -> str:
        return f"contents of {path} from {line}"

    @agent.tool_plain
    def edit_file(path: str, old_text: str, new_text: str) -> str:
        return "edited"

    @agent.tool_plain
    def flaky(n: int) -> str:
        raise ModelRetry("try again with n=2")

    @agent.tool_plain(metadata={"acp_kind": "search"})
    def grep(pattern: str) -> str:
        return "x" * (MAX_RESULT_TEXT + 10)

    @agent.tool_plain(tool_kind=ToolKind("acp", "execute"))
    def run_tests() -> str:
        return "passed"

    return agent


def call(name: str, **args: Any) -> ScriptedToolCall:
    return ScriptedToolCall(name=name, arguments=args)


async def run_calls(*calls: ScriptedToolCall, **engine_args: Any) -> list[Any]:
    script = [ScriptedReply(tool_calls=calls), ScriptedReply(text=["done"])]
    with FakeOpenAIServer(script) as server:
        engine = PydanticAIEngine(
            tool_agent(),
            models=[ModelCounter().choice(server, "fake-model")],
            tool_behaviour={"read_file": READ, "edit_file": EDIT},
            **engine_args,
        )
        async with opened(engine) as session:
            events = await run_turn(session)
            tool_messages = [m for m in server.requests[1].messages if m["role"] == "tool"]
    assert len(tool_messages) == len(calls)  # the model got every result
    return events


async def test_read_round_trip_with_kind_title_locations_and_result() -> None:
    events = await run_calls(call("read_file", path="src/a.py", line=3))
    [started] = of_type(events, ToolCallStarted)
    [progress] = of_type(events, ToolCallProgress)
    [ended] = of_type(events, ToolCallEnded)
    assert (started.tool_kind, started.name, started.status) == ("read", "read_file", "pending")
    assert started.title == "Read"  # the arguments are still streaming
    assert progress.tool_call_id == started.tool_call_id
    assert progress.status == "in_progress"
    assert progress.title == "Read src/a.py"
    assert progress.locations == (ToolCallLocation(path=f"{CWD}/src/a.py", line=3),)
    assert progress.raw_input == {"path": "src/a.py", "line": 3}
    assert ended.status == "completed"
    assert ended.content == (
        ContentToolCallContent.model_validate(
            {"type": "content", "content": {"type": "text", "text": "contents of src/a.py from 3"}}
        ),
    )


async def test_accord_ids_not_provider_ids() -> None:
    events = await run_calls(call("read_file", path="a"), call("read_file", path="b"))
    ids = {e.tool_call_id for e in of_type(events, ToolCallStarted)}
    assert len(ids) == 2
    assert not any(i.startswith("call_") for i in ids)


async def test_edit_shows_a_diff_and_keeps_it_on_completion() -> None:
    events = await run_calls(
        call("edit_file", path="/abs/x.py", old_text="a = 1", new_text="a = 2")
    )
    diff = DiffToolCallContent(path="/abs/x.py", old_text="a = 1", new_text="a = 2")
    [progress] = of_type(events, ToolCallProgress)
    [ended] = of_type(events, ToolCallEnded)
    assert progress.content == (diff,)
    assert of_type(events, ToolCallStarted)[0].tool_kind == "edit"
    assert (ended.status, ended.content) == ("completed", (diff,))


async def test_retry_and_unknown_tool_end_failed_with_the_reason() -> None:
    events = await run_calls(call("flaky", n=1), call("no_such_tool"))
    ended = {e.tool_call_id: e for e in of_type(events, ToolCallEnded)}
    started = {e.name: e.tool_call_id for e in of_type(events, ToolCallStarted)}
    assert set(started) == {"flaky", "no_such_tool"}
    flaky = ended[started["flaky"]]
    unknown = ended[started["no_such_tool"]]
    assert flaky.status == unknown.status == "failed"
    assert "try again with n=2" in json.dumps(flaky.content[0].to_wire())
    assert "Unknown tool name" in json.dumps(unknown.content[0].to_wire())


async def test_kind_from_tool_metadata_and_long_results_are_cut() -> None:
    events = await run_calls(call("grep", pattern="x"))
    [started] = of_type(events, ToolCallStarted)
    [ended] = of_type(events, ToolCallEnded)
    assert started.tool_kind == "search"
    assert started.title == "grep"
    assert ended.content is not None
    [content] = ended.content
    assert isinstance(content, ContentToolCallContent)
    text = getattr(content.content, "text", "")
    assert text.startswith("x" * MAX_RESULT_TEXT)
    assert text.endswith("(10 more characters)")


async def test_kind_from_a_pydantic_ai_tool_kind_in_the_acp_namespace() -> None:
    events = await run_calls(call("run_tests"))
    [started] = of_type(events, ToolCallStarted)
    assert started.tool_kind == "execute"


async def test_a_failing_behaviour_never_fails_the_tool() -> None:
    def broken(call: ToolCallInput) -> str:
        raise RuntimeError("bad title")

    script = [ScriptedReply(tool_calls=[call("read_file", path="a")]), ScriptedReply(text=["ok"])]
    with FakeOpenAIServer(script) as server:
        engine = PydanticAIEngine(
            tool_agent(),
            models=[ModelCounter().choice(server, "fake-model")],
            tool_behaviour=lambda name: ToolBehaviour(kind="read", title_from_args=broken),
        )
        async with opened(engine) as session:
            events = await run_turn(session)
    [ended] = of_type(events, ToolCallEnded)
    assert ended.status == "completed"
    assert {e.title for e in of_type(events, ToolCallProgress)} == {"read_file"}


async def test_a_raising_tool_fails_the_turn_after_saving_history() -> None:
    agent: Agent[None, str] = Agent()

    @agent.tool_plain
    def boom() -> str:
        raise ValueError("kaboom")

    script = [ScriptedReply(text=["working"], tool_calls=[call("boom")])]
    with FakeOpenAIServer(script) as server:
        engine = PydanticAIEngine(agent, models=[ModelCounter().choice(server, "fake-model")])
        async with opened(engine) as session:
            events: list[Any] = []
            with pytest.raises(ValueError, match="kaboom"):
                await collect(session, Turn(), events)
    [ended] = of_type(events, ToolCallEnded)
    assert ended.status == "failed"
    assert isinstance(events[-1], StateSnapshot)
    responses = [m for m in session.history if isinstance(m, ModelResponse)]
    assert [p.tool_name for p in responses[0].parts if isinstance(p, ToolCallPart)] == ["boom"]

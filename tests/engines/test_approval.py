"""Tool approval bridged to ``session/request_permission``, and mode-based tool filtering."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from _engines_support import ModelCounter, Turn, of_type, opened, run_turn
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ToolReturnPart

from accord.engines import StateSnapshot, ToolCallEnded, ToolCallProgress, ToolCallStarted
from accord.engines.pydantic_ai import (
    DENIED_MESSAGE,
    TURN_CANCELLED_MESSAGE,
    PydanticAIEngine,
    ToolBehaviour,
    ToolCallInput,
    ToolPreview,
    path_title,
    replace_diff,
)
from accord.schema import DiffToolCallContent, PermissionOption, ToolCallLocation
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = pytest.mark.anyio

WRITE = ScriptedToolCall(name="write_file", arguments={"path": "/p/a.txt", "text": "new"})
READ = ScriptedToolCall(name="read_file", arguments={"path": "/p/a.txt"})


class Tools:
    """An agent whose tools record that they ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.agent: Agent[None, str] = Agent()

        @self.agent.tool_plain(requires_approval=True)
        def write_file(path: str, text: str) -> str:
            self.ran.append("write_file")
            return "written"

        @self.agent.tool_plain
        def read_file(path: str) -> str:
            self.ran.append("read_file")
            return "text"


def engine_for(server: FakeOpenAIServer, tools: Tools, **args: Any) -> PydanticAIEngine:
    behaviour = ToolBehaviour(
        kind="edit",
        title_from_args=path_title("Write"),
        diff_from_args=replace_diff("path", None, "text"),
    )
    return PydanticAIEngine(
        tools.agent,
        models=[ModelCounter().choice(server, "fake-model")],
        tool_behaviour={"write_file": behaviour},
        **args,
    )


def tool_result(server: FakeOpenAIServer, request: int) -> list[str]:
    return [m["content"] for m in server.requests[request].messages if m["role"] == "tool"]


async def test_allowed_call_runs_after_the_user_agrees() -> None:
    tools = Tools()
    script = [ScriptedReply(tool_calls=[WRITE]), ScriptedReply(text=["ok"])]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_for(server, tools)) as session:
            turn = Turn(answers=["allow_once"])
            events = await run_turn(session, turn=turn)
            result = tool_result(server, 1)

    assert tools.ran == ["write_file"]
    assert result == ["written"]
    [request] = turn.permissions.requests
    [started] = of_type(events, ToolCallStarted)
    assert request.tool_call_id == started.tool_call_id
    assert (request.title, request.kind, request.status) == ("Write /p/a.txt", "edit", "pending")
    assert request.content is not None and request.content[0].type == "diff"
    assert turn.permissions.options == [()]  # the runtime's default options
    statuses = [e.status for e in of_type(events, ToolCallProgress)]
    assert statuses == [None, "in_progress"]  # stays pending while the user decides
    [ended] = of_type(events, ToolCallEnded)
    assert ended.status == "completed"


async def test_a_preview_is_shown_before_asking_and_carried_by_the_request() -> None:
    tools = Tools()
    whole = DiffToolCallContent(path="/p/a.txt", old_text="old\nline\n", new_text="old\nnew\n")
    where = ToolCallLocation(path="/p/a.txt", line=2)
    previewed: list[tuple[str, Any]] = []

    async def preview(call: ToolCallInput, ctx: RunContext[Any]) -> ToolPreview:
        previewed.append((call.name, dict(call.args)))
        assert tools.ran == []  # worked out before the tool runs
        return ToolPreview(content=(whole,), locations=(where,), title="Write a.txt (2 lines)")

    behaviour = ToolBehaviour(
        kind="edit",
        title_from_args=path_title("Write"),
        diff_from_args=replace_diff("path", None, "text"),
        preview_before_asking=preview,
    )
    script = [ScriptedReply(tool_calls=[WRITE]), ScriptedReply(text=["ok"])]
    with FakeOpenAIServer(script) as server:
        engine = PydanticAIEngine(
            tools.agent,
            models=[ModelCounter().choice(server, "fake-model")],
            tool_behaviour={"write_file": behaviour},
        )
        async with opened(engine) as session:
            turn = Turn(answers=["allow_once"])
            events = await run_turn(session, turn=turn)

    assert previewed == [("write_file", {"path": "/p/a.txt", "text": "new"})]
    [request] = turn.permissions.requests
    assert (request.title, request.kind) == ("Write a.txt (2 lines)", "edit")
    assert request.content == [whole]
    assert request.locations == [where]
    shown = [e for e in of_type(events, ToolCallProgress) if e.content]
    assert shown[-1].content == (whole,) and shown[-1].locations == (where,)
    [ended] = of_type(events, ToolCallEnded)
    assert ended.status == "completed" and ended.content == (whole,)  # the diff it asked with


async def test_a_preview_that_fails_leaves_the_request_as_the_arguments_show_it() -> None:
    tools = Tools()

    async def preview(call: ToolCallInput, ctx: RunContext[Any]) -> ToolPreview:
        raise OSError("cannot read")

    behaviour = ToolBehaviour(
        kind="edit",
        title_from_args=path_title("Write"),
        diff_from_args=replace_diff("path", None, "text"),
        preview_before_asking=preview,
    )
    script = [ScriptedReply(tool_calls=[WRITE]), ScriptedReply(text=["ok"])]
    with FakeOpenAIServer(script) as server:
        engine = PydanticAIEngine(
            tools.agent,
            models=[ModelCounter().choice(server, "fake-model")],
            tool_behaviour={"write_file": behaviour},
        )
        async with opened(engine) as session:
            turn = Turn(answers=["allow_once"])
            await run_turn(session, turn=turn)

    assert tools.ran == ["write_file"]
    [request] = turn.permissions.requests
    assert request.title == "Write /p/a.txt"
    assert request.content == [DiffToolCallContent(path="/p/a.txt", old_text=None, new_text="new")]


@pytest.mark.parametrize("answer", ["reject_once", "reject_always"])
async def test_rejected_call_never_runs_and_the_turn_goes_on(answer: Any) -> None:
    tools = Tools()
    script = [ScriptedReply(tool_calls=[WRITE]), ScriptedReply(text=["understood"])]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_for(server, tools)) as session:
            events = await run_turn(session, turn=Turn(answers=[answer]))
            result = tool_result(server, 1)

    assert tools.ran == []
    assert result == [DENIED_MESSAGE]
    [ended] = of_type(events, ToolCallEnded)
    assert ended.status == "failed"
    assert DENIED_MESSAGE in str(ended.content)
    assert isinstance(events[-1], StateSnapshot)


async def test_turn_cancelled_while_asking_denies_and_stops() -> None:
    tools = Tools()
    script = [ScriptedReply(tool_calls=[WRITE]), ScriptedReply(text=["never asked"])]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_for(server, tools)) as session:
            turn = Turn(answers=["cancelled"])
            turn.permissions.on_request = turn.cancel  # the client cancels while asked
            events = await run_turn(session, turn=turn)
            requests = len(server.requests)

    assert tools.ran == []
    assert requests == 1  # the model is not called again
    [ended] = of_type(events, ToolCallEnded)
    assert ended.status == "cancelled"  # cut short by the cancel, not a failure
    assert isinstance(events[-1], StateSnapshot)
    returns = [p for m in session.history for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [(r.content, r.outcome) for r in returns] == [(TURN_CANCELLED_MESSAGE, "denied")]


async def test_hook_asks_per_mode_and_can_waive_a_declared_approval() -> None:
    asked: list[tuple[str, Mapping[str, Any], str | None]] = []

    def needs_approval(name: str, args: Mapping[str, Any], mode: str | None) -> bool | None:
        asked.append((name, args, mode))
        if mode == "yolo":
            return False  # even write_file runs without asking
        return True if name == "read_file" else None  # read asks too; write as declared

    tools = Tools()
    script = [
        ScriptedReply(tool_calls=[READ, WRITE]),
        ScriptedReply(text=["asked twice"]),
        ScriptedReply(tool_calls=[READ, WRITE]),
        ScriptedReply(text=["asked nothing"]),
    ]
    with FakeOpenAIServer(script) as server:
        engine = engine_for(server, tools, needs_approval=needs_approval)
        async with opened(engine) as session:
            careful = Turn(answers=["allow_once", "allow_once"], mode_id="careful")
            await run_turn(session, turn=careful)
            yolo = Turn(mode_id="yolo")
            events = await run_turn(session, turn=yolo)

    assert sorted(r.title or "" for r in careful.permissions.requests) == [
        "Write /p/a.txt",
        "read_file",
    ]
    assert yolo.permissions.requests == []
    assert sorted(tools.ran) == ["read_file", "read_file", "write_file", "write_file"]
    assert {mode for _, _, mode in asked} == {"careful", "yolo"}
    assert all(e.status == "completed" for e in of_type(events, ToolCallEnded))


async def test_custom_permission_options_are_passed_through() -> None:
    options = (PermissionOption(option_id="go", name="Go", kind="allow_once"),)
    tools = Tools()
    script = [ScriptedReply(tool_calls=[WRITE]), ScriptedReply(text=["ok"])]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_for(server, tools, permission_options=options)) as session:
            turn = Turn(answers=["allow_once"])
            await run_turn(session, turn=turn)
    assert turn.permissions.options == [options]


async def test_tool_filter_applies_the_current_mode_to_every_request() -> None:
    def tool_filter(name: str, mode: str | None) -> bool:
        return mode != "read-only" or name == "read_file"

    tools = Tools()
    script = [ScriptedReply(text=["a"]), ScriptedReply(text=["b"])]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_for(server, tools, tool_filter=tool_filter)) as session:
            await run_turn(session, turn=Turn(mode_id="read-only"))
            await session.set_mode("code")
            await run_turn(session, turn=Turn(mode_id="code"))
            offered = [
                sorted(t["function"]["name"] for t in r.body.get("tools", []))
                for r in server.requests
            ]
    assert offered == [["read_file"], ["read_file", "write_file"]]


async def test_mode_switch_mid_turn_filters_the_next_request() -> None:
    def tool_filter(name: str, mode: str | None) -> bool:
        return mode != "read-only" or name == "read_file"

    tools = Tools()
    script = [ScriptedReply(tool_calls=[READ]), ScriptedReply(text=["done"])]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_for(server, tools, tool_filter=tool_filter)) as session:
            events: list[Any] = []
            async for event in session.run_turn([], Turn(mode_id="code").context):
                events.append(event)
                if isinstance(event, ToolCallEnded):
                    await session.set_mode("read-only")
            offered = [
                sorted(t["function"]["name"] for t in r.body.get("tools", []))
                for r in server.requests
            ]
    assert offered == [["read_file", "write_file"], ["read_file"]]

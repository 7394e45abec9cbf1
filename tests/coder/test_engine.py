"""The coder engine without the runtime: real pydantic-ai and OpenAI provider code against the
fake chat-completions server, driven turn by turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from _coder_support import (
    FakeTerminals,
    Turn,
    engine_on,
    opened,
    root,
    run_turn,
    system_text,
    text_of,
    tool_names,
)
from helpers.snapshots import fold_snapshots
from helpers.timeouts import TIMEOUT

from accord.coder import CoderConfig, CoderEngine, CoderState, _open, _search
from accord.engines import (
    ModeChanged,
    PlanChanged,
    StateSnapshot,
    SubAgentEvent,
    SubAgentStarted,
    SubAgentStopped,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
)
from accord.errors import AuthRequired
from accord.schema import DiffToolCallContent, TerminalToolCallContent, ToolCallLocation
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = pytest.mark.anyio

EDIT_TOOLS = {"write_file", "edit_file", "run_command"}


def call(name: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments=arguments)])


def say(text: str) -> ScriptedReply:
    return ScriptedReply(text=[text])


def tool_message(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


async def test_the_system_prompt_is_built_once_and_stored(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "AGENTS.md").write_text("Always answer in French.")
    with FakeOpenAIServer([say("bonjour"), say("encore")]) as server:
        engine = engine_on(server)
        async with opened(engine, str(project)) as session:
            outputs = await run_turn(session, "hello")
        snapshot = root(outputs, StateSnapshot)[-1]
        state = CoderState.from_json(snapshot.state)
        assert state is not None
        assert "Always answer in French." in state.system_prompt
        assert state.system_prompt == session.system_prompt
        assert system_text(server.requests[0]) == state.system_prompt

        # Loaded again (after a restart, the project notes changed): the stored prompt is
        # reused word for word, never rebuilt, and the model sees the earlier turn.
        def no_rebuild(**_: Any) -> str:
            raise AssertionError("the system prompt was rebuilt")

        monkeypatch.setattr(_open, "build_system_prompt", no_rebuild)
        (project / "AGENTS.md").write_text("Answer in German.")
        async with opened(engine, str(project), history=snapshot.state) as again:
            assert again.system_prompt == state.system_prompt
            await run_turn(again, "more")
        second = server.requests[1]
        assert system_text(second) == state.system_prompt
        contents = [m.get("content") for m in second.messages]
        assert "hello" in contents and "bonjour" in contents


async def test_the_session_hands_each_history_on_and_keeps_no_copy(project: Path) -> None:
    # A copy of every history kept as Python objects by the coder session was the largest
    # thing a turn left behind in a busy agent (issue 12, the soak). The snapshot carries
    # the system prompt and the whole history; the session keeps the prompt alone.
    with FakeOpenAIServer([say("one"), say("two")]) as server:
        async with opened(engine_on(server), str(project)) as session:
            assert session.opening_state_json() == {**session.opening_state_json(), "engine": None}
            outputs = await run_turn(session, "first")
            outputs += await run_turn(session, "second")
            kept = session.opening_state_json()
    state = CoderState.from_json(fold_snapshots(root(outputs, StateSnapshot)))
    assert state is not None and state.system_prompt == session.system_prompt
    history = json.dumps(state.engine)
    assert all(text in history for text in ("first", "one", "second", "two"))
    assert kept == CoderState(session.system_prompt).to_json()


async def test_an_edit_in_code_mode_asks_first_and_reports_the_whole_diff(
    project: Path,
) -> None:
    script = [call("edit_file", path="pkg/__init__.py", old_text="a - b", new_text="a + b")]
    with FakeOpenAIServer([*script, say("fixed")]) as server:
        async with opened(engine_on(server), str(project)) as session:
            turn = Turn(answers=["allow_once"])
            outputs = await run_turn(session, "fix it", turn)
    [asked] = turn.permissions.requests
    [agent_id] = turn.permissions.agent_ids
    assert agent_id == "root"
    assert asked.kind == "edit" and asked.title == "Edit pkg/__init__.py"
    whole = DiffToolCallContent(
        path=str(project / "pkg" / "__init__.py"),
        old_text="def add(a, b):\n    return a - b\n",
        new_text="def add(a, b):\n    return a + b\n",
    )
    # asked with the whole file before and after, and the changed line, as it completes
    assert asked.content == [whole]
    assert asked.locations == [ToolCallLocation(path=whole.path, line=2)]
    assert (project / "pkg" / "__init__.py").read_text().endswith("return a + b\n")
    (ended,) = root(outputs, ToolCallEnded)
    assert ended.status == "completed"
    assert ended.content == (whole,)
    assert ended.locations == (ToolCallLocation(path=whole.path, line=2),)
    assert text_of(outputs) == "fixed"


async def test_a_rejected_edit_never_runs(project: Path) -> None:
    script = [call("write_file", path="new.py", content="x = 1\n"), say("ok")]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_on(server), str(project)) as session:
            outputs = await run_turn(session, "write", Turn(answers=["reject_once"]))
        assert "rejected" in tool_message(server.requests[1].body)
    assert not (project / "new.py").exists()
    (ended,) = root(outputs, ToolCallEnded)
    assert ended.status == "failed"


async def test_ask_mode_does_not_offer_edits_and_refuses_them(project: Path) -> None:
    script = [
        call("edit_file", path="pkg/__init__.py", old_text="a - b", new_text="a + b"),
        say("I cannot edit in ask mode."),
    ]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_on(server), str(project), mode_id="ask") as session:
            turn = Turn(mode_id="ask")
            outputs = await run_turn(session, "fix it", turn)
        offered = set(tool_names(server.requests[0]))
    assert offered == {
        "read_file",
        "list_directory",
        "find_files",
        "grep",
        "update_plan",
        "delegate",
    }
    assert not turn.permissions.requests
    assert (project / "pkg" / "__init__.py").read_text().endswith("return a - b\n")
    (ended,) = root(outputs, ToolCallEnded)
    assert ended.status == "failed"


async def test_auto_mode_never_asks(project: Path) -> None:
    script = [call("write_file", path="out.txt", content="hi\n"), say("done")]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_on(server), str(project), mode_id="auto") as session:
            turn = Turn(mode_id="auto")
            await run_turn(session, "write", turn)
        assert set(tool_names(server.requests[0])) >= EDIT_TOOLS
    assert not turn.permissions.requests
    assert (project / "out.txt").read_text() == "hi\n"


async def test_a_mode_switch_mid_turn_applies_to_the_next_request(project: Path) -> None:
    script = [call("write_file", path="a.txt", content="a"), say("done")]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_on(server), str(project)) as session:

            async def switch() -> None:
                await session.set_mode("ask")

            turn = Turn(answers=["allow_once"])
            turn.permissions.on_request = switch
            await run_turn(session, "write", turn)
        first, second = server.requests
    assert set(tool_names(first)) >= EDIT_TOOLS
    assert not EDIT_TOOLS & set(tool_names(second))


async def test_commands_run_in_the_editor_terminal(project: Path) -> None:
    terminals = FakeTerminals(output_text="1 passed\n")
    script = [call("run_command", command="pytest -q", cwd="tests"), say("green")]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_on(server), str(project), terminals=terminals) as session:
            outputs = await run_turn(session, "test", Turn(answers=["allow_once"]))
        assert tool_message(server.requests[1].body) == "1 passed\n[exit code 0]"
    # The line goes to the client's shell as argv (a client may exec command + args directly).
    assert terminals.created == [("/bin/sh", ("-c", "pytest -q"), str(project / "tests"))]
    assert terminals.terminals[0].released
    embedded = [
        p for p in root(outputs, ToolCallProgress) if p.content and p.content[0].type == "terminal"
    ]
    assert embedded[0].content == (TerminalToolCallContent(terminal_id="term-1"),)
    (ended,) = root(outputs, ToolCallEnded)
    assert ended.content is not None and ended.content[0] == TerminalToolCallContent(
        terminal_id="term-1"
    )
    (started,) = root(outputs, ToolCallStarted)
    assert started.tool_kind == "execute"


@pytest.mark.subprocess
async def test_commands_run_locally_without_editor_terminals(project: Path) -> None:
    script = [call("run_command", command="echo hi; exit 2"), say("ok")]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_on(server), str(project), mode_id="auto") as session:
            await run_turn(session, "run", Turn(mode_id="auto"))
        assert tool_message(server.requests[1].body) == "hi\n[exit code 2]"


async def test_cancelling_during_a_command_kills_it(project: Path) -> None:
    terminals = FakeTerminals(hold=True)
    script = [call("run_command", command="sleep 100"), say("never")]
    with FakeOpenAIServer(script) as server:
        async with opened(
            engine_on(server), str(project), mode_id="auto", terminals=terminals
        ) as session:
            turn = Turn(mode_id="auto")
            outputs: list[Any] = []

            async def consume() -> None:
                async for output in session.run_turn([], turn.context):
                    outputs.append(output)

            with anyio.fail_after(TIMEOUT):
                async with anyio.create_task_group() as group:
                    group.start_soon(consume)
                    await terminals.started.wait()
                    turn.cancel_event.set()
        assert len(server.requests) == 1
    terminal = terminals.terminals[0]
    assert terminal.released
    (ended,) = root(outputs, ToolCallEnded)
    assert ended.status == "cancelled"


async def test_the_plan_is_sent(project: Path) -> None:
    steps = [{"content": "read", "status": "completed"}, {"content": "fix", "priority": "high"}]
    with FakeOpenAIServer([call("update_plan", steps=steps), say("ok")]) as server:
        async with opened(engine_on(server), str(project)) as session:
            outputs = await run_turn(session)
    (plan,) = root(outputs, PlanChanged)
    assert [(e.content, e.status, e.priority) for e in plan.entries] == [
        ("read", "completed", "medium"),
        ("fix", "pending", "high"),
    ]
    (started,) = root(outputs, ToolCallStarted)
    assert started.tool_kind == "think"


async def test_delegation_runs_a_read_only_sub_agent_under_its_own_id(project: Path) -> None:
    script = [
        call("delegate", task="Where is add defined?", description="Find add"),
        call("grep", pattern="def add"),  # the sub-agent's first step
        say("In pkg/__init__.py, line 1."),  # its answer
        say("It is in pkg."),  # the parent's reply
    ]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_on(server), str(project)) as session:
            outputs = await run_turn(session, "where is add?")
        sub_request = server.requests[1]
        assert set(tool_names(sub_request)) == {"read_file", "list_directory", "find_files", "grep"}
        assert "read-only helper" in system_text(sub_request)
        assert "In pkg/__init__.py, line 1." in tool_message(server.requests[3].body)
    (started,) = root(outputs, SubAgentStarted)
    (stopped,) = root(outputs, SubAgentStopped)
    delegate_call = next(e for e in root(outputs, ToolCallStarted) if e.name == "delegate")
    assert started.parent_tool_call_id == delegate_call.tool_call_id
    assert stopped.sub_agent_id == started.sub_agent_id and stopped.outcome == "completed"
    nested = [o for o in outputs if isinstance(o, SubAgentEvent)]
    assert nested and all(o.agent_id == started.sub_agent_id for o in nested)
    assert not any(isinstance(o.event, StateSnapshot) for o in nested)
    grep_call = next(o.event for o in nested if isinstance(o.event, ToolCallStarted))
    assert grep_call.tool_kind == "search"
    assert text_of(outputs) == "It is in pkg."
    delegate_end = next(
        e for e in root(outputs, ToolCallEnded) if e.tool_call_id == delegate_call.tool_call_id
    )
    assert delegate_end.status == "completed"


async def test_slash_commands_never_reach_the_model(project: Path) -> None:
    with FakeOpenAIServer([say("first"), say("after clear")]) as server:
        async with opened(engine_on(server), str(project)) as session:
            await run_turn(session, "remember 42")
            switched = await run_turn(session, "/mode ask")
            assert root(switched, ModeChanged) == [ModeChanged(mode_id="ask")]
            assert "Switched to ask mode" in text_of(switched)
            assert session.mode_id == "ask"
            helped = await run_turn(session, "/help", Turn(mode_id="ask"))
            assert "/clear" in text_of(helped)
            cleared = await run_turn(session, "/clear", Turn(mode_id="ask"))
            (snapshot,) = root(cleared, StateSnapshot)
            state = CoderState.from_json(snapshot.state)
            assert state is not None and state.engine is None
            assert root(cleared, PlanChanged) == [PlanChanged(entries=())]
            requests_so_far = len(server.requests)
            assert requests_so_far == 1  # the commands never reached the model
            await run_turn(session, "what did I say?", Turn(mode_id="ask"))
        _, after_clear = server.requests
        contents = [m.get("content") for m in after_clear.messages]
        assert "remember 42" not in contents and "what did I say?" in contents


async def test_no_model_configured_refuses_sessions_with_instructions(project: Path) -> None:
    engine = CoderEngine(CoderConfig())
    with pytest.raises(AuthRequired, match="accord serve --model") as raised:
        async with opened(engine, str(project)):
            pass
    assert raised.value.code == -32000


async def test_an_unusable_model_is_explained(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    engine = CoderEngine(CoderConfig(models=("openai:gpt-5",)))
    with pytest.raises(AuthRequired, match="OPENAI_API_KEY") as raised:
        async with opened(engine, str(project)):
            pass
    assert "test model" not in raised.value.message
    with pytest.raises(AuthRequired, match="Unknown model"):
        async with opened(CoderEngine(CoderConfig(models=("nonsense:x",))), str(project)):
            pass


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (call("read_file", path="../../etc/passwd"), "outside the workspace"),
        (call("run_command", command="ls", cwd="../.."), "outside the workspace"),
        (call("run_command", command="ls", cwd="README.md"), "is not a directory"),
        (call("list_directory", path="missing"), "is not a directory"),
        (call("grep", pattern="("), "invalid regular expression"),
    ],
)
async def test_tool_errors_reach_the_model_as_failed_calls(
    project: Path, reply: ScriptedReply, reason: str
) -> None:
    (project / "README.md").write_text("x")
    with FakeOpenAIServer([reply, say("cannot")]) as server:
        async with opened(engine_on(server), str(project), mode_id="auto") as session:
            outputs = await run_turn(session, turn=Turn(mode_id="auto"))
        assert reason in tool_message(server.requests[1].body)
    (ended,) = root(outputs, ToolCallEnded)
    assert ended.status == "failed"
    assert text_of(outputs) == "cannot"


async def test_an_unexpected_tool_error_fails_the_call_not_the_turn(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(_search, "find_files", broken)
    with FakeOpenAIServer([call("find_files", pattern="*"), say("sorry")]) as server:
        async with opened(engine_on(server), str(project)) as session:
            outputs = await run_turn(session)
        assert "the tool failed: RuntimeError: boom" in tool_message(server.requests[1].body)
    assert text_of(outputs) == "sorry"


async def test_model_switching_uses_the_config_option(project: Path) -> None:
    with FakeOpenAIServer([say("a"), say("b")]) as server:
        engine = engine_on(server, "openai:one", "openai:two")
        (option,) = [o for o in engine.capabilities.config_options if o.category == "model"]
        assert option.id == "model"
        async with opened(engine, str(project)) as session:
            await run_turn(session)
            await session.set_config_option("model", "openai:two")
            await run_turn(session)
        assert [r.body["model"] for r in server.requests] == ["one", "two"]


def test_capabilities_need_no_model_code() -> None:
    engine = CoderEngine(CoderConfig(models=("openai:m",)))
    caps = engine.capabilities
    assert [m.id for m in caps.modes] == ["ask", "code", "auto"]
    assert caps.initial_mode_id == "code"
    assert [c.name for c in caps.commands] == ["help", "mode", "clear", "compact"]
    assert caps.mcp_http and caps.embedded_context
    # images and audio only once resolve_prompt_support() read the profiles (or the cache)
    assert not caps.image and not caps.audio
    local = CoderEngine(CoderConfig(models=("m",), base_url="http://localhost:1/v1"))
    assert not local.capabilities.image
    assert json.dumps([o.to_wire() for o in caps.config_options])


@pytest.mark.parametrize(
    ("model", "image"),
    [
        ("openai:gpt-3.5-turbo", False),
        ("openai:gpt-4o", True),
        ("anthropic:claude-sonnet-4-5", True),
    ],
)
async def test_images_are_advertised_only_for_models_known_to_read_them(
    model: str, image: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pydantic-ai's profile says images for a model it does not describe (issue 26)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))  # a fresh prompt-support cache
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-used")
    engine = CoderEngine(CoderConfig(models=(model,)))
    await engine.resolve_prompt_support()
    assert engine.capabilities.image is image
    again = CoderEngine(CoderConfig(models=(model,)))  # the remembered answer says the same
    await again.resolve_prompt_support()
    assert again.capabilities.image is image


async def test_a_long_tool_result_is_cut_for_the_model_and_whole_for_the_client(
    project: Path,
) -> None:
    lines = [f"line {n:05d} " + "x" * 40 for n in range(1000)]  # ~52,000 characters
    (project / "big.txt").write_text("\n".join(lines) + "\n")
    script = [call("read_file", path="big.txt"), say("read"), say("again")]
    with FakeOpenAIServer(script) as server:
        async with opened(engine_on(server), str(project)) as session:
            outputs = await run_turn(session)
            await run_turn(session, "more")
        seen = tool_message(server.requests[1].body)
        later = json.dumps(server.requests[2].body["messages"])
    assert "line 00000" in seen and lines[-1] not in seen
    assert "cut to its first 40,000 of" in seen and len(seen) < 40_500
    assert lines[-1] not in later and "cut to its first 40,000 of" in later
    (ended,) = root(outputs, ToolCallEnded)
    assert ended.content is not None
    whole = "".join(getattr(getattr(c, "content", None), "text", "") for c in ended.content)
    assert lines[-1] in whole and "cut to its first" not in whole

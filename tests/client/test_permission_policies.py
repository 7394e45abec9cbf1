"""Permission policies: pure decisions by option kind, rules, callbacks; wiring to sessions."""

from __future__ import annotations

import logging

import anyio
import pytest
from _client_agents import PERMISSION_OPTIONS, ScriptedAgent, tool_call
from helpers.timeouts import TIMEOUT

from accord.client import (
    AllowAll,
    AskCallback,
    Cancel,
    DenyAll,
    PermissionContext,
    PermissionDecision,
    PermissionPolicy,
    Rule,
    Rules,
    Select,
    ToolCallState,
    connect,
)
from accord.errors import ResourceNotFound
from accord.schema import (
    PermissionOption,
    PromptRequest,
    RequestPermissionRequest,
    StopReason,
    ToolCallUpdate,
    ToolKind,
)

pytestmark = pytest.mark.anyio


def context(
    kind: ToolKind = "read",
    title: str = "Read a.py",
    options: list[PermissionOption] = PERMISSION_OPTIONS,
) -> PermissionContext:
    request = RequestPermissionRequest(
        session_id="s", tool_call=ToolCallUpdate(tool_call_id="t1"), options=options
    )
    state = ToolCallState(tool_call_id="t1", title=title, kind=kind)
    return PermissionContext(session_id="s", request=request, tool_call=state)


ONLY_ALWAYS = [
    PermissionOption(option_id="ok-forever", name="Always", kind="allow_always"),
    PermissionOption(option_id="never", name="Never", kind="reject_always"),
]


async def test_allow_and_deny_pick_options_by_kind_not_id() -> None:
    assert await AllowAll().decide(context()) == Select("yes-1")
    assert await AllowAll(always=True).decide(context()) == Select("yes-always")
    assert await DenyAll().decide(context()) == Select("no-1")
    assert await AllowAll().decide(context(options=ONLY_ALWAYS)) == Select("ok-forever")
    assert await DenyAll().decide(context(options=ONLY_ALWAYS)) == Select("never")
    assert await DenyAll(always=True).decide(context(options=ONLY_ALWAYS)) == Select("never")


async def test_without_a_matching_option_the_answer_is_cancel() -> None:
    allow_only = [PermissionOption(option_id="a", name="Allow", kind="allow_once")]
    assert await DenyAll().decide(context(options=allow_only)) == Cancel()
    assert await AllowAll().decide(context(options=[])) == Cancel()


def test_context_exposes_the_tool_call() -> None:
    ctx = context(kind="edit", title="Edit b.py")
    assert (ctx.kind, ctx.title) == ("edit", "Edit b.py")
    assert [o.option_id for o in ctx.options] == ["yes-1", "yes-always", "no-1"]
    assert ctx.option("reject_always", "reject_once") == PERMISSION_OPTIONS[2]
    assert ctx.option("reject_always") is None
    assert ctx.select("allow_always") == Select("yes-always")


async def test_rules_first_match_wins_then_fallback() -> None:
    policy = Rules(
        [
            Rule("deny", kind="execute", title="rm *"),
            Rule("allow", kind=["read", "search"]),
            Rule("allow_always", title="*.md"),
            Rule("cancel", kind="fetch"),
            Rule(DenyAll(always=True), kind="delete"),
        ],
        fallback=AllowAll(),
    )
    assert await policy.decide(context("execute", "rm -rf build")) == Select("no-1")
    assert await policy.decide(context("execute", "make test")) == Select("yes-1")  # fallback
    assert await policy.decide(context("search", "grep foo")) == Select("yes-1")
    assert await policy.decide(context("edit", "Edit README.md")) == Select("yes-always")
    assert await policy.decide(context("fetch", "GET x")) == Cancel()
    assert await policy.decide(context("delete", "rm a")) == Select("no-1")  # no reject_always
    assert await Rules([]).decide(context()) == Select("no-1")  # default fallback: deny
    assert Rule("allow", title="Read*").matches(context())
    assert not Rule("allow", title="read*").matches(context())  # case-sensitive


async def test_ask_callback_and_protocol() -> None:
    seen: list[PermissionContext] = []

    async def ask(ctx: PermissionContext) -> PermissionDecision:
        seen.append(ctx)
        return ctx.select("allow_always")

    policy = AskCallback(ask)
    assert isinstance(policy, PermissionPolicy)
    assert await policy.decide(context()) == Select("yes-always")
    assert seen[0].title == "Read a.py"


# --- wiring --------------------------------------------------------------------------------


async def ask_bare(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
    """A tool call announced first; the permission request names only its id."""
    await agent.send(request.session_id, tool_call("t1", "rm -rf /tmp/x", kind="execute"))
    await agent.ask(request.session_id, "t1")
    await agent.ask(request.session_id, "t2", title="Write notes.md", kind="edit")
    return "end_turn"


async def test_the_policy_sees_what_the_view_knows_of_the_tool_call() -> None:
    seen: list[PermissionContext] = []

    async def ask(ctx: PermissionContext) -> PermissionDecision:
        seen.append(ctx)
        return await Rules([Rule("deny", kind="execute")], fallback=AllowAll()).decide(ctx)

    agent = ScriptedAgent(ask_bare)
    async with connect(agent, permission_policy=AskCallback(ask)) as conn:
        session = await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            await session.prompt("go")
    assert [(c.kind, c.title) for c in seen] == [
        ("execute", "rm -rf /tmp/x"),
        ("edit", "Write notes.md"),
    ]
    outcomes = [a.outcome for a in agent.permission_answers]
    assert [o.option_id for o in outcomes] == ["no-1", "yes-1"]  # type: ignore[union-attr]


async def test_the_default_policy_denies() -> None:
    agent = ScriptedAgent(ask_bare)
    async with connect(agent) as conn:
        session = await conn.new_session()
        await session.prompt("go")
    assert {a.outcome.option_id for a in agent.permission_answers} == {"no-1"}  # type: ignore[union-attr]


async def test_selecting_an_option_not_offered_answers_cancelled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def wrong(ctx: PermissionContext) -> PermissionDecision:
        return Select("made-up")

    agent = ScriptedAgent(ask_bare)
    with caplog.at_level(logging.WARNING, logger="accord.client"):
        async with connect(agent, permission_policy=AskCallback(wrong)) as conn:
            session = await conn.new_session()
            await session.prompt("go")
    assert {a.outcome.outcome for a in agent.permission_answers} == {"cancelled"}
    assert "made-up" in caplog.text


async def test_a_permission_request_for_an_unknown_session_is_refused() -> None:
    agent = ScriptedAgent()
    async with connect(agent, permission_policy=AllowAll()):
        with pytest.raises(ResourceNotFound), anyio.fail_after(TIMEOUT):
            await agent.ask("no-such-session", "t1")


async def test_a_policy_that_fails_answers_the_agent_with_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(ctx: PermissionContext) -> PermissionDecision:
        raise RuntimeError("policy bug")

    errors: list[str] = []

    async def turn(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
        try:
            await agent.ask(request.session_id, "t1")
        except Exception as exc:
            errors.append(type(exc).__name__)
        return "end_turn"

    with caplog.at_level(logging.ERROR):
        async with connect(ScriptedAgent(turn), permission_policy=AskCallback(broken)) as conn:
            session = await conn.new_session()
            assert conn.statistics().pending_permissions == 0
            await session.prompt("go")
            assert conn.statistics().pending_permissions == 0
    assert errors == ["InternalError"]
    assert "policy bug" in caplog.text

"""Permissions: tool confirmations become requests; "always" answers are remembered."""

from __future__ import annotations

import pytest
from _agent_support import CWD, RecordingClient, scripted, serve

from accord.agent import DEFAULT_PERMISSION_OPTIONS, permission_key
from accord.errors import RequestError
from accord.schema import (
    DiffToolCallContent,
    ForkSessionRequest,
    LoadSessionRequest,
    PermissionOption,
    ResumeSessionRequest,
    ToolCallLocation,
)
from accord.store import SessionStore
from accord.testing import Say, UseTool

pytestmark = pytest.mark.anyio


def _tool(**fields: object) -> UseTool:
    base: dict[str, object] = {"title": "Edit main.py", "kind": "edit", "ask": True}
    base.update(fields)
    return UseTool(**base)  # type: ignore[arg-type]


async def test_a_confirmation_becomes_a_request_with_the_tool_call_and_four_options() -> None:
    client = RecordingClient(answers=["allow_once"])
    engine = scripted([_tool(tool_call_id="t1"), Say("done")])
    async with serve(engine, client=client) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        [request] = client.permission_requests
        assert request.session_id == session_id
        assert request.tool_call.to_wire() == {
            "toolCallId": "t1",
            "title": "Edit main.py",
            "kind": "edit",
        }
        assert sorted(o.kind for o in request.options) == [
            "allow_always",
            "allow_once",
            "reject_always",
            "reject_once",
        ]
        assert list(request.options) == list(DEFAULT_PERMISSION_OPTIONS)
        # the client already had the tool call when it was asked
        assert any(u.get("toolCallId") == "t1" for u in client.seen_at_request[0])
        assert engine.tool_runs == ["t1"]
        statuses = [u.get("status") for u in client.updates(session_id) if u.get("toolCallId")]
        assert statuses == ["pending", "in_progress", "completed"]


async def test_the_request_carries_the_call_s_locations_and_content_the_engine_left_out() -> None:
    # An editor renders the request before anything else: it gets the whole call, even when
    # the engine asks with the id alone.
    where = ToolCallLocation(path="/work/main.py", line=3)
    diff = DiffToolCallContent(path="/work/main.py", old_text="a\nb\nc\n", new_text="a\nb\nC\n")
    client = RecordingClient(answers=["allow_once"])
    engine = scripted([_tool(tool_call_id="t1", locations=(where,), content=(diff,)), Say("ok")])
    async with serve(engine, client=client) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        [request] = client.permission_requests
        assert request.tool_call.to_wire() == {
            "toolCallId": "t1",
            "title": "Edit main.py",
            "kind": "edit",
            "locations": [{"path": "/work/main.py", "line": 3}],
            "content": [diff.to_wire()],
        }


@pytest.mark.parametrize("answer", ["reject_once", "cancelled"])
async def test_a_denied_or_cancelled_request_means_the_tool_never_runs(answer: str) -> None:
    client = RecordingClient(answers=[answer])
    engine = scripted([_tool(tool_call_id="t1"), Say("after")])
    async with serve(engine, client=client) as h:
        session_id = await h.new_session()
        assert (await h.prompt(session_id)).stop_reason == "end_turn"
        assert engine.tool_runs == []
        assert [d.outcome for d in engine.decisions] == [answer]
        statuses = [u.get("status") for u in client.updates(session_id) if u.get("toolCallId")]
        assert statuses == ["pending", "failed"]


async def test_engine_options_are_sent_as_given() -> None:
    options = (
        PermissionOption(option_id="go", name="Go ahead", kind="allow_once"),
        PermissionOption(option_id="stop", name="Stop", kind="reject_once"),
    )
    client = RecordingClient(answers=["reject_once"])
    async with serve(scripted([_tool(options=options)]), client=client) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        assert list(client.permission_requests[0].options) == list(options)
        assert h.engine.decisions[0].option_id == "stop"


@pytest.mark.parametrize("rule", ["allow_always", "reject_always"])
async def test_always_answers_are_remembered_for_the_session(rule: str) -> None:
    client = RecordingClient(answers=[rule])
    engine = scripted([_tool(name="edit_file")], [_tool(name="edit_file", title="Edit b.py")])
    async with serve(engine, client=client) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        await h.prompt(session_id)
        assert len(client.permission_requests) == 1
        assert [d.outcome for d in engine.decisions] == [rule, rule]
        assert [d.option_id for d in engine.decisions] == [rule, rule]
        assert len(engine.tool_runs) == (2 if rule == "allow_always" else 0)


async def test_without_a_name_the_key_is_kind_and_title() -> None:
    client = RecordingClient(answers=["allow_always", "allow_once"])
    engine = scripted(
        [_tool(title="Run tests", kind="execute")],
        [_tool(title="Run tests", kind="execute")],  # same kind and title: remembered
        [_tool(title="Run tests", kind="delete")],  # another kind: asked
    )
    async with serve(engine, client=client) as h:
        session_id = await h.new_session()
        for _ in range(3):
            await h.prompt(session_id)
        assert len(client.permission_requests) == 2
        assert len(engine.tool_runs) == 3


def test_permission_keys() -> None:
    assert permission_key(name="read_file", kind="read", title="a") == permission_key(
        name="read_file", kind="edit", title="b"
    )
    assert permission_key(name=None, kind="edit", title="a") != permission_key(
        name=None, kind="edit", title="b"
    )
    assert permission_key(name=None, kind="edit", title="a") != permission_key(
        name=None, kind="read", title="a"
    )


@pytest.mark.parametrize("method", ["load", "resume", "fork"])
async def test_remembered_answers_are_persisted(store: SessionStore, method: str) -> None:
    client = RecordingClient(answers=["allow_always"])
    async with serve(scripted([_tool(name="edit_file")]), client=client, store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
    client = RecordingClient(answers=["reject_once"])
    engine = scripted([_tool(name="edit_file")])
    async with serve(engine, client=client, store=store) as h:
        if method == "load":
            await h.conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
            target = session_id
        elif method == "resume":
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
            target = session_id
        else:
            target = (
                await h.conn.fork_session(ForkSessionRequest(session_id=session_id, cwd=CWD))
            ).session_id
        await h.prompt(target)
        assert client.permission_requests == []
        assert [d.outcome for d in engine.decisions] == ["allow_always"]
        assert len(engine.tool_runs) == 1


async def test_options_with_a_repeated_id_are_never_sent() -> None:
    """An ambiguous question (two options, one id) is the engine's bug: refused before asking."""
    options = (
        PermissionOption(option_id="x", name="Deny", kind="reject_once"),
        PermissionOption(option_id="x", name="Allow always", kind="allow_always"),
    )
    client = RecordingClient(answers=["allow_always"])
    async with serve(scripted([_tool(options=options)]), client=client) as h:
        session_id = await h.new_session()
        with pytest.raises(RequestError, match="distinct option ids"):
            await h.prompt(session_id)
        assert client.permission_requests == []
        assert h.engine.tool_runs == []

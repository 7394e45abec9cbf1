"""The coder against a hostile model and a project full of traps (accord.testing's kit).

Every attack of the catalogue runs through the real tools (pydantic-ai and the OpenAI provider
against the fake server), in each mode: the secret outside the project never reaches the
model, no call hangs or reads without bound, and every call gets an answer the model can read.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from _coder_support import Turn, check_rules, engine_on, opened, root, system_text
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.client import TextDelta, TurnFinished, TurnStream, connect
from accord.coder import CoderConfig, CoderRuntime
from accord.coder._prompt import read_project_notes
from accord.engines import ToolCallEnded, TurnOutput
from accord.schema import TextContentBlock
from accord.store import MemorySessionStore
from accord.testing import (
    BACKTRACKING_PATTERN,
    FakeOpenAIServer,
    HostileCall,
    HostileModel,
    HostileWorkspace,
    ScriptedReply,
    ScriptedToolCall,
    hostile_calls,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace(tmp_path: Path) -> HostileWorkspace:
    return HostileWorkspace.create(tmp_path)


async def attack(
    workspace: HostileWorkspace, calls: tuple[HostileCall, ...], mode: str
) -> tuple[HostileModel, FakeOpenAIServer]:
    """Run one turn of the coder in ``mode`` whose model makes every call of ``calls``."""
    model = HostileModel(calls)
    with FakeOpenAIServer(model) as server:
        async with opened(engine_on(server), str(workspace.project), mode_id=mode) as session:
            turn = Turn(answers=["allow_once"] * len(calls), mode_id=mode)
            outputs: list[TurnOutput] = []
            prompt = [TextContentBlock(text="attack")]
            with anyio.fail_after(SCENARIO_TIMEOUT):  # some 30 attacks, each a model round trip
                async for output in session.run_turn(prompt, turn.context):
                    outputs.append(output)
    check_rules(outputs)
    assert all(e.status in ("completed", "failed") for e in root(outputs, ToolCallEnded))
    return model, server


def no_leak(workspace: HostileWorkspace, server: FakeOpenAIServer) -> None:
    for request in server.requests:
        assert not workspace.leaks(json.dumps(request.body)), request.index


@pytest.mark.parametrize("mode", ["ask", "code", "auto"])
async def test_no_attack_leaks_hangs_or_crashes_in_any_mode(
    workspace: HostileWorkspace, mode: str
) -> None:
    calls = hostile_calls(workspace)
    if mode == "ask":
        calls = tuple(c for c in calls if not c.mutating)
    model, server = await attack(workspace, calls, mode)
    assert model.finished, [a.call.name for a in model.answers]
    no_leak(workspace, server)
    assert not (workspace.outside / "planted.txt").exists()
    assert (workspace.outside / "secret.txt").read_text() == f"{workspace.secret}\n"
    assert (workspace.outside / "nested.txt").read_text() == f"nested {workspace.secret}\n"
    says_why(model, mutating=mode != "ask")


def says_why(model: HostileModel, *, mutating: bool) -> None:
    """Each refusal tells the model what was wrong."""
    answer = model.answer
    for name in ("read-dotdot", "read-absolute", "read-link-out", "read-through-dir-link"):
        assert "outside the workspace" in answer(name), name
    assert "outside the workspace" in answer("read-dev-zero")
    assert "named pipe (FIFO)" in answer("read-fifo")
    assert "named pipe (FIFO)" in answer("grep-fifo")
    assert "more than the" in answer("read-huge") and "grep" in answer("read-huge")
    assert "NUL" in answer("read-nul")
    assert "outside the workspace" in answer("grep-outside")
    everything = answer("grep-everything")
    assert "skipped 3 link(s) leading out of the workspace" in everything
    assert "1 special file(s)" in everything and "1 file(s) over 2 MiB" in everything
    assert "no matches" in answer("grep-backtracking")
    assert "RE2" in answer("grep-backreference")
    assert "at most 10,000" in answer("grep-enormous-pattern")
    assert "no matches" in answer("grep-many-globstars")
    found = answer("find-everything")
    assert "src/app.py" in found and "secret-link.txt" not in found and "loop/" not in found
    assert "outside the workspace" in answer("list-outside")
    assert "Invalid JSON" in answer("invalid-json") or "invalid" in answer("invalid-json")
    assert "valid string" in answer("wrong-types")
    assert "delete_everything" in answer("unknown-tool")
    if not mutating:
        return
    assert "outside the workspace" in answer("write-outside")
    assert "outside the workspace" in answer("write-through-link")
    assert "named pipe (FIFO)" in answer("write-fifo")
    assert "outside the workspace" in answer("edit-through-dir-link")
    assert "outside the workspace" in answer("command-cwd-outside")
    assert "NUL" in answer("command-nul")
    huge = answer("command-huge-output")
    assert "earlier bytes of output dropped" in huge and len(huge) < 70_000


@pytest.mark.parametrize("kind", ["link-out", "fifo", "zero"])
async def test_project_notes_that_are_traps_are_refused_and_logged(
    workspace: HostileWorkspace, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    workspace.plant_notes(kind)
    with caplog.at_level(logging.WARNING, "accord.coder"):
        with anyio.fail_after(TIMEOUT):
            notes = await anyio.to_thread.run_sync(read_project_notes, str(workspace.project))
    assert notes is None
    assert "AGENTS.md" in caplog.text and "not used in the system prompt" in caplog.text


def _prompted(body: dict[str, Any], word: str) -> bool:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return bool(users) and word in json.dumps(users[0].get("content"))


def _answered(body: dict[str, Any]) -> bool:
    return any(m.get("role") == "tool" for m in body.get("messages", []))


async def first_text(stream: TurnStream) -> None:
    """Wait until the turn streams text (the model is answering)."""
    async for event in stream:
        if isinstance(event, TextDelta):
            return
    raise AssertionError("the turn ended without text")


async def test_a_backtracking_pattern_stalls_no_other_session_nor_cancel(
    workspace: HostileWorkspace,
) -> None:
    chunks = [f"{n} " for n in range(40)]

    def reply(body: dict[str, Any]) -> ScriptedReply:
        if _prompted(body, "stream"):
            return ScriptedReply(text=chunks, delay=0.02)
        if _prompted(body, "wait"):
            return ScriptedReply(text=["thinking"], hang_after=1, hang_timeout=30)
        if _answered(body):
            return ScriptedReply(text=["searched"])
        grep = {"pattern": BACKTRACKING_PATTERN, "path": "backtrack.txt"}
        return ScriptedReply(tool_calls=[ScriptedToolCall(name="grep", arguments=grep)])

    with FakeOpenAIServer(reply) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=workspace.project) as connection:
                streamer = await connection.new_session(workspace.project)
                waiter = await connection.new_session(workspace.project)
                searcher = await connection.new_session(workspace.project)
                with anyio.fail_after(TIMEOUT):
                    streaming = streamer.stream("stream")
                    waiting = waiter.stream("wait")
                    await first_text(streaming)
                    await first_text(waiting)
                    searched = await searcher.prompt("search")
                    await waiter.cancel()
                    waited = [event async for event in waiting]
                    streamed = [event async for event in streaming]
        finally:
            await runtime.aclose()
    assert searched.stop_reason == "end_turn" and searched.text == "searched"
    (grep,) = searched.tool_calls
    assert grep.status == "completed"
    assert isinstance(waited[-1], TurnFinished) and waited[-1].stop_reason == "cancelled"
    assert isinstance(streamed[-1], TurnFinished) and streamed[-1].stop_reason == "end_turn"
    assert streamer.view.messages[-1].text == "".join(chunks)


async def test_an_agents_md_fifo_does_not_hang_session_new(workspace: HostileWorkspace) -> None:
    workspace.plant_notes("fifo")
    with FakeOpenAIServer([ScriptedReply(text=["hi"])]) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=workspace.project) as connection:
                with anyio.fail_after(TIMEOUT):
                    session = await connection.new_session(workspace.project)
                    assert (await session.prompt("hello")).text == "hi"
        finally:
            await runtime.aclose()
    assert "Project instructions" not in system_text(server.requests[0])

"""Context compaction in the coder over ACP: automatic at the window's share, ``/compact``.

A compaction replaces the older turns, in what the model sees, by a summary the model wrote
(one request marked ``x-accord-purpose: compact``); the transcript stays whole: ``session/load``
replays every turn plus the marker, and load, fork and resume continue from the compacted
history. A failed summary leaves the history as it was and says so. Stores: SQLite on a file
and PostgreSQL on a real server.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.stores import open_store

from accord.client import (
    CompactionState,
    CompactionSummaryDelta,
    CompactionUpdated,
    Message,
    SessionView,
    TextDelta,
    connect,
)
from accord.coder import CoderConfig, CoderRuntime
from accord.engines import MODEL_PURPOSE_HEADER
from accord.events import COMPACTED_MARKER
from accord.schema import SessionNotification
from accord.store import MemorySessionStore, SessionStore, SqliteSessionStore
from accord.testing import (
    FakeOpenAIServer,
    RecordedRequest,
    ScriptedError,
    ScriptedReply,
    ScriptedUsage,
)

pytestmark = pytest.mark.anyio

SUMMARY = "SUMMARY-OF-THE-EARLY-TURNS"


def reply(text: str, prompt_tokens: int) -> ScriptedReply:
    return ScriptedReply(
        text=[text], usage=ScriptedUsage(prompt_tokens=prompt_tokens, completion_tokens=20)
    )


def body(request: RecordedRequest) -> str:
    return orjson.dumps(request.body).decode()


def compactions(server: FakeOpenAIServer) -> list[RecordedRequest]:
    """The summary requests the server received (not the titles)."""
    return [r for r in server.side_requests if r.headers.get(MODEL_PURPOSE_HEADER) == "compact"]


def config(server: FakeOpenAIServer, window: int, **fields: Any) -> CoderConfig:
    return CoderConfig(
        models=("qwen-local",), base_url=server.base_url, context_window=window, **fields
    )


def agent_texts(messages: Sequence[Any]) -> list[str]:
    return [m.text for m in messages if m.role == "agent"]


def user_texts(messages: Sequence[Any]) -> list[str]:
    return [m.text for m in messages if m.role == "user"]


def compaction_kinds(kinds: list[str]) -> Callable[[SessionNotification], None]:
    """An update listener noting the compaction updates received (their wire tags)."""

    def listen(notification: SessionNotification) -> None:
        tag = notification.update.session_update
        if tag.startswith("compaction"):
            kinds.append(tag)

    return listen


def shape(view: SessionView) -> list[str]:
    """The timeline as kinds and texts: what a replay must reproduce."""
    shown: list[str] = []
    for item in view.timeline:
        if isinstance(item, CompactionState):
            shown.append(f"compaction {item.status}: {item.summary_text or item.error}")
        elif isinstance(item, Message):
            shown.append(f"{item.role}: {item.text}")
        else:
            shown.append(f"tool {item.tool_call_id}")
    return shown


@pytest.mark.parametrize("advertised", [False, True], ids=["marker", "updates"])
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_compaction_is_replayed_on_load_and_load_fork_resume_continue_from_it(
    kind: str, advertised: bool, project: Path, tmp_path: Path
) -> None:
    # The third answer leaves 3,020 tokens in a 3,000-token window: the fourth prompt compacts.
    # A client that advertised session.compaction gets the compaction's updates (live and
    # replayed), any other the marker message; every message on the wire is schema-checked.
    script = [
        reply("one", 100),
        reply("two", 200),
        reply("three", 3000),
        reply("four", 900),
        reply("after load", 900),
        reply("in the fork", 900),
        reply("after resume", 900),
    ]
    side = {"compact": [ScriptedReply(text=[SUMMARY])]}
    kinds: list[str] = []
    options: dict[str, Any] = {"compaction": advertised, "update_listener": compaction_kinds(kinds)}
    async with open_store(kind, tmp_path) as store:
        with FakeOpenAIServer(script, models=("qwen-local",), side_scripts=side) as server:
            settings = config(server, 3000)
            first = CoderRuntime(settings, store=store)
            try:
                async with connect(first, cwd=project, **options) as connection:
                    session = await connection.new_session(project)
                    for prompt in ("first", "second", "third"):
                        await session.prompt(prompt)
                    events = [event async for event in session.stream("fourth")]
                    live = shape(session.view)
                    live_compactions = list(session.view.compactions.values())
            finally:
                await first.aclose()
            text = "".join(e.text for e in events if isinstance(e, TextDelta))
            assert text.endswith("four")
            if advertised:
                assert COMPACTED_MARKER not in text
                update, chunk = "compaction_update", "compaction_summary_chunk"
                assert kinds == [update, chunk, update]
                assert [
                    (e.kind, getattr(e, "text", None))
                    for e in events
                    if isinstance(e, CompactionUpdated | CompactionSummaryDelta)
                ] == [("compaction", None), ("compaction_summary", SUMMARY), ("compaction", None)]
                [done] = live_compactions
                assert (done.status, done.summary_text, done.error) == ("completed", SUMMARY, None)
                assert live[-2:] == [f"compaction completed: {SUMMARY}", "agent: four"]
            else:
                assert kinds == []
                assert COMPACTED_MARKER in agent_texts(session.view.messages)
                assert live_compactions == []
            session_id = session.session_id
            [compact] = compactions(server)
            # The summary request holds the older turns (first and its answer), not the kept.
            assert "first" in body(compact) and "one" in body(compact)
            fourth = server.requests[3]
            assert SUMMARY in body(fourth)
            assert '"first"' not in body(fourth) and '"one"' not in body(fourth)
            assert "second" in body(fourth) and "third" in body(fourth)

            second = CoderRuntime(settings, store=store)
            try:
                async with connect(second, cwd=project, **options) as connection:
                    kinds.clear()
                    loaded = await connection.load_session(session_id, project)
                    # The replay is the conversation as it was, with the marker.
                    assert user_texts(loaded.view.messages) == [
                        "first",
                        "second",
                        "third",
                        "fourth",
                    ]
                    expected = ["one", "two", "three", "four"]
                    if not advertised:
                        expected.insert(3, COMPACTED_MARKER)
                    assert agent_texts(loaded.view.messages) == expected
                    # Replayed identically: the same timeline, the same compaction.
                    assert shape(loaded.view) == live
                    assert list(loaded.view.compactions.values()) == live_compactions
                    assert len(kinds) == (3 if advertised else 0)
                    await loaded.prompt("after load")
                    forked = await connection.fork_session(session_id, project)
                    await forked.prompt("in the fork")
            finally:
                await second.aclose()
            third = CoderRuntime(settings, store=store)
            try:
                async with connect(third, cwd=project, **options) as connection:
                    resumed = await connection.resume_session(session_id, project)
                    await resumed.prompt("after resume")
            finally:
                await third.aclose()
        requests = server.requests
    for request in requests[4:]:
        assert SUMMARY in body(request)
        assert '"first"' not in body(request)
        assert "third" in body(request) and "fourth" in body(request)
    assert "after load" in body(requests[6])  # resume continues the loaded session's turns


@pytest.mark.parametrize("advertised", [False, True], ids=["marker", "updates"])
async def test_compact_with_an_instruction_sends_it_and_the_model_sees_the_summary(
    advertised: bool, project: Path
) -> None:
    script = [reply("one", 100), reply("two", 100), reply("three", 100), reply("four", 100)]
    side = {"compact": [ScriptedReply(text=[SUMMARY])]}
    with FakeOpenAIServer(script, models=("qwen-local",), side_scripts=side) as server:
        runtime = CoderRuntime(config(server, 100_000), store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project, compaction=advertised) as connection:
                session = await connection.new_session(project)
                for prompt in ("first", "second", "third"):
                    await session.prompt(prompt)
                result = await session.prompt("/compact keep the file names")
                if advertised:
                    assert result.text == ""
                    [done] = session.view.compactions.values()
                    assert (done.status, done.summary_text) == ("completed", SUMMARY)
                else:
                    assert result.text == COMPACTED_MARKER
                    assert session.view.compactions == {}
                await session.prompt("fourth")
        finally:
            await runtime.aclose()
    [compact] = compactions(server)
    assert "keep the file names" in body(compact)
    assert len(server.requests) == 4  # /compact is no model turn
    last = body(server.requests[-1])
    assert SUMMARY in last and '"first"' not in last and "third" in last


@pytest.mark.parametrize("advertised", [False, True], ids=["marker", "updates"])
async def test_a_failed_summary_leaves_the_history_as_it_was_and_says_so(
    advertised: bool, project: Path, tmp_path: Path
) -> None:
    script = [reply("one", 100), reply("two", 100), reply("three", 100), reply("four", 100)]
    refused = ScriptedError(status=400, message="the summariser is down")
    side = {"compact": [ScriptedReply(error=refused)]}
    async with SqliteSessionStore(tmp_path / "sessions.sqlite3") as store:
        with FakeOpenAIServer(script, models=("qwen-local",), side_scripts=side) as server:
            settings = config(server, 100_000)
            runtime = CoderRuntime(settings, store=store)
            try:
                async with connect(runtime, cwd=project, compaction=advertised) as connection:
                    session = await connection.new_session(project)
                    for prompt in ("first", "second", "third"):
                        await session.prompt(prompt)
                    stream = session.stream("/compact")
                    events = [event async for event in stream]
                    result = stream.result
                    live = list(session.view.compactions.values())
            finally:
                await runtime.aclose()
            assert result is not None
            if advertised:
                assert result.text == ""
                statuses = [e.compaction.status for e in events if isinstance(e, CompactionUpdated)]
                assert statuses == ["in_progress", "failed"]
                [failed] = live
                assert failed.summary == () and "the summariser is down" in (failed.error or "")
            else:
                assert "failed" in result.text and "kept as it was" in result.text
                assert "the summariser is down" in result.text
                assert live == []
            again = CoderRuntime(settings, store=store)
            try:
                async with connect(again, cwd=project, compaction=advertised) as connection:
                    loaded = await connection.load_session(session.session_id, project)
                    assert list(loaded.view.compactions.values()) == live
                    if not advertised:
                        assert any("failed" in t for t in agent_texts(loaded.view.messages))
                    await loaded.prompt("fourth")
            finally:
                await again.aclose()
    last = body(server.requests[-1])
    assert all(said in last for said in ('"first"', '"one"', "second", "third", "fourth"))


@pytest.mark.parametrize("advertised", [False, True], ids=["marker", "updates"])
async def test_compact_with_nothing_to_summarise_says_so(advertised: bool, project: Path) -> None:
    with FakeOpenAIServer([reply("one", 100)], models=("qwen-local",)) as server:
        runtime = CoderRuntime(config(server, 100_000), store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project, compaction=advertised) as connection:
                session = await connection.new_session(project)
                await session.prompt("first")
                result = await session.prompt("/compact")
                said = list(session.view.compactions.values())
        finally:
            await runtime.aclose()
    if advertised:
        [failed] = said
        assert failed.status == "failed"
        assert "no earlier turns to summarise" in (failed.error or "")
    else:
        assert "no earlier turns to summarise" in result.text
    assert compactions(server) == []


def test_a_compact_share_out_of_range_is_refused() -> None:
    for share in (0, 1.5, -0.1, True):
        with pytest.raises(ValueError, match="compact_share"):
            CoderConfig(models=("m",), compact_share=share)


def _tokens(request_body: dict[str, Any]) -> int:
    """The fake server's own estimate of a request's prompt (characters / 4)."""
    return math.ceil(len(json.dumps(request_body.get("messages", []))) / 4)


WINDOW = 9000
"""The scripted model's window in the long conversation (tokens, as the fake counts them)."""


def _refusing_model(request_body: dict[str, Any]) -> ScriptedReply:
    """A model that refuses, as real servers do, any request over its window."""
    used = _tokens(request_body)
    if used > WINDOW:
        return ScriptedReply(
            error=ScriptedError(
                status=400,
                message=f"context length exceeded: {used} > {WINDOW}",
                code="context_length_exceeded",
            )
        )
    return ScriptedReply(text=["noted; " + "answer " * 60])


async def _long_conversation(store: SessionStore, project: Path, turns: int) -> str:
    side = {"compact": [ScriptedReply(text=[f"{SUMMARY} " * 20]) for _ in range(turns)]}
    with FakeOpenAIServer(_refusing_model, models=("qwen-local",), side_scripts=side) as server:
        runtime = CoderRuntime(config(server, WINDOW), store=store)
        try:
            async with connect(runtime, cwd=project, compaction=False) as connection:
                session = await connection.new_session(project)
                for number in range(turns):
                    result = await session.prompt(f"turn {number}: " + "words " * 60)
                    assert result.stop_reason == "end_turn", number
        finally:
            await runtime.aclose()
        assert all(r.outcome == "completed" for r in server.requests)
        summaries = compactions(server)
        assert max(_tokens(r.body) for r in (*server.requests, *summaries)) <= WINDOW
        assert len(summaries) >= 5  # it compacted, again and again (9 times at this size)
    return session.session_id


async def test_without_compaction_the_same_conversation_is_refused(project: Path) -> None:
    with FakeOpenAIServer(_refusing_model, models=("qwen-local",)) as server:
        runtime = CoderRuntime(
            config(server, WINDOW, compact_share=None), store=MemorySessionStore()
        )
        refusal: Exception | None = None
        try:
            async with connect(runtime, cwd=project) as connection:
                session = await connection.new_session(project)
                for number in range(100):
                    try:
                        await session.prompt(f"turn {number}: " + "words " * 60)
                    except Exception as error:  # the model's refusal fails the turn
                        refusal = error
                        break
        finally:
            await runtime.aclose()
    assert "context length exceeded" in str(refusal)
    assert compactions(server) == []


async def test_a_300_turn_conversation_stays_under_the_window_and_load_replays_every_turn(
    project: Path, tmp_path: Path
) -> None:
    turns = 300
    async with SqliteSessionStore(tmp_path / "sessions.sqlite3") as store:
        session_id = await _long_conversation(store, project, turns)
        with FakeOpenAIServer([], models=("qwen-local",)) as server:
            runtime = CoderRuntime(config(server, WINDOW), store=store)
            try:
                async with connect(runtime, cwd=project, compaction=False) as connection:
                    loaded = await connection.load_session(session_id, project)
                    prompts = user_texts(loaded.view.messages)
                    answers = agent_texts(loaded.view.messages)
            finally:
                await runtime.aclose()
    assert [p.split(":")[0] for p in prompts] == [f"turn {n}" for n in range(turns)]
    assert sum(1 for a in answers if a.startswith("noted; ")) == turns
    assert answers.count(COMPACTED_MARKER) >= 5

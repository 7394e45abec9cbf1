"""Session methods over both stores: new, load, resume, fork, close, delete, list."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from _agent_support import CWD, FULL, Harness, message_texts, scripted, serve
from helpers.fold import fold
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.engines import EngineCapabilities, SessionContext, ToolCallEnded, ToolCallStarted
from accord.errors import AuthRequired, RequestError
from accord.events import event_from_json, stamp
from accord.schema import (
    CloseSessionRequest,
    DeleteSessionRequest,
    ForkSessionRequest,
    HttpMcpServer,
    ListSessionsRequest,
    LoadSessionRequest,
    McpServerStdio,
    PlanEntry,
    ResumeSessionRequest,
    SetSessionConfigOptionRequest,
    SetSessionModeRequest,
)
from accord.store import SessionRecord, SessionStore, SqliteSessionStore
from accord.testing import (
    Say,
    ScriptedEngine,
    ScriptedSession,
    SetPlan,
    SetTitle,
    Stream,
    Think,
    UseTool,
    WaitFor,
    WaitForCancel,
)

pytestmark = pytest.mark.anyio

MCP = [
    McpServerStdio(name="files", command="/usr/bin/mcp-files", args=["--root", "/w"], env=[]),
    HttpMcpServer(name="web", url="https://mcp.example/web", headers=[]),
]


def _is_announcement(update: dict[str, Any]) -> bool:
    """Activation updates (commands, and the title with ``updatedAt``), not events."""
    tag = update["sessionUpdate"]
    return tag == "available_commands_update" or (
        tag == "session_info_update" and "updatedAt" in update
    )


def _transcript(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if not _is_announcement(u)]


async def _load(h: Harness, session_id: str, cwd: str = CWD, **fields: Any) -> Any:
    request = LoadSessionRequest.model_validate(
        {"sessionId": session_id, "cwd": cwd, "mcpServers": [], **fields}
    )
    seen = h.client.announcements(session_id)
    with anyio.fail_after(TIMEOUT):
        response = await h.conn.load_session(request)
    await h.announced(session_id, response.meta, seen)
    return response


async def _resume(h: Harness, session_id: str, cwd: str = CWD) -> Any:
    seen = h.client.announcements(session_id)
    with anyio.fail_after(TIMEOUT):
        response = await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=cwd))
    await h.announced(session_id, response.meta, seen)
    return response


def _rich_turns() -> list[list[Any]]:
    plan = (PlanEntry(content="look", priority="high", status="completed"),)
    return [
        [
            Think(pieces=("let me ", "think")),
            Say(pieces=("Hel", "lo ", "there")),
            UseTool(title="Read a.py", kind="read", tool_call_id="t1", result="code"),
            SetPlan(plan),
            SetTitle("Greeting"),
            Stream(count=50),
        ],
        [Say("second turn")],
    ]


# --------------------------------------------------------------------------- new


async def test_new_session_records_cwd_directories_and_mcp_servers(store: SessionStore) -> None:
    engine = ScriptedEngine(capabilities=EngineCapabilities(mcp_http=True))
    async with serve(engine, store=store) as h:
        session_id = await h.new_session(
            additionalDirectories=["/work/lib"], mcpServers=[s.to_wire() for s in MCP]
        )
        record = await store.get_session(session_id)
        assert record is not None
        assert record.cwd == CWD
        assert record.additional_directories == ("/work/lib",)
        assert list(record.mcp_servers) == [s.to_wire() for s in MCP]
        context = engine.session(session_id).context
        assert context.additional_directories == ("/work/lib",)
        assert context.mcp_servers == tuple(MCP)
        assert context.history is None


def _bad_cwd(tmp_path: Path, problem: str) -> tuple[str, str]:
    """A ``cwd`` with ``problem``, and the words the refusal must use for it."""
    if problem == "missing":
        return str(tmp_path / "gone"), "does not exist"
    if problem == "file":
        (tmp_path / "file.txt").write_text("not a directory")
        return str(tmp_path / "file.txt"), "is not a directory"
    if problem == "under-a-file":
        (tmp_path / "file.txt").write_text("not a directory")
        return str(tmp_path / "file.txt" / "sub"), "a component of it is not a directory"
    if problem == "relative":
        return "relative/dir", "is not an absolute path"
    assert problem == "nul"
    return str(tmp_path) + "\0x", "contains a NUL character"


BAD_CWDS = ["missing", "file", "under-a-file", "relative", "nul"]


@pytest.mark.parametrize("problem", BAD_CWDS)
async def test_new_session_refuses_a_cwd_that_is_not_an_existing_directory(
    store: SessionStore, tmp_path: Path, problem: str
) -> None:
    cwd, words = _bad_cwd(tmp_path, problem)
    async with serve(store=store) as h:
        with pytest.raises(RequestError) as caught:
            await h.new_session(cwd=cwd)
        assert caught.value.code == -32602
        assert words in caught.value.message and repr(cwd) in caught.value.message
        [error] = caught.value.data["errors"]
        assert error["field"] == "cwd" and error["value"] == cwd and words in error["problem"]
        assert not (await store.list_sessions()).sessions  # nothing stored


@pytest.mark.parametrize("method", ["load", "resume", "fork"])
@pytest.mark.parametrize("problem", BAD_CWDS)
async def test_load_resume_and_fork_refuse_a_cwd_that_is_not_an_existing_directory(
    store: SessionStore, tmp_path: Path, problem: str, method: str
) -> None:
    cwd, words = _bad_cwd(tmp_path, problem)
    session_id = "stored"
    now = datetime.now(UTC)
    # Stored with that cwd (by an older accord, or its directory has gone since); PostgreSQL
    # cannot store a NUL in text, so that one is stored with a sound cwd and asked with the bad.
    stored = cwd if method != "fork" and problem != "nul" else CWD
    await store.create_session(
        SessionRecord(session_id=session_id, cwd=stored, created_at=now, updated_at=now)
    )
    async with serve(store=store) as h:
        if method == "load":
            attempt = _load(h, session_id, cwd=cwd)
        elif method == "resume":
            attempt = _resume(h, session_id, cwd=cwd)
        else:
            attempt = h.conn.fork_session(ForkSessionRequest(session_id=session_id, cwd=cwd))
        with pytest.raises(RequestError) as caught:
            await attempt
        assert caught.value.code == -32602
        assert words in caught.value.message and repr(cwd) in caught.value.message
        assert len((await store.list_sessions()).sessions) == 1  # no fork stored


@pytest.mark.parametrize("method", ["load", "resume"])
async def test_a_stored_session_whose_cwd_was_removed_is_refused_and_kept(
    store: SessionStore, tmp_path: Path, method: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    engine = scripted([Say("kept")])
    async with serve(engine, store=store) as h:
        session_id = await h.new_session(cwd=str(project))
        await h.prompt(session_id, "remember this")
    before = await store.read_events(session_id)
    project.rmdir()
    restore = _load if method == "load" else _resume
    async with serve(store=store) as h:
        with pytest.raises(RequestError) as caught:
            await restore(h, session_id, cwd=str(project))
        assert caught.value.code == -32602
        assert "does not exist" in caught.value.message
        assert "still stored" in caught.value.message
        assert [
            s.session_id for s in (await h.conn.list_sessions(ListSessionsRequest())).sessions
        ] == [session_id]
    assert await store.read_events(session_id) == before  # the history is untouched
    project.mkdir()
    async with serve(store=store) as h:
        await _load(h, session_id, cwd=str(project))
        assert [t for _, t in message_texts(h.client.updates(session_id))] == [
            "remember this",
            "kept",
        ]


async def test_new_session_refuses_relative_and_nul_additional_directories() -> None:
    async with serve() as h:
        for directory, words in [("lib", "absolute"), ("/work/\0lib", "NUL")]:
            with pytest.raises(RequestError) as caught:
                await h.new_session(additionalDirectories=[directory])
            assert caught.value.code == -32602
            assert words in caught.value.message and "additionalDirectories" in caught.value.message


# --------------------------------------------------------------------------- load


async def test_load_of_an_unknown_session_is_resource_not_found() -> None:
    async with serve() as h:
        with pytest.raises(RequestError) as caught:
            await _load(h, "missing")
        assert caught.value.code == -32002
        assert caught.value.data == {"sessionId": "missing"}


async def test_load_checks_the_stored_cwd(store: SessionStore) -> None:
    async with serve(store=store) as h:
        session_id = await h.new_session()
    async with serve(store=store) as h:
        with pytest.raises(RequestError) as caught:
            await _load(h, session_id, cwd="/somewhere/else")
        assert caught.value.code == -32602
        assert CWD in caught.value.message


async def test_load_replays_the_whole_conversation_before_answering(store: SessionStore) -> None:
    async with serve(scripted(*_rich_turns(), capabilities=FULL), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id, "first")
        await h.conn.set_session_mode(SetSessionModeRequest(session_id=session_id, mode_id="code"))
        await h.conn.set_session_config_option(
            SetSessionConfigOptionRequest(session_id=session_id, config_id="model", value="smart")
        )
        await h.prompt(session_id, "second")
        live = _transcript(h.client.updates(session_id))

    # A new process: new runtime and engine, same store.
    engine = ScriptedEngine(capabilities=FULL)
    async with serve(engine, store=store) as h:
        response = await _load(h, session_id)
        replayed = _transcript(h.client.updates(session_id))
        # Everything arrived before the response (the client saw it all by now): what the
        # client saw live, and the prompts it sent (not echoed to it live), in their place.
        prompts = [u for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"]["text"] for u in prompts] == ["first", "second"]
        assert replayed.index(prompts[0]) == 0
        shown = [u for u in replayed if u["sessionUpdate"] != "user_message_chunk"]
        assert fold(shown) == fold(live)
        assert message_texts(shown) == message_texts(live)

        def order(updates: list[dict[str, Any]]) -> list[str]:
            tags: list[str] = []
            for update in updates:
                if not tags or tags[-1] != update["sessionUpdate"]:
                    tags.append(update["sessionUpdate"])
            return tags

        assert order(shown) == order(live)
        # the prompts in their place: before each turn
        turn_two = order(live).index("config_option_update") + 1
        assert order(replayed) == [
            "user_message_chunk",
            *order(live)[:turn_two],
            "user_message_chunk",
            *order(live)[turn_two:],
        ]
        assert order(live) == [
            "agent_thought_chunk",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "plan",
            "session_info_update",
            "agent_message_chunk",
            "current_mode_update",
            "config_option_update",
            "agent_message_chunk",
        ]
        # Compact: the 53 live message chunks of turn one come back as a few.
        assert len(replayed) < len(live) - 40
        # Chunks keep their message ids.
        live_ids = [u.get("messageId") for u in live if "messageId" in u]
        replay_ids = [u.get("messageId") for u in shown if "messageId" in u]
        assert list(dict.fromkeys(replay_ids)) == list(dict.fromkeys(live_ids))
        # The restored controls come back in the response.
        assert response.modes is not None and response.modes.current_mode_id == "code"
        assert response.config_options is not None
        assert {o.id: o.current_value for o in response.config_options}["model"] == "smart"
        # The engine gets its history back.
        assert engine.session(session_id).context.history == {
            "turns": 2,
            "prompts": ["first", "second"],
        }


async def test_a_loaded_session_goes_on_where_it_stopped(store: SessionStore) -> None:
    async with serve(scripted([Say("one")]), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id, "a")
    engine = scripted([Say("two")])
    async with serve(engine, store=store) as h:
        await _load(h, session_id)
        await h.prompt(session_id, "b")
        assert engine.session(session_id).prompts == ["a", "b"]
        events = await store.read_events(session_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert sorted({e.epoch for e in events}) == [0, 1]
        record = await store.get_session(session_id)
        assert record is not None and record.epoch == 1


async def test_loading_a_live_session_bumps_the_epoch_and_drops_late_events(
    store: SessionStore,
) -> None:
    gate, noticed = anyio.Event(), anyio.Event()
    engine = scripted(
        [Say("before"), WaitFor(gate, cooperative=False, noticed=noticed), Say("late")],
        [Say("after")],
    )
    async with serve(engine, store=store, cancel_grace=TIMEOUT) as h:
        session_id = await h.new_session()
        stops: list[str] = []
        async with anyio.create_task_group() as tg:

            async def prompt() -> None:
                stops.append((await h.prompt(session_id)).stop_reason)

            tg.start_soon(prompt)
            await h.client.wait_until(lambda: "agent_message_chunk" in h.client.kinds())
            tg.start_soon(_load, h, session_id)
            with anyio.fail_after(TIMEOUT):
                await noticed.wait()  # the load bumped the epoch, then cancelled the turn
            gate.set()  # the old turn's engine yields "late" into the old epoch
        assert stops == ["cancelled"]
        texts = [t for _, t in message_texts(h.client.updates(session_id))]
        assert "late" not in texts
        kinds = [event_from_json(e.payload) for e in await store.read_events(session_id)]
        assert not any(getattr(e, "content", None) == "late" for e in kinds)
        assert h.runtime._sessions.live[session_id].pipeline.statistics().stale_dropped >= 1
        await h.prompt(session_id)
        assert message_texts(h.client.updates(session_id))[-1] == ("agent_message_chunk", "after")


async def test_load_ends_tool_calls_a_crash_left_unfinished(store: SessionStore) -> None:
    async with serve(store=store) as h:
        session_id = await h.new_session()
    # What a process that died mid-tool leaves behind: a started call, never ended.
    started = ToolCallStarted(tool_call_id="t1", title="Build", status="in_progress")
    envelope = stamp(
        started, session_id=session_id, seq=1, epoch=0, turn_id="turn-1", agent_id="root"
    )
    await store.append_events([envelope])
    async with serve(store=store) as h:
        await _load(h, session_id)
        t1 = [u for u in h.client.updates(session_id) if u.get("toolCallId") == "t1"]
        assert [u["status"] for u in t1] == ["in_progress", "failed"]
        last = event_from_json((await store.read_events(session_id))[-1].payload)
        assert last == ToolCallEnded(tool_call_id="t1", status="failed")


# --------------------------------------------------------------------------- resume


async def test_resume_restores_without_replay(store: SessionStore) -> None:
    async with serve(scripted([Say("hi"), SetTitle("T")], capabilities=FULL), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id, "remember")
        await h.conn.set_session_mode(SetSessionModeRequest(session_id=session_id, mode_id="plan"))
    engine = scripted([Say("resumed")], capabilities=FULL)
    async with serve(engine, store=store) as h:
        response = await _resume(h, session_id)
        assert _transcript(h.client.updates(session_id)) == []
        info = [
            u for u in h.client.updates(session_id) if u["sessionUpdate"] == "session_info_update"
        ]
        assert info and info[-1]["title"] == "T"
        assert response.modes is not None and response.modes.current_mode_id == "plan"
        assert engine.session(session_id).context.history == {"turns": 1, "prompts": ["remember"]}
        await h.prompt(session_id, "more")
        assert engine.session(session_id).prompts == ["remember", "more"]


async def test_resume_bumps_the_stored_epoch(store: SessionStore) -> None:
    async with serve(scripted([Say("a")]), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
    for expected in (1, 2):
        async with serve(scripted([Say("b")]), store=store) as h:
            await _resume(h, session_id)
            await h.prompt(session_id)
        record = await store.get_session(session_id)
        assert record is not None and record.epoch == expected
    epochs = [e.epoch for e in await store.read_events(session_id)]
    assert epochs == sorted(epochs) and set(epochs) == {0, 1, 2}


async def test_resume_of_an_unknown_session_is_resource_not_found() -> None:
    async with serve() as h:
        with pytest.raises(RequestError) as caught:
            await _resume(h, "missing")
        assert caught.value.code == -32002


# --------------------------------------------------------------------------- fork


async def test_fork_copies_the_history_under_a_new_id_and_leaves_the_source(
    store: SessionStore, tmp_path: Path
) -> None:
    elsewhere = str(tmp_path)
    engine = scripted([Say("original")], [Say("in the fork")])
    async with serve(engine, store=store) as h:
        source = await h.new_session()
        await h.prompt(source, "start")
        before = await store.read_events(source)
        with anyio.fail_after(TIMEOUT):
            forked = await h.conn.fork_session(ForkSessionRequest(session_id=source, cwd=elsewhere))
        fork_id = forked.session_id
        assert fork_id != source
        assert engine.session(fork_id).context.history == {"turns": 1, "prompts": ["start"]}
        await h.prompt(fork_id, "branch")
        assert await store.read_events(source) == before
        fork_record = await store.get_session(fork_id)
        assert fork_record is not None and fork_record.cwd == elsewhere
    async with serve(store=store) as h:
        await _load(h, fork_id, cwd=elsewhere)
        assert [t for _, t in message_texts(h.client.updates(fork_id))] == [
            "start",
            "original",
            "branch",
            "in the fork",
        ]


async def test_fork_of_an_unknown_session_is_resource_not_found() -> None:
    async with serve() as h:
        with pytest.raises(RequestError) as caught:
            await h.conn.fork_session(ForkSessionRequest(session_id="missing", cwd=CWD))
        assert caught.value.code == -32002


# --------------------------------------------------------------------------- close / delete


async def test_close_cancels_the_turn_frees_the_session_and_keeps_the_store(
    store: SessionStore,
) -> None:
    engine = scripted([Say("working"), WaitForCancel()])
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        stops: list[str] = []
        async with anyio.create_task_group() as tg:

            async def prompt() -> None:
                stops.append((await h.prompt(session_id)).stop_reason)

            tg.start_soon(prompt)
            await h.client.wait_until(lambda: "agent_message_chunk" in h.client.kinds())
            assert h.runtime.statistics().running_turns == 1
            with anyio.fail_after(TIMEOUT):
                await h.conn.close_session(CloseSessionRequest(session_id=session_id))
        assert stops == ["cancelled"]
        assert h.runtime.statistics().live_sessions == 0
        assert engine.session(session_id).closed
        assert await store.get_session(session_id) is not None
        assert [e.kind for e in await store.read_events(session_id)][-1] == "turn_completed"
        with pytest.raises(RequestError) as caught:
            await h.prompt(session_id)
        assert caught.value.code == -32002
        # closing again (stored, not live) is fine; an unknown id is not found
        await h.conn.close_session(CloseSessionRequest(session_id=session_id))
        with pytest.raises(RequestError) as caught:
            await h.conn.close_session(CloseSessionRequest(session_id="missing"))
        assert caught.value.code == -32002
        await _load(h, session_id)
        assert h.runtime.statistics().live_sessions == 1


async def test_delete_removes_the_session_and_unknown_ids_succeed(store: SessionStore) -> None:
    async with serve(scripted([Say("x")]), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        await h.conn.delete_session(DeleteSessionRequest(session_id=session_id))
        assert await store.get_session(session_id) is None
        assert await store.read_events(session_id) == []
        assert h.runtime.statistics().live_sessions == 0
        await h.conn.delete_session(DeleteSessionRequest(session_id=session_id))
        await h.conn.delete_session(DeleteSessionRequest(session_id="never-existed"))
        listing = await h.conn.list_sessions(ListSessionsRequest())
        assert listing.sessions == []
        with pytest.raises(RequestError) as caught:
            await _load(h, session_id)
        assert caught.value.code == -32002


async def test_delete_of_a_running_session_cancels_its_turn(store: SessionStore) -> None:
    engine = scripted([Say("working"), WaitForCancel()])
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        stops: list[str] = []
        async with anyio.create_task_group() as tg:

            async def prompt() -> None:
                stops.append((await h.prompt(session_id)).stop_reason)

            tg.start_soon(prompt)
            await h.client.wait_until(lambda: "agent_message_chunk" in h.client.kinds())
            await h.conn.delete_session(DeleteSessionRequest(session_id=session_id))
        assert stops == ["cancelled"]
        assert await store.get_session(session_id) is None


# --------------------------------------------------------------------------- list


async def test_list_pages_with_a_cursor_filters_by_cwd_and_shows_titles(
    store: SessionStore, tmp_path: Path
) -> None:
    engine = ScriptedEngine(respond=lambda text: [SetTitle(f"title {text}")])
    async with serve(engine, store=store, list_page_size=3) as h:
        ids = [await h.new_session() for _ in range(7)]
        other = await h.new_session(cwd=str(tmp_path))
        for session_id in reversed(ids):
            await h.prompt(session_id, "zero" if session_id == ids[0] else "later")
        await h.prompt(other, "elsewhere")
        # Never prompted, and the newest: not history, passed over (more than a page of them).
        unused = [await h.new_session() for _ in range(4)]
        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            page = await h.conn.list_sessions(ListSessionsRequest(cwd=CWD, cursor=cursor))
            pages += 1
            assert len(page.sessions) <= 3
            seen.extend(s.session_id for s in page.sessions)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert pages == 3
        assert sorted(seen) == sorted(ids) and other not in seen
        assert not set(unused) & set(seen)
        assert seen[0] == ids[0]  # the most recently updated first
        first = (await h.conn.list_sessions(ListSessionsRequest(cwd=CWD))).sessions[0]
        assert first.title == "title zero"
        assert first.cwd == CWD
        assert first.updated_at is not None and first.updated_at.endswith("Z")
        datetime.fromisoformat(first.updated_at.replace("Z", "+00:00"))
        everything = await h.conn.list_sessions(ListSessionsRequest())
        assert len(everything.sessions) == 3  # capped page, newest first
        nothing = await h.conn.list_sessions(ListSessionsRequest(cwd="/nowhere"))
        assert nothing.sessions == [] and nothing.next_cursor is None


@pytest.mark.parametrize(
    "request_fields", [{"cursor": "not-a-cursor"}, {"cwd": "relative"}], ids=["cursor", "cwd"]
)
async def test_list_refuses_invalid_params(
    store: SessionStore, request_fields: dict[str, Any]
) -> None:
    async with serve(store=store) as h:
        with pytest.raises(RequestError) as caught:
            await h.conn.list_sessions(ListSessionsRequest(**request_fields))
        assert caught.value.code == -32602


# --------------------------------------------------------------------------- default store


async def test_the_default_store_is_sqlite_in_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    runtime = AgentRuntime(ScriptedEngine(capabilities=EngineCapabilities()))
    assert isinstance(runtime.store, SqliteSessionStore)
    async with serve(runtime=runtime) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
    await runtime.aclose()
    path = runtime.store.path
    assert path is not None and path.is_relative_to(tmp_path) and path.exists()


class _RefusingEngine(ScriptedEngine):
    """Refuses to open sessions while ``refuse`` is set."""

    refuse = False

    async def open_session(self, context: SessionContext) -> ScriptedSession:
        if self.refuse:
            raise AuthRequired("log in first")
        return await super().open_session(context)


async def test_an_engine_that_refuses_a_session_leaves_nothing_behind(
    store: SessionStore,
) -> None:
    engine = _RefusingEngine([[Say("one")], [Say("two")]])
    async with serve(engine, store=store) as h:
        engine.refuse = True
        with pytest.raises(AuthRequired):
            await h.new_session()
        assert (await h.conn.list_sessions(ListSessionsRequest())).sessions == []
        engine.refuse = False
        session_id = await h.new_session()
        await h.prompt(session_id)
        engine.refuse = True
        with pytest.raises(AuthRequired):
            await _load(h, session_id)
        assert h.runtime.statistics().live_sessions == 0
        with pytest.raises(RequestError) as caught:
            await h.prompt(session_id)
        assert caught.value.code == -32002
        engine.refuse = False
        await _load(h, session_id)
        await h.prompt(session_id)
        assert message_texts(h.client.updates(session_id))[-1] == ("agent_message_chunk", "two")

"""The unstable session methods on a session's standing: title, status (over every store)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import orjson
import pytest
from _agent_support import CWD, Harness, scripted, serve
from helpers.timeouts import TIMEOUT

from accord.engines import ROOT_AGENT_ID, TitleChanged
from accord.errors import RequestError
from accord.events import event_to_json
from accord.roles import is_advertised
from accord.schema import (
    ArchiveSessionRequest,
    CancelNotification,
    CloseSessionRequest,
    ListSessionsRequest,
    ResumeSessionRequest,
    SessionStatusRequest,
    SetSessionTitleRequest,
    UnarchiveSessionRequest,
)
from accord.store import SessionStore, StoredEvent
from accord.testing import Say, SetTitle, WaitForCancel

pytestmark = pytest.mark.anyio


def _titles(h: Harness, session_id: str) -> list[str | None]:
    return [
        u.get("title")
        for u in h.client.updates(session_id)
        if u["sessionUpdate"] == "session_info_update" and "title" in u
    ]


async def _set_title(h: Harness, session_id: str, title: str) -> str:
    with anyio.fail_after(TIMEOUT):
        response = await h.conn.set_session_title(
            SetSessionTitleRequest(session_id=session_id, title=title)
        )
    return response.title


async def _status(h: Harness, session_id: str) -> tuple[str, dict[str, Any]]:
    with anyio.fail_after(TIMEOUT):
        response = await h.conn.session_status(SessionStatusRequest(session_id=session_id))
    return response.status, (response.meta or {})["accord"]


def _advertised(h: Harness) -> dict[str, Any]:
    assert h.conn.initialize_response is not None
    return h.conn.initialize_response.agent_capabilities.to_wire()


# --------------------------------------------------------------------------- title


async def test_a_title_set_is_announced_stored_listed_and_kept_across_resume(
    store: SessionStore,
) -> None:
    async with serve(scripted([Say("hi")]), store=store) as h:
        assert is_advertised(_advertised(h), ("sessionCapabilities", "title"))
        session_id = await h.new_session()
        await h.prompt(session_id)
        assert await _set_title(h, session_id, "  Fix the parser \t") == "Fix the parser"
        await h.client.wait_until(lambda: _titles(h, session_id)[-1:] == ["Fix the parser"])
        record = await store.get_session(session_id)
        assert record is not None and record.title == "Fix the parser"
        listed = await h.conn.list_sessions(ListSessionsRequest())
        assert [s.title for s in listed.sessions] == ["Fix the parser"]
    async with serve(scripted([Say("again")]), store=store) as h:
        with anyio.fail_after(TIMEOUT):
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        await h.client.wait_until(lambda: _titles(h, session_id)[-1:] == ["Fix the parser"])


async def test_a_title_set_on_a_stored_session_not_live_reaches_the_next_resume(
    store: SessionStore,
) -> None:
    async with serve(scripted([Say("hi"), SetTitle("Engine title")]), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        with anyio.fail_after(TIMEOUT):
            await h.conn.close_session(CloseSessionRequest(session_id=session_id))
        assert await _set_title(h, session_id, "Mine") == "Mine"
        assert _titles(h, session_id)[-1] == "Engine title"  # not live: nothing is sent
        with anyio.fail_after(TIMEOUT):
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        await h.client.wait_until(lambda: _titles(h, session_id)[-1:] == ["Mine"])
        record = await store.get_session(session_id)
        assert record is not None and record.title == "Mine"


@pytest.mark.parametrize(
    ("title", "reason"),
    [
        ("", "empty"),
        ("   \t ", "empty"),
        ("x" * 257, "too_long"),
        ("two\nlines", "control_character"),
        ("bell\x07", "control_character"),
        ("esc \x1b[31mred", "control_character"),
        ("c1 \x9b31m", "control_character"),
        ("line\u2028separator", "control_character"),
        ("evil\u202etxt.exe", "control_character"),
        ("isolate \u2066x\u2069", "control_character"),
    ],
)
async def test_bad_titles_are_refused_and_nothing_changes(title: str, reason: str) -> None:
    async with serve(scripted([Say("hi"), SetTitle("Kept")])) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        with pytest.raises(RequestError) as caught:
            await _set_title(h, session_id, title)
        assert caught.value.code == -32602
        data = caught.value.data
        assert isinstance(data, dict) and data["sessionId"] == session_id
        assert data["reason"] == reason
        record = await h.store.get_session(session_id)
        assert record is not None and record.title == "Kept"
        assert await _set_title(h, session_id, "y" * 256) == "y" * 256  # the limit itself


async def test_a_title_for_an_unknown_session_is_resource_not_found() -> None:
    async with serve() as h:
        with pytest.raises(RequestError) as caught:
            await _set_title(h, "missing", "Title")
        assert caught.value.code == -32002
        assert caught.value.data == {"sessionId": "missing"}


async def test_a_title_set_while_a_turn_runs_reaches_every_attached_client(
    store: SessionStore,
) -> None:
    async with serve(scripted([Say("one"), WaitForCancel()]), store=store) as h:
        session_id = await h.new_session()
        async with anyio.create_task_group() as group:
            group.start_soon(h.prompt, session_id)
            await h.client.wait_until(lambda: "agent_message_chunk" in h.client.kinds(session_id))
            assert await _set_title(h, session_id, "During the turn") == "During the turn"
            assert _titles(h, session_id)[-1] == "During the turn"  # sent before the answer
            await h.conn.cancel(CancelNotification(session_id=session_id))
        record = await store.get_session(session_id)
        assert record is not None and record.title == "During the turn"


async def _stored_titles(store: SessionStore, session_id: str) -> list[str | None]:
    """The titles of the session's stored ``title_changed`` events, in order."""
    events = await store.read_events(session_id)
    return [orjson.loads(e.payload)["title"] for e in events if e.kind == "title_changed"]


async def test_a_generated_title_never_replaces_the_clients_here_or_after_a_resume(
    store: SessionStore,
) -> None:
    engine = scripted([Say("one"), SetTitle("Generated")], [Say("two"), SetTitle(None)])
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        assert await _set_title(h, session_id, "Mine") == "Mine"
        await h.prompt(session_id)
        await h.prompt(session_id)
        assert [t for t in _titles(h, session_id) if t is not None] == ["Mine"]
        record = await store.get_session(session_id)
        assert record is not None and (record.title, record.title_by_client) == ("Mine", True)
        assert await _stored_titles(store, session_id) == ["Mine"]  # dropped, not stored
    # Another runtime on the store (a restart): the flag came with the record.
    async with serve(scripted([Say("three"), SetTitle("Generated again")]), store=store) as h:
        with anyio.fail_after(TIMEOUT):
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        await h.prompt(session_id)
        assert [t for t in _titles(h, session_id) if t is not None] == ["Mine"]
        record = await store.get_session(session_id)
        assert record is not None and record.title == "Mine"
        assert await _stored_titles(store, session_id) == ["Mine"]
        # A client's title always wins, also over its own.
        assert await _set_title(h, session_id, "Mine, renamed") == "Mine, renamed"
        listed = await h.conn.list_sessions(ListSessionsRequest())
        assert [s.title for s in listed.sessions] == ["Mine, renamed"]


async def test_a_generated_title_before_the_clients_is_kept_until_then(
    store: SessionStore,
) -> None:
    engine = scripted([Say("one"), SetTitle("Generated")], [Say("two"), SetTitle("Later")])
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        record = await store.get_session(session_id)
        assert record is not None and (record.title, record.title_by_client) == (
            "Generated",
            False,
        )
        assert await _set_title(h, session_id, "Mine") == "Mine"
        await h.prompt(session_id)
        assert [t for t in _titles(h, session_id) if t is not None] == ["Generated", "Mine"]
        assert await _stored_titles(store, session_id) == ["Generated", "Mine"]
    async with serve(scripted([Say("three")]), store=store) as h:
        with anyio.fail_after(TIMEOUT):
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        await h.client.wait_until(lambda: _titles(h, session_id)[-1:] == ["Mine"])


async def test_a_generated_title_the_record_missed_yields_to_the_clients_only(
    store: SessionStore,
) -> None:
    """A title in the chain after the record's state (a crash before the record was saved)
    is folded in on a resume, unless the record's title is a client's: that one is newer."""
    async with serve(scripted([Say("one")]), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        with anyio.fail_after(TIMEOUT):
            await h.conn.close_session(CloseSessionRequest(session_id=session_id))
    for by_client, announced in ((False, "Generated"), (True, "Mine")):
        record = await store.get_session(session_id)
        assert record is not None
        event = TitleChanged(title="Generated")
        stored = StoredEvent(
            session_id=session_id,
            seq=record.last_seq + 1,
            epoch=record.epoch,
            turn_id=None,
            agent_id=ROOT_AGENT_ID,
            kind=event.kind,
            layer=event.layer,
            payload=event_to_json(event),
            created_at=datetime.now(UTC),
        )
        await store.append_events([stored])
        await store.update_session(session_id, title="Mine", title_by_client=by_client)
        async with serve(scripted(), store=store) as h:
            with anyio.fail_after(TIMEOUT):
                await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
            await h.client.wait_until(lambda: bool(_titles(h, session_id)))
            assert _titles(h, session_id) == [announced]


async def test_another_process_s_title_holds_against_this_one_s_saves_and_generated_titles(
    shared_stores: tuple[SessionStore, SessionStore],
) -> None:
    store_a, store_b = shared_stores
    engine = scripted([Say("one"), SetTitle("First")], [Say("two")], [SetTitle("Generated")])
    async with (
        serve(engine, store=store_a) as a,
        serve(scripted(), store=store_b) as b,
    ):
        session_id = await a.new_session()
        await a.prompt(session_id)  # live in a, titled by its engine
        assert await _set_title(b, session_id, "From b") == "From b"  # b: the record only
        await a.prompt(session_id)  # a's turn ends with a save of its state
        record = await store_b.get_session(session_id)
        assert record is not None and (record.title, record.title_by_client) == ("From b", True)
        await a.prompt(session_id)  # a's engine titles again: dropped
        assert "Generated" not in _titles(a, session_id)
        record = await store_b.get_session(session_id)
        assert record is not None and record.title == "From b"
        listed = await a.conn.list_sessions(ListSessionsRequest())
        assert [s.title for s in listed.sessions] == ["From b"]


# --------------------------------------------------------------------------- status


async def test_status_says_open_or_saved_and_changes_nothing(store: SessionStore) -> None:
    async with serve(scripted([Say("hi"), WaitForCancel()]), store=store) as h:
        assert is_advertised(_advertised(h), ("sessionCapabilities", "status"))
        session_id = await h.new_session()
        assert await _status(h, session_id) == (
            "open",
            {"running": False, "clients": 1, "archived": False},
        )
        async with anyio.create_task_group() as group:
            group.start_soon(h.prompt, session_id)
            await h.client.wait_until(lambda: "agent_message_chunk" in h.client.kinds(session_id))
            assert await _status(h, session_id) == (
                "open",
                {"running": True, "clients": 1, "archived": False},
            )
            await h.conn.cancel(CancelNotification(session_id=session_id))
        with anyio.fail_after(TIMEOUT):
            await h.conn.close_session(CloseSessionRequest(session_id=session_id))
        before = await store.get_session(session_id)
        seen = len(h.client.notifications)
        assert await _status(h, session_id) == (
            "saved",
            {"running": False, "clients": 0, "archived": False},
        )
        assert await _status(h, session_id) == (
            "saved",
            {"running": False, "clients": 0, "archived": False},
        )
        assert await store.get_session(session_id) == before  # nothing loaded nor changed
        assert session_id not in h.runtime._sessions.live  # pyright: ignore[reportPrivateUsage]
        assert len(h.client.notifications) == seen


async def test_status_of_an_unknown_session_is_resource_not_found_with_its_id() -> None:
    async with serve() as h:
        with pytest.raises(RequestError) as caught:
            await _status(h, "missing")
        assert caught.value.code == -32002
        assert caught.value.data == {"sessionId": "missing"}


# --------------------------------------------------------------------------- archive


async def _archive(h: Harness, session_id: str, *, archived: bool = True) -> None:
    with anyio.fail_after(TIMEOUT):
        if archived:
            await h.conn.archive_session(ArchiveSessionRequest(session_id=session_id))
        else:
            await h.conn.unarchive_session(UnarchiveSessionRequest(session_id=session_id))


async def _listed(h: Harness, archived: str | None = None) -> dict[str, bool | None]:
    with anyio.fail_after(TIMEOUT):
        page = await h.conn.list_sessions(ListSessionsRequest(archived=archived))
    return {info.session_id: info.archived for info in page.sessions}


async def test_archive_hides_shuts_refuses_load_and_unarchive_brings_it_back(
    store: SessionStore,
) -> None:
    engine = scripted([Say("one")], [Say("two")], [Say("three"), WaitForCancel()], [Say("4")])
    async with serve(engine, store=store) as h:
        assert is_advertised(_advertised(h), ("sessionCapabilities", "archive"))
        kept, archived = await h.new_session(), await h.new_session()
        await h.prompt(kept)
        await h.prompt(archived)
        async with anyio.create_task_group() as group:
            group.start_soon(h.prompt, archived)  # archiving cancels the running turn
            await h.client.wait_until(
                lambda: h.client.kinds(archived).count("agent_message_chunk") >= 2
            )
            await _archive(h, archived)
            await _archive(h, archived)  # archiving an archived session succeeds
        assert await _status(h, archived) == (
            "saved",
            {"running": False, "clients": 0, "archived": True},
        )
        assert await _listed(h) == {kept: False}
        assert await _listed(h, "include") == {kept: False, archived: True}
        assert await _listed(h, "only") == {archived: True}
        with pytest.raises(RequestError) as bad_filter:
            await _listed(h, "sideways")
        assert bad_filter.value.code == -32602
        with pytest.raises(RequestError) as refused:
            await h.conn.resume_session(ResumeSessionRequest(session_id=archived, cwd=CWD))
        assert refused.value.code == -32602
        assert refused.value.data == {"sessionId": archived, "reason": "archived"}
        assert "unarchive" in str(refused.value)
    async with serve(scripted([Say("back")]), store=store) as h:
        assert await _listed(h, "only") == {archived: True}  # kept in the store
        await _archive(h, archived, archived=False)
        await _archive(h, archived, archived=False)  # not archived: succeeds
        assert await _listed(h) == {archived: False, kept: False}
        with anyio.fail_after(TIMEOUT):
            await h.conn.resume_session(ResumeSessionRequest(session_id=archived, cwd=CWD))
        assert (await h.prompt(archived)).stop_reason == "end_turn"


async def test_archive_of_an_unknown_session_is_resource_not_found() -> None:
    async with serve() as h:
        for archived in (True, False):
            with pytest.raises(RequestError) as caught:
                await _archive(h, "missing", archived=archived)
            assert caught.value.code == -32002
            assert caught.value.data == {"sessionId": "missing"}

"""Hostile session ids and titles through the runtime, on every store (memory, SQLite file,
PostgreSQL): a NUL in an id a client names, or in a title the model chose, is what JSON can
carry and PostgreSQL's text cannot.

An id with a NUL names no session (-32002 for load, resume and close, silence for delete,
nothing listed), not a database error; a title with a NUL is shown and stored with U+FFFD in
its place (a title is display text), the same by every store, and other hostile titles
(terminal escapes, right-to-left overrides, SQL) come back exactly as the model wrote them.
"""

from __future__ import annotations

import pytest
from _agent_support import CWD, scripted, serve

from accord.errors import RequestError
from accord.schema import (
    CloseSessionRequest,
    DeleteSessionRequest,
    ListSessionsRequest,
    LoadSessionRequest,
    ResumeSessionRequest,
)
from accord.store import SessionStore
from accord.testing import SetTitle

pytestmark = pytest.mark.anyio


async def test_an_id_with_a_nul_names_no_session(store: SessionStore) -> None:
    evil = "session\x00'; DROP TABLE accord_sessions; --"
    async with serve(scripted(), store=store) as h:
        await h.prompt(await h.new_session())
        codes = []
        for request in (
            lambda: h.conn.load_session(
                LoadSessionRequest(session_id=evil, cwd=CWD, mcp_servers=[])
            ),
            lambda: h.conn.resume_session(ResumeSessionRequest(session_id=evil, cwd=CWD)),
            lambda: h.conn.close_session(CloseSessionRequest(session_id=evil)),
        ):
            with pytest.raises(RequestError) as refused:
                await request()
            codes.append(refused.value.code)
        await h.conn.delete_session(DeleteSessionRequest(session_id=evil))
        listed = await h.conn.list_sessions(ListSessionsRequest(cwd=CWD))
    assert codes == [-32002, -32002, -32002]
    assert len(listed.sessions) == 1


@pytest.mark.parametrize(
    ("title", "shown"),
    [
        ("nul\x00inside", "nul\ufffdinside"),
        ("\x1b]0;owned\x07\x1b[2J", "\x1b]0;owned\x07\x1b[2J"),
        ("right-to-left \u202egnp.exe", "right-to-left \u202egnp.exe"),
        ("'; DROP TABLE accord_sessions; --", "'; DROP TABLE accord_sessions; --"),
    ],
)
async def test_a_hostile_title_is_listed_as_shown(
    store: SessionStore, title: str, shown: str
) -> None:
    async with serve(scripted([SetTitle(title)]), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        listed = await h.conn.list_sessions(ListSessionsRequest())
        updates = h.client.updates(session_id)
    assert [s.title for s in listed.sessions] == [shown]
    sent = [u["title"] for u in updates if u.get("sessionUpdate") == "session_info_update"]
    assert sent[-1] == shown
    record = await store.get_session(session_id)
    assert record is not None and record.title == shown

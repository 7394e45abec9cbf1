"""Session ids a client makes up: over 200 characters, with C0 control characters, on every store.

A client can name any session id in ``session/load``, ``session/resume``, ``session/close``,
``session/fork`` and ``session/delete``. An id of 300 characters carrying every C0 control
character (ESC and BEL are covered by ``test_hostile_ids.py``, NUL too) names no session:
-32002 (or silence for delete), never a database error, nothing stored or listed, and no log
line the agent writes while refusing it carries a raw control character.
"""

from __future__ import annotations

import logging

import pytest
from _agent_support import CWD, scripted, serve

from accord.errors import RequestError
from accord.schema import (
    CloseSessionRequest,
    DeleteSessionRequest,
    ForkSessionRequest,
    ListSessionsRequest,
    LoadSessionRequest,
    ResumeSessionRequest,
)
from accord.store import SessionStore

pytestmark = pytest.mark.anyio

#: Every C0 control but NUL, ESC and BEL (covered elsewhere), and DEL.
_CONTROLS = "".join(chr(c) for c in [*range(1, 7), *range(8, 27), *range(28, 32), 127])

#: 300 characters: the controls, a log-forging line break, then padding.
EVIL = ("s" + _CONTROLS + "\nINFO forged log line\r" + "x" * 300)[:300]


async def test_a_long_id_with_control_characters_names_no_session(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    assert len(EVIL) == 300
    async with serve(scripted(), store=store) as h:
        await h.prompt(await h.new_session())
        codes: list[int] = []
        with caplog.at_level(logging.DEBUG, logger="accord"):
            for request in (
                lambda: h.conn.load_session(
                    LoadSessionRequest(session_id=EVIL, cwd=CWD, mcp_servers=[])
                ),
                lambda: h.conn.resume_session(ResumeSessionRequest(session_id=EVIL, cwd=CWD)),
                lambda: h.conn.close_session(CloseSessionRequest(session_id=EVIL)),
                lambda: h.conn.fork_session(ForkSessionRequest(session_id=EVIL, cwd=CWD)),
            ):
                with pytest.raises(RequestError) as refused:
                    await request()
                codes.append(refused.value.code)
            await h.conn.delete_session(DeleteSessionRequest(session_id=EVIL))
            listed = await h.conn.list_sessions(ListSessionsRequest(cwd=CWD))
    assert codes == [-32002, -32002, -32002, -32002]
    assert len(listed.sessions) == 1
    assert await store.get_session(EVIL) is None
    for record in caplog.records:
        text = record.getMessage()
        assert not any(ch in text for ch in _CONTROLS), text[:200]

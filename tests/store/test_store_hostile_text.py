"""Hostile session ids, titles and directories, stored and listed intact by every store.

Titles come from the model (``SetTitle``, the engine's summary), ids and directories from
clients: terminal escapes, right-to-left overrides, zero-width characters, quotes and SQL,
LIKE wildcards, very long text. Each store (memory, SQLite file, PostgreSQL) gives back
exactly what it was given, in ``get_session`` and ``list_sessions``, and a ``cwd`` filter
with wildcards matches only itself.
"""

from __future__ import annotations

import pytest
from _store_support import record

from accord.store import SessionStore

pytestmark = pytest.mark.anyio

# Not here: a NUL, which PostgreSQL's text cannot hold (ids and directories with one name no
# session, a title's becomes U+FFFD: tests/agent/test_hostile_ids.py), and lone surrogates,
# which JSON off the wire cannot carry (orjson refuses them).
HOSTILE = [
    "\x1b]0;owned\x07\x1b[2J",
    "right-to-left \u202egnp.exe",
    "'; DROP TABLE sessions; --",
    "100% _of_ \\ wildcards",
    "x" * 20_000,
    "\ufeff\u200b zero width",
]


@pytest.mark.parametrize("index", range(len(HOSTILE)))
async def test_a_hostile_title_id_and_cwd_come_back_intact(store: SessionStore, index: int) -> None:
    text = HOSTILE[index]
    session_id = f"id-{text[:200]}"
    cwd = f"/work/{text[:200]}"
    await store.create_session(record(session_id, cwd=cwd, title=text))
    await store.create_session(record("plain", cwd="/work/plain", updated=-1))

    got = await store.get_session(session_id)
    page = await store.list_sessions()
    only = await store.list_sessions(cwd=cwd)

    assert got is not None
    assert (got.session_id, got.cwd, got.title) == (session_id, cwd, text)
    listed = {s.session_id: s for s in page.sessions}
    assert set(listed) == {session_id, "plain"}
    assert (listed[session_id].cwd, listed[session_id].title) == (cwd, text)
    assert [s.session_id for s in only.sessions] == [session_id]

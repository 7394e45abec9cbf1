"""The client runtime on a shared session: cursors per session, resume from one, observers.

Each ``connect`` is its own connection to one in-process :class:`AgentRuntime` (the
in-memory pair), so two of them are two clients of the same sessions.
"""

from __future__ import annotations

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client import connect
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine

pytestmark = pytest.mark.anyio


def runtime() -> AgentRuntime:
    engine = ScriptedEngine([[Say("first answer")], [Say("second answer")], [Say("third")]])
    return AgentRuntime(engine, store=MemorySessionStore())


def texts(messages: object) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in messages]  # type: ignore[attr-defined]


async def test_the_client_tracks_the_last_cursor_and_resumes_from_it() -> None:
    shared = runtime()
    with anyio.fail_after(TIMEOUT):
        async with connect(shared) as first:
            session = await first.new_session()
            assert session.cursor is None
            await session.prompt("one")
            after_one = session.cursor
            assert isinstance(after_one, str)
            await session.prompt("two")
            assert session.cursor not in (None, after_one)
            # A second connection (a reconnect) resumes after the first turn: only the
            # second turn arrives, once, before the answer.
            async with connect(shared) as second:
                again = await second.resume_session(session.session_id, cursor=after_one)
                assert texts(again.view.messages) == [("user", "two"), ("agent", "second answer")]
                assert again.cursor == session.cursor


async def test_a_refused_cursor_falls_back_to_a_full_load() -> None:
    shared = runtime()
    with anyio.fail_after(TIMEOUT):
        async with connect(shared) as first:
            session = await first.new_session()
            await session.prompt("one")
            for bad in ("garbage", "1.00000000.0.1", session.cursor + "0"):  # type: ignore[operator]
                async with connect(shared) as second:
                    loaded = await second.resume_session(session.session_id, cursor=bad)
                    assert texts(loaded.view.messages) == [
                        ("user", "one"),
                        ("agent", "first answer"),
                    ], bad
                    assert loaded.cursor is not None


async def test_a_second_client_is_an_observer_until_it_prompts() -> None:
    shared = runtime()
    with anyio.fail_after(TIMEOUT):
        async with connect(shared) as first, connect(shared) as second:
            session = await first.new_session()
            assert session.observer is False
            watching = await second.resume_session(session.session_id)
            assert watching.observer is True and watching.view.observer is True
            await watching.prompt("from the second")
            assert watching.observer is False
            # The first client saw the second one's turn.
            await session.prompt("from the first")
            assert ("agent", "first answer") in texts(session.view.messages)
            assert ("agent", "second answer") in texts(watching.view.messages)

"""A client attached through one process sees a turn that another process runs, live and in
order (``AgentRuntime(live_from_elsewhere=True)``): two runtimes on two store objects over one
database stand for two server processes (memory, SQLite file, PostgreSQL)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _agent_support import CWD, scripted, serve
from helpers.timeouts import QUIET

from accord.errors import RequestError
from accord.schema import LoadSessionRequest
from accord.store import SessionStore
from accord.testing import Say, Stream, WaitFor

pytestmark = pytest.mark.anyio


def _load(session_id: str) -> LoadSessionRequest:
    return LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])


def _turn(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The updates minus the activation announcements of a load (they follow its answer)."""
    return [u for u in updates if "announcement" not in u.get("_meta", {}).get("accord", {})]


def _texts(updates: list[dict[str, Any]]) -> list[str]:
    return [
        u["content"]["text"]
        for u in updates
        if u.get("sessionUpdate") == "agent_message_chunk" and u["content"].get("type") == "text"
    ]


async def test_a_turn_running_in_another_process_reaches_this_client_live_in_order(
    shared_stores: tuple[SessionStore, SessionStore],
) -> None:
    store_a, store_b = shared_stores
    gate = anyio.Event()
    engine = scripted([Say("started"), Stream(count=50), WaitFor(gate), Say("done")])
    async with (
        serve(engine, store=store_a, live_from_elsewhere=True) as a,
        serve(scripted([Say("mine")]), store=store_b, live_from_elsewhere=True) as b,
    ):
        session_id = await a.new_session()
        await b.conn.load_session(_load(session_id))
        b.client.clear()
        a.client.clear()
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.prompt, session_id, "go")
            # Live: b's client has a's first words while a's turn is still held open.
            await b.client.wait_until(lambda: "started" in _texts(b.client.updates(session_id)))
            assert not gate.is_set()
            with pytest.raises(RequestError) as caught:
                await b.prompt(session_id, "me too")
            assert caught.value.data == {
                "sessionId": session_id,
                "reason": "busy",
                "state": "running elsewhere",
            }
            gate.set()
        await b.client.wait_until(lambda: "done" in _texts(b.client.updates(session_id)))
        # Everything a's own client saw of the turn, b's client saw too, in the same order.
        # (b's client also saw the prompt, which a's client sent and was not sent back)
        seen_by_b = _turn(b.client.updates(session_id))
        assert [u["sessionUpdate"] for u in seen_by_b[:1]] == ["user_message_chunk"]
        assert seen_by_b[0]["content"]["text"] == "go"
        assert seen_by_b[1:] == _turn(a.client.updates(session_id))
        assert _texts(b.client.updates(session_id))[0] == "started"
        # b's copy follows: the client's next prompt through b continues from a's turn,
        # without loading the session again, and b's client has nothing twice.
        before = len(_turn(b.client.updates(session_id)))
        assert (await b.prompt(session_id, "me")).stop_reason == "end_turn"
        assert b.engine.session(session_id).prompts == ["go", "me"]
        assert _texts(_turn(b.client.updates(session_id))[before:]) == ["mine"]
        # ... and a's client, still attached there, sees b's turn live in its turn.
        await a.client.wait_until(lambda: "mine" in _texts(a.client.updates(session_id)))
        assert _texts(a.client.updates(session_id)).count("mine") == 1


async def test_this_process_s_own_turn_is_not_relayed_twice(
    shared_stores: tuple[SessionStore, SessionStore],
) -> None:
    store_a, _store_b = shared_stores
    engine = scripted([Say("one"), Stream(count=200)], [Say("two")])
    async with serve(engine, store=store_a, live_from_elsewhere=True) as a:
        session_id = await a.new_session()
        a.client.clear()
        await a.prompt(session_id)
        await a.prompt(session_id)
        with anyio.move_on_after(QUIET):  # time for a wrong relay to arrive, if there were one
            await a.client.wait_until(lambda: False)
        texts = _texts(a.client.updates(session_id))
    assert texts.count("one") == 1
    assert texts.count("two") == 1
    assert len(texts) == len(set(texts))


async def test_without_the_option_another_process_s_turn_is_not_relayed(
    shared_stores: tuple[SessionStore, SessionStore],
) -> None:
    store_a, store_b = shared_stores
    async with (
        serve(scripted([Say("elsewhere")]), store=store_a) as a,
        serve(scripted(), store=store_b) as b,
    ):
        session_id = await a.new_session()
        await b.conn.load_session(_load(session_id))
        b.client.clear()
        await a.prompt(session_id)
        with anyio.move_on_after(QUIET):  # time for a wrong relay to arrive
            await b.client.wait_until(lambda: False)
        assert _turn(b.client.updates(session_id)) == []

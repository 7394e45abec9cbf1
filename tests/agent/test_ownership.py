"""One process at a time runs a session's turns: two runtimes on one store stand for two
server processes (the store fixture runs this on memory, SQLite and PostgreSQL)."""

from __future__ import annotations

import anyio
import pytest
from _agent_support import CWD, FULL, scripted, serve
from helpers.timeouts import TIMEOUT

from accord.errors import RequestError
from accord.schema import ListSessionsRequest, LoadSessionRequest
from accord.store import SessionStore
from accord.testing import ChangeMode, Say, SetTitle, WaitFor

pytestmark = pytest.mark.anyio


def _load(session_id: str) -> LoadSessionRequest:
    return LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])


async def test_a_turn_running_in_one_process_makes_the_others_answer_busy(
    store: SessionStore,
) -> None:
    gate = anyio.Event()
    first_engine = scripted([Say("started"), WaitFor(gate), Say("done")])
    async with serve(first_engine, store=store) as a, serve(scripted(), store=store) as b:
        session_id = await a.new_session()
        await b.conn.load_session(_load(session_id))
        async with anyio.create_task_group() as tg:
            answers: list[str] = []

            async def run_first() -> None:
                answers.append((await a.prompt(session_id)).stop_reason)

            tg.start_soon(run_first)
            with anyio.fail_after(TIMEOUT):  # a's turn has begun streaming: it holds the claim
                await a.client.wait_until(lambda: "started" in str(a.client.updates(session_id)))
            with pytest.raises(RequestError) as caught:
                await b.prompt(session_id)
            gate.set()
        assert answers == ["end_turn"]
    assert caught.value.code == -32602
    assert caught.value.data == {
        "sessionId": session_id,
        "reason": "busy",
        "state": "running elsewhere",
    }
    assert "another accord process" in caught.value.message


async def test_the_claim_is_released_when_the_turn_ends(store: SessionStore) -> None:
    async with serve(scripted([Say("one")]), store=store) as a:
        session_id = await a.new_session()
        await a.prompt(session_id)
    claim = await store.claim_session(session_id, "next-process", lease_seconds=5)
    assert claim.held_by("next-process")


async def test_a_dead_owner_s_claim_expires_and_the_session_is_taken_over(
    store: SessionStore,
) -> None:
    async with serve(scripted([Say("taken over")]), store=store, turn_lease=5) as b:
        session_id = await b.new_session()
        # A process that died mid-turn: its claim is there, and nobody renews it.
        await store.claim_session(session_id, "dead-process", lease_seconds=0.3)
        with pytest.raises(RequestError) as caught:
            await b.prompt(session_id)
        assert caught.value.data["reason"] == "busy"  # type: ignore[index]
        await anyio.sleep(0.5)
        assert (await b.prompt(session_id)).stop_reason == "end_turn"


async def test_a_long_turn_keeps_renewing_its_claim(store: SessionStore) -> None:
    gate = anyio.Event()
    async with serve(scripted([WaitFor(gate), Say("x")]), store=store, turn_lease=0.3) as a:
        session_id = await a.new_session()
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.prompt, session_id)
            await anyio.sleep(1.0)  # three leases long: only renewals keep the claim alive
            claim = await store.claim_session(session_id, "other", lease_seconds=1)
            gate.set()
    assert not claim.held_by("other")


async def test_a_copy_continued_elsewhere_continues_from_the_stored_history(
    store: SessionStore,
) -> None:
    """Two processes take turns on one session: b's next prompt continues from what a
    committed meanwhile (no reload by the client), never an EventOrderError, never a fork."""
    second = [Say("two"), SetTitle("Renamed over there"), ChangeMode("plan")]
    a_engine = scripted([Say("one")], second, capabilities=FULL)
    b_engine = scripted([Say("three")], capabilities=FULL)
    async with serve(a_engine, store=store) as a, serve(b_engine, store=store) as b:
        session_id = await a.new_session()
        await a.prompt(session_id, "first")
        await b.conn.load_session(_load(session_id))
        await a.prompt(session_id, "second")  # b's copy is now behind the store
        assert (await b.prompt(session_id, "third")).stop_reason == "end_turn"
        # b's engine ran the turn on the whole stored history, a's turn included, in the
        # mode a's turn left, and b's copy has the title a's turn gave.
        assert b_engine.session(session_id).prompts == ["first", "second", "third"]
        assert b_engine.session(session_id).turn_controls[-1][0] == "plan"
        assert b.runtime.statistics().live_sessions == 1
        listed = await b.conn.list_sessions(ListSessionsRequest())
        assert [info.title for info in listed.sessions] == ["Renamed over there"]
        assert (await a.prompt(session_id, "fourth")).stop_reason == "end_turn"
        assert a_engine.session(session_id).prompts == ["first", "second", "third", "fourth"]
    seqs = [event.seq for event in await store.read_events(session_id)]
    assert seqs == list(range(1, len(seqs) + 1))
    async with serve(scripted(), store=store) as c:
        c.client.clear()
        await c.conn.load_session(_load(session_id))
        replayed = str(c.client.updates(session_id))
    words = ("'first'", "'one'", "'second'", "'two'", "'third'", "'three'", "'fourth'")
    positions = [replayed.index(word) for word in words]
    assert positions == sorted(positions)

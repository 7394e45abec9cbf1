"""Two server processes racing to run a turn of one session: exactly one turn runs.

Two runtimes on two store objects over one database (memory, SQLite file, PostgreSQL) stand
for two ``accord serve`` processes; a client of each has the session open, and both prompt at
the same instant, round after round. Each round exactly one prompt runs, the other is refused
``busy`` (-32602) with the reason, and the stored chain holds every winning prompt once, in
order, and no loser's.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _agent_support import CWD, Harness, message_texts, serve
from helpers.timeouts import TIMEOUT

from accord.errors import RequestError
from accord.schema import LoadSessionRequest
from accord.store import SessionStore
from accord.testing import Pause, Say, ScriptedEngine, ScriptStep

pytestmark = pytest.mark.anyio

ROUNDS = 8


def _engine(name: str) -> ScriptedEngine:
    def respond(text: str) -> list[ScriptStep]:
        return [Pause(0.05), Say(f"{name} ran {text}")]

    return ScriptedEngine([], respond=respond)


def _load(session_id: str) -> LoadSessionRequest:
    return LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])


async def _race(
    side: str,
    harness: Harness,
    session_id: str,
    text: str,
    ran: list[str],
    refusals: list[dict[str, object]],
) -> None:
    """Prompt through ``harness``; note whether it ran or how it was refused."""
    try:
        await harness.prompt(session_id, text)
    except RequestError as exc:
        data: Any = exc.data if isinstance(exc.data, dict) else {}
        refusals.append({"code": exc.code, "reason": data.get("reason")})
    else:
        ran.append(side)


async def test_two_servers_prompting_one_session_at_once_run_exactly_one_turn(
    shared_stores: tuple[SessionStore, SessionStore],
) -> None:
    store_a, store_b = shared_stores
    winners: list[str] = []
    refusals: list[dict[str, object]] = []
    async with (
        serve(_engine("a"), store=store_a, live_from_elsewhere=True) as a,
        serve(_engine("b"), store=store_b, live_from_elsewhere=True) as b,
    ):
        session_id = await a.new_session()
        await b.conn.load_session(_load(session_id))
        for n in range(ROUNDS):
            text = f"round {n}"
            ran: list[str] = []
            with anyio.fail_after(TIMEOUT):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_race, "a", a, session_id, text, ran, refusals)
                    tg.start_soon(_race, "b", b, session_id, text, ran, refusals)
            assert len(ran) == 1, (n, ran)
            winners.append(f"{ran[0]} ran {text}")
    assert [r["code"] for r in refusals] == [-32602] * ROUNDS
    assert all(r["reason"] == "busy" for r in refusals), refusals
    # The stored chain, read by a third process: every winner once, in order, no loser.
    async with serve(_engine("c"), store=store_a) as c:
        await c.conn.load_session(_load(session_id))
        replayed = message_texts(c.client.updates(session_id))
    assert [t for kind, t in replayed if kind == "agent_message_chunk"] == winners
    assert [t for kind, t in replayed if kind == "user_message_chunk"] == [
        f"round {n}" for n in range(ROUNDS)
    ]

"""PostgreSQL restarted (as a crash) under 50 sessions streaming their turns at once.

One :class:`AgentRuntime` on a real PostgreSQL server, 50 ``accord.client`` clients in process
(real connections over the in-memory pair), each streaming a turn of small chunks. Midway the
server is restarted in ``immediate`` mode (its connections die, nothing is shut down
cleanly). What must hold afterwards:

- nothing committed is lost: every session's stored chain is gap-free from seq 1;
- every client is told: its prompt either ends (the turn carried on) or fails with the
  store's clear error (-32603, naming the server and not its credentials), never a hang;
- the same runtime, not restarted, serves a new prompt on every session once the server is
  back, and that turn's events follow the stored chain without a gap (the seqs of a failed
  turn's unstored events are given back; before that, 2 or 3 sessions a run resumed numbering
  after them);
- every client gets exactly its own chunks, once, in order: a turn's result holds that turn's
  text and nothing else, and the view holds every stored chunk once, in the stored order.
  Chunks of the interrupted turn committed while their acknowledgement was lost come to the
  client by the catch-up at the start of the next prompt; the agent's turn-start notice
  (``_accord/turn`` with the prompt's tag, just before the new turn's first event) tells the
  client they are not the new turn's (before it, accord's client counted them into its reply).
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import pytest
from helpers.postgres import fresh_schema, postgres_url, restart_server
from helpers.timeouts import SCENARIO_TIMEOUT

from accord.agent import AgentRuntime
from accord.client import ClientSession, connect
from accord.engines import TextChunk
from accord.errors import RequestError
from accord.events import envelope_from_stored
from accord.store import PostgresSessionStore, iter_events
from accord.testing import Say, ScriptedEngine, ScriptStep, Stream

pytestmark = [pytest.mark.anyio, pytest.mark.asyncio_only("one backend is enough: a slow test")]

SESSIONS = 50
CHUNKS = 60
CHUNK_DELAY = 0.02  # a turn streams for about 1.2 s; the restart comes 0.4 s in


def _steps(prompt: str) -> list[ScriptStep]:
    if prompt == "stream":
        return [Stream(count=CHUNKS, delay=CHUNK_DELAY, prefix="c"), Say("end")]
    return [Say(f"back: {prompt}")]


async def _stored_seqs(store: PostgresSessionStore, session_id: str) -> list[int]:
    return [event.seq async for batch in iter_events(store, session_id) for event in batch]


async def _stored_text(store: PostgresSessionStore, session_id: str) -> str:
    """The agent's text in the stored chain, every chunk in seq order."""
    parts: list[str] = []
    async for batch in iter_events(store, session_id):
        for stored in batch:
            event = envelope_from_stored(stored).event
            if isinstance(event, TextChunk) and event.content.type == "text":
                parts.append(event.content.text)
    return "".join(parts)


def _agent_text(session: ClientSession) -> str:
    return "".join(m.text for m in session.view.messages if m.role == "agent")


async def _prompt_when_back(session: ClientSession, text: str) -> str:
    """Prompt until the store works again; every failure on the way is the clear error."""
    errors: list[RequestError] = []
    for _attempt in range(60):
        try:
            return (await session.prompt(text)).text
        except RequestError as error:
            errors.append(error)
            await anyio.sleep(0.25)
    pytest.fail(f"the runtime never recovered after the restart: {errors[-3:]}")


def _check_told(error: RequestError) -> None:
    assert error.code == -32603, error
    assert "PostgreSQL at 127.0.0.1" in error.message, error.message
    assert "postgres@" not in error.message  # no credentials shown


async def test_a_restart_under_50_streaming_sessions_loses_nothing_and_recovers() -> None:
    postgres_url()
    with fresh_schema() as url:
        async with PostgresSessionStore(url) as store, AsyncExitStack() as stack:
            runtime = AgentRuntime(ScriptedEngine(respond=_steps), store=store)
            stack.push_async_callback(runtime.aclose)
            sessions: list[ClientSession] = []
            for _ in range(SESSIONS):
                connection = await stack.enter_async_context(connect(runtime))
                sessions.append(await connection.new_session())
            outcomes: dict[int, str | RequestError] = {}

            async def stream(index: int) -> None:
                try:
                    outcomes[index] = (await sessions[index].prompt("stream")).text
                except RequestError as error:
                    outcomes[index] = error

            with anyio.fail_after(SCENARIO_TIMEOUT):
                async with anyio.create_task_group() as turns:
                    for index in range(SESSIONS):
                        turns.start_soon(stream, index)
                    await anyio.sleep(CHUNKS * CHUNK_DELAY / 3)
                    await anyio.to_thread.run_sync(restart_server, "immediate")
            # Every client was told: its turn ended, or it got the clear error.
            assert sorted(outcomes) == list(range(SESSIONS))
            whole = "".join(f"c{n} " for n in range(CHUNKS)) + "end"
            for outcome in outcomes.values():
                if isinstance(outcome, RequestError):
                    _check_told(outcome)
                else:
                    assert outcome == whole  # the turn's own text, all of it, once
            # Nothing committed is lost: every stored chain is gap-free from 1.
            before: dict[str, int] = {}
            for session in sessions:
                seqs = await _stored_seqs(store, session.session_id)
                assert seqs == list(range(1, len(seqs) + 1)), session.session_id
                before[session.session_id] = len(seqs)
            # The same runtime serves a new prompt on every session, continuing its chain.
            with anyio.fail_after(SCENARIO_TIMEOUT):
                for index, session in enumerate(sessions):
                    # Exactly this turn's text: chunks of the interrupted turn that PostgreSQL
                    # committed while their acknowledgement was lost reach the client by the
                    # catch-up before this turn, before the agent says where the turn starts.
                    reply = await _prompt_when_back(session, f"n{index}")
                    assert reply == f"back: n{index}", reply
            for session in sessions:
                seqs = await _stored_seqs(store, session.session_id)
                assert seqs == list(range(1, len(seqs) + 1)), session.session_id
                assert len(seqs) > before[session.session_id]
            # Every stored chunk reached its client once, in order (the catch-up included).
            with anyio.fail_after(SCENARIO_TIMEOUT):
                for session in sessions:
                    await session.wait_idle()
            for session in sessions:
                stored = await _stored_text(store, session.session_id)
                assert _agent_text(session) == stored, session.session_id

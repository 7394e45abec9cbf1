"""Two ``accord serve`` processes on one PostgreSQL database share their sessions.

Each agent is a real ``python -m accord.cli serve --store postgresql://...`` process; the model
is the fake OpenAI-compatible server on loopback in this process. What one process stored, the
other lists and loads (replay included) and continues; when the process running a turn is
killed, another one takes the session over.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from helpers.postgres import fresh_schema, server_down
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.client import (
    AllowAll,
    ClientSession,
    ConnectedAgent,
    ToolCallUpdated,
    TurnResult,
    connect,
)
from accord.errors import RequestError
from accord.schema import TerminalToolCallContent
from accord.store import PostgresSessionStore, iter_events
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall
from accord.transports import spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

ENV = {"OPENAI_API_KEY": "test", "ACCORD_MODEL": "", "ACCORD_BASE_URL": ""}


def serve_command(server: FakeOpenAIServer, url: str) -> list[str]:
    return [
        *(sys.executable, "-m", "accord.cli", "serve", "--store", url),
        *("--model", "openai:fake-model", "--base-url", server.base_url),
    ]


@asynccontextmanager
async def agent(
    server: FakeOpenAIServer, project: Path, url: str
) -> AsyncGenerator[ConnectedAgent]:
    async with connect(
        serve_command(server, url),
        cwd=project,
        env=ENV,
        permission_policy=AllowAll(),
        terminals=True,
    ) as connection:
        yield connection


async def test_a_session_stored_by_one_server_is_listed_and_loaded_by_another(
    project: Path,
) -> None:
    script = [ScriptedReply(text=["Noted: 42."]), ScriptedReply(text=["You said 42."])]
    with fresh_schema() as url, FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with agent(server, project, url) as first, agent(server, project, url) as second:
                session = await first.new_session(project)
                await session.prompt("Remember the number 42.")
                listed = await second.list_sessions(cwd=str(project))
                assert [info.session_id for info in listed.sessions] == [session.session_id]
                loaded = await second.load_session(session.session_id, project)
                replayed = [(m.role, m.text) for m in loaded.view.messages]
                assert replayed == [("user", "Remember the number 42."), ("agent", "Noted: 42.")]
                result = await loaded.prompt("Which number?")
    assert result.text == "You said 42."
    assert [m["content"] for m in server.requests[1].messages[1:4]] == [
        "Remember the number 42.",
        "Noted: 42.",
        "Which number?",
    ]


async def _start_a_turn_and_kill_its_process(
    server: FakeOpenAIServer, project: Path, url: str
) -> str:
    """Run a turn in one ``accord serve`` until its command runs, then kill -9 the process;
    return the session id."""
    session_id = ""
    killed = False
    try:
        async with (
            spawn_agent(serve_command(server, url), cwd=project, env=ENV) as transport,
            connect(transport, permission_policy=AllowAll(), terminals=True) as first,
        ):
            session = await first.new_session(project)
            session_id = session.session_id
            async with session.stream("Run the slow thing.") as stream:
                async for event in stream:
                    running = isinstance(event, ToolCallUpdated) and any(
                        isinstance(c, TerminalToolCallContent) for c in event.tool_call.content
                    )
                    if running and not killed:
                        os.kill(transport.pid, signal.SIGKILL)
                        killed = True
    except Exception:  # the connection dies with its agent: expected once it was killed
        if not killed:
            raise
    assert killed, "the turn never reached its command"
    return session_id


async def test_the_owner_killed_mid_turn_is_taken_over_by_another_server(project: Path) -> None:
    """kill -9 of the process running a turn: another process replays what it committed,
    closes its unfinished tool call, and runs the next turn at once."""
    slow = ScriptedToolCall(name="run_command", arguments={"command": "sleep 30"})
    script = [ScriptedReply(tool_calls=[slow]), ScriptedReply(text=["Picked up where it stopped."])]
    with fresh_schema() as url, FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            session_id = await _start_a_turn_and_kill_its_process(server, project, url)
            async with agent(server, project, url) as second:
                loaded = await second.load_session(session_id, project)
                users = [m.text for m in loaded.view.messages if m.role == "user"]
                assert users == ["Run the slow thing."]
                (command,) = loaded.view.tool_calls.values()
                assert command.status not in ("pending", "in_progress")
                result = await loaded.prompt("Go on.")
            chain = await _stored_chain(url, session_id)
    assert result.text == "Picked up where it stopped."
    # The stored chain, the killed owner's events then the new owner's: no gap, no duplicate.
    assert [seq for seq, _ in chain] == list(range(1, len(chain) + 1))
    kinds = [kind for _, kind in chain]
    assert kinds.count("user_message_chunk") == 2  # each prompt stored once
    assert kinds.count("tool_call_started") == kinds.count("tool_call_ended") == 1
    # the killed turn never completed; the taken-over one did, last
    assert kinds.count("turn_completed") == 1 and kinds[-1] == "turn_completed"


async def _stored_chain(url: str, session_id: str) -> list[tuple[int, str]]:
    """Every stored event of ``session_id`` as ``(seq, kind)``, read straight from the database."""
    async with PostgresSessionStore(url) as store:
        return [
            (event.seq, event.kind)
            async for batch in iter_events(store, session_id)
            for event in batch
        ]


def _command_running(session: ClientSession) -> bool:
    return any(
        isinstance(content, TerminalToolCallContent)
        for call in session.view.tool_calls.values()
        for content in call.content
    )


async def test_a_client_on_another_server_sees_the_turn_live_then_takes_over(
    project: Path,
) -> None:
    """Two ``accord serve`` processes on one database: the client attached through B sees
    the turn A runs as it happens (its prompt, its command running) and B answers busy to a
    prompt meanwhile; kill -9 of A mid-turn, and B's next prompt carries on from what A
    committed, without the client loading the session again."""
    slow = ScriptedToolCall(name="run_command", arguments={"command": "sleep 30"})
    script = [ScriptedReply(tool_calls=[slow]), ScriptedReply(text=["Carried on here."])]
    with fresh_schema() as url, FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with (
                spawn_agent(serve_command(server, url), cwd=project, env=ENV) as a_transport,
                connect(a_transport, permission_policy=AllowAll(), terminals=True) as on_a,
                agent(server, project, url) as on_b,
            ):
                session = await on_a.new_session(project)
                watched = await on_b.load_session(session.session_id, project)
                async with anyio.create_task_group() as tg:

                    async def run_on_a() -> None:
                        with contextlib.suppress(Exception):  # A is killed mid-turn
                            await session.prompt("Run the slow thing.")

                    tg.start_soon(run_on_a)
                    # B's client sees A's turn while it runs: the prompt, then the command.
                    while not _command_running(watched):  # noqa: ASYNC110 - no change event
                        await anyio.sleep(0.05)
                    users = [m.text for m in watched.view.messages if m.role == "user"]
                    assert users == ["Run the slow thing."]
                    with pytest.raises(RequestError) as busy:
                        await watched.prompt("Me too.")
                    assert busy.value.code == -32602
                    assert busy.value.data["reason"] == "busy"
                    os.kill(a_transport.pid, signal.SIGKILL)
                    await a_transport.process.wait()  # reaped: B can tell it is gone
                    tg.cancel_scope.cancel()
                # A is dead: the client's next prompt through B (no reload) carries on from
                # what A committed; the command A left running is closed first.
                result = await watched.prompt("Go on.")
                (command,) = watched.view.tool_calls.values()
                assert command.status not in ("pending", "in_progress")
    assert result.text == "Carried on here."


async def test_the_database_going_away_under_a_running_server(project: Path) -> None:
    """The database stops under a running ``accord serve``: prompts get a clear error (not a
    hang, not a crash of the server), the same server works again once the database is back,
    and nothing it had committed is lost."""
    script = [ScriptedReply(text=["First answer."]), ScriptedReply(text=["After the outage."])]
    with fresh_schema() as url, FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT * 2):
            async with agent(server, project, url) as served:
                session = await served.new_session(project)
                assert (await session.prompt("Before.")).text == "First answer."
                with server_down():
                    with pytest.raises(RequestError) as down:
                        await session.prompt("During.")
                    assert down.value.code == -32603
                    assert "PostgreSQL at 127.0.0.1" in down.value.message
                    assert "postgres@" not in down.value.message  # no credentials shown
                    listing_error = await _listing_error(served, project)
                    assert "PostgreSQL at 127.0.0.1" in listing_error
                result = await _prompt_when_back(session, "After.")
                assert result.text == "After the outage."
            async with agent(server, project, url) as fresh:
                loaded = await fresh.load_session(session.session_id, project)
                texts = [(m.role, m.text) for m in loaded.view.messages]
    assert ("user", "Before.") in texts
    assert ("agent", "First answer.") in texts
    assert texts[-2:] == [("user", "After."), ("agent", "After the outage.")]


async def _listing_error(connection: ConnectedAgent, project: Path) -> str:
    with pytest.raises(RequestError) as caught:
        await connection.list_sessions(cwd=str(project))
    return caught.value.message


async def _prompt_when_back(session: ClientSession, text: str) -> TurnResult:
    """Prompt until the server's store has reconnected (each failure is the clear error)."""
    errors: list[str] = []
    for _attempt in range(40):
        try:
            return await session.prompt(text)
        except RequestError as error:
            errors.append(error.message)
            await anyio.sleep(0.5)
    assert all("PostgreSQL at 127.0.0.1" in error for error in errors), errors
    pytest.fail("the server never recovered after the database came back")


async def test_a_cursor_from_one_server_resumes_on_the_other(project: Path) -> None:
    """A client's delivery cursor (``_meta["acp/cursor"]``) from process A resumes the session
    on process B: B sends exactly what came after it, nothing before."""
    script = [ScriptedReply(text=["First answer."]), ScriptedReply(text=["Second answer."])]
    with fresh_schema() as url, FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with agent(server, project, url) as on_a:
                session = await on_a.new_session(project)
                await session.prompt("One.")
                cursor = session.cursor
                assert cursor is not None
                await session.prompt("Two.")
            async with agent(server, project, url) as on_b:
                resumed = await on_b.resume_session(session.session_id, project, cursor=cursor)
                await resumed.wait_idle()
                texts = [(m.role, m.text) for m in resumed.view.messages]
    assert texts == [("user", "Two."), ("agent", "Second answer.")]


TOKEN = "pg-e2e-token-0123456789abcdef"


@asynccontextmanager
async def listening_server(
    server: FakeOpenAIServer, project: Path, url: str
) -> AsyncGenerator[str]:
    """A real ``accord serve --listen 127.0.0.1:0 --store postgresql://...`` process; yields
    its WebSocket URL once it listens."""
    env = {**os.environ, **ENV, "ACCORD_TOKEN": TOKEN, "ACCORD_CONFIG": os.devnull + ".missing"}
    command = [*serve_command(server, url), "--listen", "127.0.0.1:0"]
    async with await anyio.open_process(
        command, cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    ) as process:
        assert process.stderr is not None
        seen = ""
        found = None
        async for chunk in process.stderr:
            seen += chunk.decode(errors="replace")
            found = re.search(r"listening on (\S+)", seen)
            if found:
                break
        assert found, f"accord serve --listen did not start: {seen}"

        async def drain() -> None:
            assert process.stderr is not None
            async for _chunk in process.stderr:
                pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain)
            try:
                yield found.group(1)
            finally:
                process.terminate()
                with anyio.move_on_after(TIMEOUT):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                tg.cancel_scope.cancel()


async def test_a_prompt_through_the_watching_server_continues_from_the_other_s_turn(
    project: Path,
) -> None:
    """Two ``accord serve --listen`` processes on one database. A client of B watches a turn
    that runs in A; once it ends, the same client prompts through B, without loading the
    session again: B's copy (history, next seq) has followed A's turn, so the model gets the
    whole conversation and the client has every message once, in order."""
    script = [ScriptedReply(text=["Noted: 42."]), ScriptedReply(text=["You said 42."])]
    with fresh_schema() as url, FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with (
                listening_server(server, project, url) as url_a,
                listening_server(server, project, url) as url_b,
                connect(url_a, token=TOKEN, reconnect=False) as on_a,
                connect(url_b, token=TOKEN, reconnect=False) as on_b,
            ):
                session = await on_a.new_session(project)
                watched = await on_b.load_session(session.session_id, project)
                first = await session.prompt("Remember the number 42.")
                assert first.text == "Noted: 42."
                while not any(m.text == "Noted: 42." for m in watched.view.messages):  # noqa: ASYNC110
                    await anyio.sleep(0.02)  # relayed live from A through the database
                result = await watched.prompt("Which number?")
                seen = [(m.role, m.text) for m in watched.view.messages]
    assert result.text == "You said 42."
    assert [m["content"] for m in server.requests[1].messages[1:4]] == [
        "Remember the number 42.",
        "Noted: 42.",
        "Which number?",
    ]
    assert seen == [
        ("user", "Remember the number 42."),
        ("agent", "Noted: 42."),
        ("user", "Which number?"),
        ("agent", "You said 42."),
    ]


RACE_ROUNDS = 4


async def _race_prompt(
    side: str,
    session: ClientSession,
    text: str,
    go: anyio.Event,
    ran: list[str],
    refused: list[tuple[int, object]],
) -> None:
    """Prompt ``text`` through ``session`` once ``go`` is set; note whether it ran or how it
    was refused."""
    await go.wait()
    try:
        await session.prompt(text)
    except RequestError as error:
        data = cast(dict[str, Any], error.data or {})
        refused.append((error.code, data.get("reason")))
    else:
        ran.append(side)


async def test_two_listening_servers_racing_to_prompt_one_session_run_exactly_one_turn(
    project: Path,
) -> None:
    """Two ``accord serve --listen`` processes on one database, a client of each with the
    session open; both prompt at the same instant, round after round. Each round exactly one
    turn runs and the other client is refused busy (-32602, reason ``busy``); the stored chain
    has no gap and exactly one prompt and one completed turn per round."""
    script = [ScriptedReply(text=[f"Answer {n}", "."], delay=0.1) for n in range(RACE_ROUNDS)]
    with fresh_schema() as url, FakeOpenAIServer(script) as server:
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with (
                listening_server(server, project, url) as url_a,
                listening_server(server, project, url) as url_b,
                connect(url_a, token=TOKEN, reconnect=False) as on_a,
                connect(url_b, token=TOKEN, reconnect=False) as on_b,
            ):
                session = await on_a.new_session(project)
                watched = await on_b.load_session(session.session_id, project)
                refused: list[tuple[int, object]] = []
                for n in range(RACE_ROUNDS):
                    ran: list[str] = []
                    go = anyio.Event()
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_race_prompt, "a", session, f"round {n}", go, ran, refused)
                        tg.start_soon(_race_prompt, "b", watched, f"round {n}", go, ran, refused)
                        await anyio.sleep(0.05)
                        go.set()
                    assert len(ran) == 1, (n, ran, refused)
            chain = await _stored_chain(url, session.session_id)
    assert refused == [(-32602, "busy")] * RACE_ROUNDS
    assert len(server.requests) == RACE_ROUNDS  # the model was asked once per round
    assert [seq for seq, _ in chain] == list(range(1, len(chain) + 1))
    kinds = [kind for _, kind in chain]
    assert kinds.count("user_message_chunk") == RACE_ROUNDS
    assert kinds.count("turn_completed") == RACE_ROUNDS

"""``accord chat --agent ws://...``: the TUI on an agent served by a real ``accord serve
--listen`` process on loopback (the built-in agent on the fake model server).

The conversation over the network; a server that goes away and comes back (the app says it
is reconnecting, then carries on in the same session); attached to a session another client
has open, the observer mark until it prompts; a wrong token.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import Popen

import pytest
from _tui_support import SIZE, chat_app, text_of, until
from helpers.accord_serve import accord_env, accord_serve
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT
from textual.widgets import TextArea

from accord.client import connect
from accord.schema import Implementation
from accord.testing import FakeOpenAIServer, ScriptedReply
from accord.tui._conversation import AgentMessage

pytest.importorskip("wsproto")

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess, pytest.mark.timeout(240)]

TOKEN = "tui-remote-token-0123456789abcdef"


@contextmanager
def serve_on(model_url: str, store: Path, port: int = 0) -> Iterator[tuple[str, Popen[str]]]:
    """``accord serve --listen`` with the built-in agent on the fake model and a store file."""
    args = ("--model", "openai:fake", "--base-url", model_url, "--store", str(store))
    with accord_serve(*args, env=accord_env(ACCORD_TOKEN=TOKEN), port=port) as served:
        yield served


async def test_chat_with_a_served_agent_over_websocket_across_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prompt typed in the TUI goes over the WebSocket to the served agent and its reply is
    drawn. The server is stopped: the footer says ``reconnecting`` (no failure, no hang); a
    new server on the same port and store comes up: the app resumes the session by itself,
    and the next prompt continues the same conversation."""
    monkeypatch.setenv("ACCORD_TOKEN", TOKEN)
    store = tmp_path / "store.sqlite3"
    script = [
        ScriptedReply(text=["Served ", "over the network."]),
        ScriptedReply(text=["Still here after the restart."]),
    ]
    with (
        FakeOpenAIServer(script) as model,
        serve_on(model.base_url, store) as (url, server),
    ):
        assert url.startswith("ws://127.0.0.1:")
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        app = chat_app(url, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.active_pane is not None or app.failed, SCENARIO_TIMEOUT)
            assert not app.failed, text_of(app.query_one("#failure"))
            pane = app.active_pane
            assert pane is not None
            session_id = pane.session.session_id
            await pilot.press(*"hello", "enter")
            await until(pilot, lambda: app.last_stop_reason, within=SCENARIO_TIMEOUT)
            await until(pilot, lambda: not pane.conversation.pending)
            replies = [m.source for m in pane.query(AgentMessage)]
            assert replies == ["Served over the network."]

            server.terminate()
            server.wait(timeout=TIMEOUT)
            await until(pilot, lambda: app.reconnecting, within=SCENARIO_TIMEOUT)
            assert "reconnecting" in text_of(app.query_one("#footer"))
            assert not app.failed

            with serve_on(model.base_url, store, port):
                await until(pilot, lambda: not app.reconnecting, within=SCENARIO_TIMEOUT)
                assert not app.failed
                assert app.connection_status is not None
                assert app.connection_status.startswith("reconnected")
                assert app.active_pane is pane and pane.session.session_id == session_id
                app.last_stop_reason.clear()
                await pilot.press(*"again", "enter")
                await until(pilot, lambda: app.last_stop_reason, within=SCENARIO_TIMEOUT)
                await until(pilot, lambda: not pane.conversation.pending)
                assert app.last_stop_reason[session_id] == "end_turn"
                replies = [m.source for m in pane.query(AgentMessage)]
                assert replies == ["Served over the network.", "Still here after the restart."]


async def test_a_wrong_token_is_said_in_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCORD_TOKEN", "not-the-token-0123456789abcdef")
    with (
        FakeOpenAIServer([]) as model,
        serve_on(model.base_url, tmp_path / "store.sqlite3") as (url, _),
    ):
        app = chat_app(url, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.failed, within=SCENARIO_TIMEOUT)
            text = text_of(app.query_one("#failure"))
            assert "401" in text or "token" in text.lower(), text
            assert TOKEN not in text


async def test_attached_to_a_live_session_it_is_an_observer_until_it_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another client has a session open on the served agent; ``accord chat --session ID
    --resume`` attaches to it: the footer says ``observer`` (the other client's turn shows up
    live), until this client prompts and becomes a participant."""
    monkeypatch.setenv("ACCORD_TOKEN", TOKEN)
    script = [
        ScriptedReply(text=["From the first client."]),
        ScriptedReply(text=["From the TUI."]),
    ]
    with (
        FakeOpenAIServer(script) as model,
        serve_on(model.base_url, tmp_path / "store.sqlite3") as (url, _),
    ):
        async with connect(url, cwd=tmp_path) as first:
            session = await first.new_session(tmp_path)
            app = chat_app(url, tmp_path, session_id=session.session_id, resume=True)
            async with app.run_test(size=SIZE) as pilot:
                await until(
                    pilot, lambda: app.active_pane is not None or app.failed, SCENARIO_TIMEOUT
                )
                assert not app.failed, text_of(app.query_one("#failure"))
                pane = app.active_pane
                assert pane is not None
                footer = app.query_one("#footer")
                await until(pilot, lambda: "observer" in text_of(footer))
                assert pane.session.observer

                result = await session.prompt("hello from the first client")
                assert result.text == "From the first client."
                await until(
                    pilot,
                    lambda: (
                        [m.source for m in pane.query(AgentMessage)] == ["From the first client."]
                    ),
                    within=SCENARIO_TIMEOUT,
                )
                assert "observer" in text_of(footer)

                await pilot.press(*"my turn", "enter")
                await until(pilot, lambda: app.last_stop_reason, within=SCENARIO_TIMEOUT)
                assert not pane.session.observer
                await until(pilot, lambda: "observer" not in text_of(footer))


async def test_joined_while_another_client_s_turn_runs_it_says_whose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``accord chat --session ID --resume`` while another client (Zed) runs a turn: the footer
    and the prompt say ``Zed is running a turn`` until the agent says it ended."""
    monkeypatch.setenv("ACCORD_TOKEN", TOKEN)
    script = [
        ScriptedReply(text=[f"step{n} " for n in range(400)], delay=0.05),
        ScriptedReply(text=["From the TUI."]),
    ]
    info = Implementation(name="zed", title="Zed", version="1")
    with (
        FakeOpenAIServer(script) as model,
        serve_on(model.base_url, tmp_path / "store.sqlite3") as (url, _),
    ):
        async with connect(url, cwd=tmp_path, client_info=info) as first:
            session = await first.new_session(tmp_path)
            stream = session.stream("a long job")
            async with stream:
                await anext(aiter(stream))  # the turn runs
                app = chat_app(url, tmp_path, session_id=session.session_id, resume=True)
                async with app.run_test(size=SIZE) as pilot:
                    await until(
                        pilot, lambda: app.active_pane is not None or app.failed, SCENARIO_TIMEOUT
                    )
                    assert not app.failed, text_of(app.query_one("#failure"))
                    footer = app.query_one("#footer")
                    prompt = app.query_one("#prompt", TextArea)
                    await until(pilot, lambda: "Zed is running a turn" in text_of(footer))
                    assert "observer" in text_of(footer)
                    assert prompt.placeholder == "Zed is running a turn"

                    await session.cancel()
                    async for _ in stream:
                        pass
                    # The agent says the turn ended: the mark goes, the observer one stays.
                    await until(pilot, lambda: "running a turn" not in text_of(footer))
                    assert prompt.placeholder == ""
                    assert "observer" in text_of(footer)

                    await pilot.press(*"my turn", "enter")
                    await until(pilot, lambda: app.last_stop_reason, within=SCENARIO_TIMEOUT)
                    await until(pilot, lambda: "observer" not in text_of(footer))

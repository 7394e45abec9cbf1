"""Sessions: tabs, the picker (load, fork, delete), mode selectors, and a failing agent."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _tui_support import SIZE, chat_app, text_of, until
from helpers.script_agent import script_agent
from textual.widgets import Select, TabbedContent

from accord.agent import AgentRuntime
from accord.engines import EngineCapabilities
from accord.schema import SessionMode
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine
from accord.tui._conversation import UserMessage
from accord.tui._picker import SessionPicker

pytestmark = pytest.mark.anyio


def shown_prompts(app) -> list[str]:  # type: ignore[no-untyped-def]
    pane = app.active_pane
    return [
        w.message.text for w in pane.conversation.items if isinstance(w, UserMessage) and w.display
    ]


async def idle(pilot, app) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: app.active_pane is not None)
    await until(pilot, lambda: app.active_pane.session.state == "idle")


async def pick(pilot, app, session_id: str, key: str) -> None:  # type: ignore[no-untyped-def]
    """Open the picker, move to ``session_id``'s row and press ``key``."""
    await pilot.press("ctrl+o")
    await until(pilot, lambda: isinstance(app.screen, SessionPicker))
    rows = [info.session_id for info in app.screen.sessions]
    await pilot.press(*["down"] * rows.index(session_id), key)


async def test_tabs_the_picker_loads_forks_and_deletes(tmp_path: Path) -> None:
    store = MemorySessionStore()
    app = chat_app(AgentRuntime(ScriptedEngine(), store=store), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        await pilot.press(*"first", "enter")
        await until(pilot, lambda: app.last_stop_reason)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: len(app.panes) == 2)
        await idle(pilot, app)
        await pilot.press(*"second", "enter")
        await until(pilot, lambda: len(app.last_stop_reason) == 2)
        assert app.active_pane is app.panes[1]
        await pilot.press("alt+right")
        assert app.active_pane is app.panes[0]
        assert shown_prompts(app) == ["first"]
        first_id = app.panes[0].session.session_id

    app = chat_app(AgentRuntime(ScriptedEngine(), store=store), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        assert {"load", "resume", "fork", "delete"} <= picker.actions
        listed = [info.session_id for info in picker.sessions]
        # The two prompted ones; this tab's new session, never prompted, is not history.
        assert first_id in listed and len(listed) == 2
        await pilot.press(*["down"] * listed.index(first_id), "enter")
        await until(pilot, lambda: len(app.panes) == 2)
        await until(pilot, lambda: shown_prompts(app) == ["first"])  # the history replayed

        await pick(pilot, app, first_id, "f")
        await until(pilot, lambda: len(app.panes) == 3)
        assert app.active_pane is not None
        assert app.active_pane.session.session_id not in listed

        await pick(pilot, app, first_id, "d")
        assert isinstance(app.screen, SessionPicker)  # once only asks to press again
        await pilot.press("d")
        await until(pilot, lambda: not isinstance(app.screen, SessionPicker))
        await until(pilot, lambda: len(app.panes) == 2)  # its tab closed too
    remaining = [s.session_id for s in (await store.list_sessions()).sessions]
    assert first_id not in remaining


async def test_the_picker_resumes_a_stored_session_without_replay(tmp_path: Path) -> None:
    """``r`` in the picker resumes: the session opens without its history replayed, and
    what is said next is added to the same stored session (loading it shows both)."""
    store = MemorySessionStore()
    app = chat_app(AgentRuntime(ScriptedEngine(), store=store), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        await pilot.press(*"first", "enter")
        await until(pilot, lambda: app.last_stop_reason)
        first_id = app.panes[0].session.session_id

    app = chat_app(AgentRuntime(ScriptedEngine(), store=store), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        await pick(pilot, app, first_id, "r")
        await until(pilot, lambda: len(app.panes) == 2)
        resumed = app.active_pane
        assert resumed is not None and resumed.session.session_id == first_id
        await idle(pilot, app)
        assert shown_prompts(app) == []  # resumed, not replayed
        await pilot.press(*"again", "enter")
        await until(pilot, lambda: first_id in app.last_stop_reason)
        assert shown_prompts(app) == ["again"]

    app = chat_app(AgentRuntime(ScriptedEngine(), store=store), tmp_path, session_id=first_id)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        await until(pilot, lambda: shown_prompts(app) == ["first", "again"])


async def test_the_pickers_n_starts_a_session_and_ctrl_g_closes_a_tab(tmp_path: Path) -> None:
    """``n`` in the picker opens a new, empty session in a tab of its own; Ctrl-G closes
    the active tab (and its session) and leaves the other one on screen."""
    app = chat_app(AgentRuntime(ScriptedEngine(), store=MemorySessionStore()), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        await pilot.press(*"first", "enter")
        await until(pilot, lambda: app.last_stop_reason)
        first = app.panes[0]
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, SessionPicker))
        await until(pilot, lambda: len(app.panes) == 2)
        new = app.active_pane
        assert new is not None and new is not first
        assert new.session.session_id != first.session.session_id
        assert app.query_one("#tabs", TabbedContent).tab_count == 2
        await idle(pilot, app)
        assert shown_prompts(app) == []  # a new session: nothing said yet
        await pilot.press(*"second", "enter")
        await until(pilot, lambda: new.session.session_id in app.last_stop_reason)
        assert shown_prompts(app) == ["second"]

        await pilot.press("ctrl+g")
        await until(pilot, lambda: len(app.panes) == 1)
        assert app.panes == (first,)
        assert app.active_pane is first
        assert app.query_one("#tabs", TabbedContent).tab_count == 1
        assert shown_prompts(app) == ["first"]
        assert new.session.state == "closed"


async def test_modes_are_a_selector_and_the_footer_shows_the_mode(tmp_path: Path) -> None:
    modes = (SessionMode(id="ask", name="Ask"), SessionMode(id="code", name="Code"))
    engine = ScriptedEngine(capabilities=EngineCapabilities(modes=modes, default_mode_id="ask"))
    app = chat_app(AgentRuntime(engine, store=MemorySessionStore()), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        footer = app.query_one("#footer")
        await until(pilot, lambda: "mode Ask" in text_of(footer))
        select = app.query_one(".select-mode", Select)
        assert select.value == "ask"
        select.value = "code"
        await until(pilot, lambda: engine.sessions[0].modes_set == ["code"])
        await until(pilot, lambda: "mode Code" in text_of(footer))
        assert app.active_pane is not None
        assert app.active_pane.session.view.current_mode_id == "code"


async def test_an_agent_that_fails_to_start_shows_its_stderr(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('fatal: OPENAI_API_KEY is not set\\n'); sys.exit(7)",
    ]
    app = chat_app(command, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.failed)
        text = text_of(app.query_one("#failure"))
        assert "The agent exited with code 7." in text
        assert "fatal: OPENAI_API_KEY is not set" in text
        assert "failed" in text_of(app.query_one("#footer"))


async def test_an_agent_that_dies_during_a_turn_shows_its_stderr(tmp_path: Path) -> None:
    app = chat_app(script_agent("crash"), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        await pilot.press(*"go", "enter")
        await until(pilot, lambda: app.failed)
        text = text_of(app.query_one("#failure"))
        assert "The agent exited with code 3." in text
        assert "RuntimeError: model exploded" in text

"""``accord chat`` against third-party agents: the official TypeScript SDK's example agent and
fast-agent (both installed by ``scripts/fetch_interop_agents.sh``; skipped when missing).

The app runs headless (Textual's test driver) on the spawned agent; the tests drive it with
keys as a person would, and read back what it shows.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.timeouts import SCENARIO_TIMEOUT
from textual.pilot import Pilot

pytest.importorskip("textual")

from accord.client import AgentSpec
from accord.tui import ChatApp
from accord.tui._conversation import AgentMessage
from accord.tui._permission import PermissionScreen
from accord.tui._tool_card import ToolCard

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.asyncio_only("Textual runs on asyncio"),
    pytest.mark.interop,
    pytest.mark.subprocess,
]


def chat(command: AgentSpec, cwd: Path) -> ChatApp:
    async def build() -> AgentSpec:
        return command

    return ChatApp(build, agent_name="interop agent", cwd=str(cwd))


async def until(pilot: Pilot[Any], predicate: Any) -> None:
    with anyio.fail_after(SCENARIO_TIMEOUT):  # npm and fast-agent programs start slowly
        while not predicate():
            await pilot.pause(0.05)


@pytest.mark.timeout(240)
async def test_the_typescript_sdk_example_agent(sdk1_agent: list[str], tmp_path: Path) -> None:
    """It streams text, runs a read tool call, and asks permission for an edit."""
    app = chat(sdk1_agent, tmp_path)
    async with app.run_test(size=(100, 36)) as pilot:
        await until(pilot, lambda: app.active_pane is not None or app.failed)
        assert not app.failed
        pane = app.active_pane
        assert pane is not None
        await pilot.press(*"hello", "enter")
        await until(pilot, lambda: isinstance(app.question, PermissionScreen))
        assert "edit" in str(app.screen.query_one("#question").render())
        await pilot.press("a")
        await until(pilot, lambda: app.last_stop_reason)
        await until(pilot, lambda: not pane.conversation.pending)
        cards = list(pane.query(ToolCard))
        assert [card.state.kind for card in cards] == ["read", "edit"]
        assert all(card.state.status == "completed" for card in cards)
        assert any(message.source.strip() for message in pane.query(AgentMessage))


@pytest.mark.timeout(240)
async def test_fast_agent_passthrough(fast_agent: Path, tmp_path: Path) -> None:
    """Echo, then a tool call whose permission is asked in the modal; its sessions listed."""
    notes = tmp_path / "notes.txt"
    notes.write_text("line one\n")
    command = [str(fast_agent), "--no-update-check", "acp", "--model", "passthrough"]
    app = chat(command, tmp_path)
    async with app.run_test(size=(100, 36)) as pilot:
        await until(pilot, lambda: app.active_pane is not None or app.failed)
        assert not app.failed, str(app.query_one("#failure").render())
        pane = app.active_pane
        assert pane is not None
        await pilot.press(*"hello there", "enter")
        await until(pilot, lambda: app.last_stop_reason)
        await until(pilot, lambda: not pane.conversation.pending)
        assert [m.source for m in pane.query(AgentMessage)] == ["hello there"]

        app.last_stop_reason.clear()
        call = f'***CALL_TOOL read_text_file {{"path": "{notes}"}}'
        area = app.query_one("#prompt")
        area.insert(call)  # type: ignore[attr-defined]
        await pilot.press("escape", "enter")
        await until(pilot, lambda: isinstance(app.question, PermissionScreen))
        await pilot.press("a")
        await until(pilot, lambda: app.last_stop_reason)
        await until(pilot, lambda: pane.query(ToolCard))
        (card,) = pane.query(ToolCard)
        assert card.state.kind == "read"
        await until(pilot, lambda: card.state.finished)

        await pilot.press("ctrl+o")
        await until(pilot, lambda: app.screen.__class__.__name__ == "SessionPicker")
        sessions: Any = app.screen
        assert pane.session.session_id in [info.session_id for info in sessions.sessions]
    assert sys.executable  # the agents ran as their own processes

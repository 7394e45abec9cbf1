"""Snapshots of the key screens (pytest-textual-snapshot; SVGs under ``__snapshots__``).

Deterministic by construction: a fixed terminal size, fixed ids (the raw agent's session
``raw-1``, fixed tool call ids), no clock in view (the picker's times are the agent's
strings), paths shown relative to the session's directory. Update with
``pytest tests/tui/test_snapshots.py --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _tui_support import SIZE, RawAgent, chat_app, options, until
from textual.pilot import Pilot

from accord.schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    ContentToolCallContent,
    DiffToolCallContent,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    PlanEntry,
    PlanSessionUpdate,
    RequestPermissionRequest,
    SessionInfo,
    TextContentBlock,
    ToolCallLocation,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    ToolCallUpdateSessionUpdate,
)
from accord.tui._permission import PermissionScreen
from accord.tui._picker import SessionPicker
from accord.tui._prompt import PromptArea

OLD = "def greet(name):\n    return 'Hello ' + name\n\n\nprint(greet('world'))\n"
NEW = "def greet(name: str) -> str:\n    return f'Hello, {name}!'\n\n\nprint(greet('world'))\n"
REPLY = (
    "Done: `greet` now has **type hints** and an f-string.\n\n"
    "```python\nprint(greet('accord'))\n```\n"
)


def text(value: str) -> TextContentBlock:
    return TextContentBlock(text=value)


def conversation_agent(cwd: Path) -> RawAgent:
    path = str(cwd / "greet.py")
    return RawAgent(
        [
            [
                AgentThoughtChunkSessionUpdate(content=text("The user wants type hints.")),
                PlanSessionUpdate(
                    entries=[
                        PlanEntry(content="Read greet.py", priority="high", status="completed"),
                        PlanEntry(content="Add type hints", priority="high", status="in_progress"),
                        PlanEntry(content="Run the tests", priority="low", status="pending"),
                    ]
                ),
                ToolCallSessionUpdate(
                    tool_call_id="read-1",
                    title="Read greet.py",
                    kind="read",
                    status="completed",
                    locations=[ToolCallLocation(path=path, line=1)],
                    content=[ContentToolCallContent(content=text("5 lines"))],
                ),
                ToolCallSessionUpdate(
                    tool_call_id="edit-1", title="Edit greet.py", kind="edit", status="pending"
                ),
                ToolCallUpdateSessionUpdate(
                    tool_call_id="edit-1",
                    status="completed",
                    content=[DiffToolCallContent(path=path, old_text=OLD, new_text=NEW)],
                ),
                AgentMessageChunkSessionUpdate(content=text(REPLY)),
            ]
        ]
    )


async def ready(pilot: Pilot[Any]) -> Any:
    """Wait for the session; stop the prompt's cursor blinking (a snapshot is one instant)."""
    app: Any = pilot.app
    app.query_one(PromptArea).cursor_blink = False
    await until(pilot, lambda: app.active_pane is not None)
    return app


async def prompt_and_wait(pilot: Pilot[Any]) -> None:
    app = await ready(pilot)
    await pilot.press(*"add type hints", "enter")
    await until(pilot, lambda: app.last_stop_reason)
    await until(pilot, lambda: not app.active_pane.conversation.pending)
    app.active_pane.conversation.scroll_home(animate=False)
    await pilot.pause()


def test_conversation_with_tool_cards_and_a_diff(snap_compare: Any, tmp_path: Path) -> None:
    app = chat_app(conversation_agent(tmp_path), tmp_path)
    assert snap_compare(app, terminal_size=(110, 60), run_before=prompt_and_wait)


def test_permission_modal(snap_compare: Any, tmp_path: Path) -> None:
    call = ToolCallUpdate(
        tool_call_id="edit-1",
        title="Edit greet.py",
        kind="edit",
        content=[DiffToolCallContent(path=str(tmp_path / "greet.py"), old_text=OLD, new_text=NEW)],
    )
    request = RequestPermissionRequest(
        session_id="", tool_call=call, options=options("allow_once", "allow_always", "reject_once")
    )
    agent = RawAgent([[("ask", request)]])

    async def until_asked(pilot: Pilot[Any]) -> None:
        app = await ready(pilot)
        await pilot.press(*"edit it", "enter")
        await until(pilot, lambda: isinstance(app.question, PermissionScreen))
        await pilot.pause()

    assert snap_compare(chat_app(agent, tmp_path), terminal_size=SIZE, run_before=until_asked)


class StoredSessionsAgent(RawAgent):
    """Lists three fixed sessions and can load them."""

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id="s-3",
                    cwd="/work/accord",
                    title="Add type hints to greet.py",
                    updated_at="2026-11-30T17:42:00Z",
                ),
                SessionInfo(
                    session_id="s-2",
                    cwd="/work/accord",
                    title="Fix the [flaky] test",
                    updated_at="2026-11-29T09:15:00Z",
                ),
                SessionInfo(session_id="s-1", cwd="/home/me/notes", updated_at=None),
            ]
        )

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        return LoadSessionResponse()


def test_session_picker(snap_compare: Any, tmp_path: Path) -> None:
    async def open_picker(pilot: Pilot[Any]) -> None:
        app = await ready(pilot)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        await pilot.pause()

    app = chat_app(StoredSessionsAgent(), tmp_path)
    assert snap_compare(app, terminal_size=SIZE, run_before=open_picker)

"""The permission modal: what it shows, the keys that answer, the bell and the title."""

from __future__ import annotations

from pathlib import Path

import pytest
from _tui_support import SIZE, RawAgent, chat_app, options, text_of, until
from textual_diff_view import DiffView

from accord.schema import (
    CancelledRequestPermissionOutcome,
    DiffToolCallContent,
    RequestPermissionRequest,
    ToolCallSessionUpdate,
    ToolCallUpdate,
)
from accord.tui._app import CHAT_TITLE
from accord.tui._permission import PermissionScreen

pytestmark = pytest.mark.anyio

KINDS = ("allow_once", "allow_always", "reject_once", "reject_always")


def ask(
    tool_call: ToolCallUpdate, kinds: tuple[str, ...] = KINDS
) -> tuple[str, RequestPermissionRequest]:
    return (
        "ask",
        RequestPermissionRequest(session_id="", tool_call=tool_call, options=options(*kinds)),
    )


#: Keys pressed, one question each, and the option each answers (None: cancelled).
ANSWERS = [("a", "opt-1"), ("A", "opt-2"), ("r", "opt-3"), ("R", "opt-4"), ("2", "opt-2")]


async def test_each_option_kind_has_its_key_digits_pick_by_place_and_escape_cancels(
    tmp_path: Path,
) -> None:
    call = ToolCallUpdate(tool_call_id="t", title="Run", kind="execute")
    agent = RawAgent([[ask(call) for _ in range(len(ANSWERS) + 1)]])
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        await pilot.press(*"go", "enter")
        for number, (key, _) in enumerate([*ANSWERS, ("escape", None)]):
            await until(pilot, lambda: isinstance(app.question, PermissionScreen))
            await pilot.press(key)
            await until(pilot, lambda n=number: len(agent.answers) > n)
        await until(pilot, lambda: app.last_stop_reason)
    *selected, cancelled = agent.answers
    assert [o.option_id for o in selected] == [answer for _, answer in ANSWERS]
    assert isinstance(cancelled, CancelledRequestPermissionOutcome)


async def test_the_modal_shows_command_paths_and_every_diff_and_rings_while_waiting(
    tmp_path: Path,
) -> None:
    first, second = str(tmp_path / "a.py"), str(tmp_path / "b.py")
    call = ToolCallUpdate(
        tool_call_id="t",
        title="Apply [i]changes[/i]",
        kind="edit",
        raw_input={"command": "git", "args": ["apply", "patch.diff"]},
        content=[
            DiffToolCallContent(path=first, old_text="a = 1\n", new_text="a = 2\n"),
            DiffToolCallContent(path=second, old_text=None, new_text="new file\n"),
        ],
    )
    agent = RawAgent(
        [[ToolCallSessionUpdate(tool_call_id="t", title="Apply", kind="edit"), ask(call)]]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        assert app.title == CHAT_TITLE
        await pilot.press(*"go", "enter")
        await until(pilot, lambda: isinstance(app.question, PermissionScreen))
        screen = app.screen
        assert "edit: Apply [i]changes[/i]" in text_of(screen.query_one("#question"))
        assert text_of(screen.query_one(".command")) == "git apply patch.diff"
        statics = [text_of(s) for s in screen.query("Static")]
        assert "a.py\nb.py" in statics
        diffs = list(screen.query(DiffView))
        assert [d.path_modified for d in diffs] == ["a.py", "b.py"]
        assert app.bells == 1
        assert app.title != CHAT_TITLE and "permission" in app.title
        await pilot.press("a")
        await until(pilot, lambda: app.last_stop_reason)
        assert app.title == CHAT_TITLE


async def test_a_question_with_no_options_and_only_an_id_can_still_be_answered(
    tmp_path: Path,
) -> None:
    agent = RawAgent([[ask(ToolCallUpdate(tool_call_id="bare"), kinds=())]])
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        await pilot.press(*"go", "enter")
        await until(pilot, lambda: isinstance(app.question, PermissionScreen))
        assert "other: bare" in text_of(app.screen.query_one("#question"))
        await pilot.press("1", "a", "escape")
        await until(pilot, lambda: app.last_stop_reason)
    assert isinstance(agent.answers[0], CancelledRequestPermissionOutcome)

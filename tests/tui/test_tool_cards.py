"""Tool cards: one per id, updated in place; diffs, terminals, folding; agent text literal."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _tui_support import SIZE, RawAgent, chat_app, text_of, until
from textual_diff_view import DiffView

from accord.schema import (
    ContentToolCallContent,
    CreateTerminalRequest,
    DiffToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallSessionUpdate,
    ToolCallUpdateSessionUpdate,
    WaitForTerminalExitRequest,
)
from accord.tui._conversation import ThoughtBlock
from accord.tui._tool_card import TerminalView, ToolCard

pytestmark = pytest.mark.anyio


async def send_prompt(pilot, text: str = "go") -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: pilot.app.active_pane is not None)
    await pilot.press(*text, "enter")


async def test_one_card_per_tool_call_updated_in_place_with_output_and_diff(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "app.py")
    agent = RawAgent(
        [
            [
                ToolCallSessionUpdate(
                    tool_call_id="t1",
                    title="Edit app.py",
                    kind="edit",
                    status="pending",
                    locations=[ToolCallLocation(path=path, line=3)],
                ),
                ToolCallUpdateSessionUpdate(
                    tool_call_id="t1",
                    status="in_progress",
                    content=[ContentToolCallContent(content=TextContentBlock(text="patching"))],
                ),
                ToolCallUpdateSessionUpdate(
                    tool_call_id="t1",
                    status="completed",
                    content=[
                        DiffToolCallContent(
                            path=path, old_text="x = 1\ny = 2\n", new_text="x = 10\ny = 2\n"
                        )
                    ],
                ),
            ]
        ]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await send_prompt(pilot)
        await until(pilot, lambda: app.last_stop_reason)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: not pane.conversation.pending)
        cards = list(pane.query(ToolCard))
        assert len(cards) == 1
        card = cards[0]
        assert card.state.status == "completed"
        header = text_of(card.query_one("_CardHeader"))
        assert "edit Edit app.py" in header and "completed" in header
        assert text_of(card.query_one(".locations")) == "app.py:3"
        diff = card.query_one(DiffView)
        assert diff.path_modified == "app.py"
        assert diff.counts == (1, 1)


async def test_agent_text_never_styles_or_hides_anything(tmp_path: Path) -> None:
    agent = RawAgent(
        [
            [
                ToolCallSessionUpdate(
                    tool_call_id="t1",
                    title="[b]bold[/b] \x1b[31mred\x1b[0m\rover",
                    kind="execute",
                    content=[
                        ContentToolCallContent(
                            content=TextContentBlock(text="[red]out[/red]\x1b]2;pwned\x07")
                        )
                    ],
                )
            ]
        ]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await send_prompt(pilot)
        await until(pilot, lambda: app.last_stop_reason)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: pane.query(ToolCard))
        card = pane.query_one(ToolCard)
        assert "[b]bold[/b] ␛[31mred␛[0m over" in text_of(card.query_one("_CardHeader"))
        assert text_of(card.query_one(".output")) == "[red]out[/red]␛]2;pwned␇"


async def test_expand_all_key_folds_and_unfolds_every_card_and_thought(tmp_path: Path) -> None:
    from accord.schema import AgentThoughtChunkSessionUpdate

    agent = RawAgent(
        [
            [
                AgentThoughtChunkSessionUpdate(content=TextContentBlock(text="hmm")),
                ToolCallSessionUpdate(tool_call_id="a", title="A", kind="read"),
                ToolCallSessionUpdate(tool_call_id="b", title="B", kind="read"),
            ]
        ]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await send_prompt(pilot)
        await until(pilot, lambda: app.last_stop_reason)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: len(pane.query(ToolCard)) == 2)
        foldables = [*pane.query(ToolCard), *pane.query(ThoughtBlock)]
        assert all(widget.expanded for widget in foldables)
        await pilot.press("ctrl+t")
        assert not any(widget.expanded for widget in foldables)
        assert not any(card.query_one("#body").display for card in pane.query(ToolCard))
        await pilot.press("ctrl+t")
        assert all(widget.expanded for widget in foldables)


async def test_enter_or_a_click_on_a_header_folds_that_card_or_thought_alone(
    tmp_path: Path,
) -> None:
    """Enter on a tool card's header, or a click on it, hides that card's body and shows it
    again; the same for a thought; every other card and thought stays as it was."""
    from accord.schema import AgentThoughtChunkSessionUpdate

    agent = RawAgent(
        [
            [
                AgentThoughtChunkSessionUpdate(content=TextContentBlock(text="hmm")),
                ToolCallSessionUpdate(
                    tool_call_id="a",
                    title="A",
                    kind="read",
                    content=[ContentToolCallContent(content=TextContentBlock(text="out a"))],
                ),
                ToolCallSessionUpdate(
                    tool_call_id="b",
                    title="B",
                    kind="read",
                    content=[ContentToolCallContent(content=TextContentBlock(text="out b"))],
                ),
            ]
        ]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await send_prompt(pilot)
        await until(pilot, lambda: app.last_stop_reason)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: len(pane.query(ToolCard)) == 2)
        await until(pilot, lambda: not pane.conversation.pending)
        first, second = pane.query(ToolCard)
        thought = pane.query_one(ThoughtBlock)

        def shown() -> tuple[bool, bool, bool]:
            """Whether each body is shown: card a's, card b's, the thought's text."""
            return (
                first.query_one("#body").display,
                second.query_one("#body").display,
                thought.query_one("#thought").display,
            )

        assert shown() == (True, True, True)
        first.query_one("_CardHeader").focus()
        await pilot.press("enter")
        assert shown() == (False, True, True)
        assert "A" in text_of(first.query_one("_CardHeader"))  # the header stays
        await pilot.press("enter")
        assert shown() == (True, True, True)

        assert await pilot.click(second.query_one("_CardHeader"))
        assert shown() == (True, False, True)
        assert await pilot.click(second.query_one("_CardHeader"))
        assert shown() == (True, True, True)

        header = thought.query_one("_ThoughtHeader")
        header.focus()
        await pilot.press("enter")
        assert shown() == (True, True, False)
        assert "▸ thinking" in text_of(header)
        await pilot.press("enter")
        assert shown() == (True, True, True)
        assert await pilot.click(header)
        assert shown() == (True, True, False)
        assert await pilot.click(header)
        assert shown() == (True, True, True)
        assert "▾ thinking" in text_of(header)


#: A command that prints a line, waits, then prints another.
TWO_LINES = "import time; print('first', flush=True); time.sleep(0.5); print('second')"


class TerminalAgent(RawAgent):
    """Runs a command in a client terminal and embeds it in a tool call."""

    async def prompt(self, request):  # type: ignore[no-untyped-def]
        created = await self.client.create_terminal(
            CreateTerminalRequest(
                session_id=self.session_id,
                command=sys.executable,
                args=[
                    "-c",
                    "import time; print('first', flush=True); time.sleep(0.5); print('second')",
                ],
            )
        )
        await self.send(
            ToolCallSessionUpdate(
                tool_call_id="run",
                title="Run it",
                kind="execute",
                status="in_progress",
                content=[TerminalToolCallContent(terminal_id=created.terminal_id)],
            )
        )
        await self.client.wait_for_terminal_exit(
            WaitForTerminalExitRequest(session_id=self.session_id, terminal_id=created.terminal_id)
        )
        return await super().prompt(request)


async def test_an_embedded_terminal_follows_its_output(tmp_path: Path) -> None:
    app = chat_app(TerminalAgent(), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await send_prompt(pilot)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: pane.query(TerminalView))
        terminal = pane.query_one(TerminalView)
        await until(pilot, lambda: terminal.output and "first" in terminal.output)
        await until(pilot, lambda: terminal.output and "second" in terminal.output)
        assert "first\nsecond" in text_of(terminal)

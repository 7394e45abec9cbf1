"""The conversation view: streamed Markdown, thoughts, user messages, tool cards, the plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from _tui_support import SIZE, chat_app, scripted_agent, until
from textual.widgets import Markdown

from accord.schema import PlanEntry
from accord.testing import Say, SetPlan, Think, UseTool
from accord.tui._conversation import AgentMessage, ThoughtBlock, UserMessage
from accord.tui._tool_card import ToolCard

pytestmark = pytest.mark.anyio

REPLY = "# Result\n\nHere is `code`:\n\n```python\nprint('hi')\n```\n"


async def test_a_turn_shows_the_prompt_the_thought_the_reply_and_a_tool_card(
    tmp_path: Path,
) -> None:
    agent, _ = scripted_agent(
        [
            [
                Think("Let me look."),
                SetPlan((PlanEntry(content="Look", priority="high", status="in_progress"),)),
                UseTool(title="Read main.py", kind="read", result="print('hi')"),
                Say(pieces=tuple(REPLY[i : i + 5] for i in range(0, len(REPLY), 5))),
            ]
        ]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        await pilot.press(*"hello")
        await pilot.press("enter")
        await until(pilot, lambda: app.last_stop_reason)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: not pane.conversation.pending)
        shown = [w for w in pane.conversation.items if w.display]
        kinds = [type(w) for w in shown]
        assert kinds == [UserMessage, ThoughtBlock, ToolCard, AgentMessage]
        reply = shown[-1]
        assert isinstance(reply, AgentMessage)
        assert all(isinstance(part, Markdown) for part in reply.parts)
        assert reply.source == REPLY
        card = shown[2]
        assert isinstance(card, ToolCard)
        assert card.state.status == "completed"
        assert pane.plan.entries[0].content == "Look"

"""Agents that do surprising things: blank chunks, updates outside a turn, null fields, no kinds."""

from __future__ import annotations

from pathlib import Path

import pytest
from _tui_support import SIZE, RawAgent, chat_app, text_of, until
from textual.widgets import Button, TabbedContent

from accord.schema import (
    AgentMessageChunkSessionUpdate,
    ImageContentBlock,
    LoadSessionRequest,
    LoadSessionResponse,
    PermissionOption,
    PlanEntry,
    PlanSessionUpdate,
    RequestPermissionRequest,
    SessionInfoUpdateSessionUpdate,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    ToolCallUpdateSessionUpdate,
    UsageUpdateSessionUpdate,
)
from accord.tui._conversation import WINDOW, AgentMessage
from accord.tui._permission import PermissionScreen
from accord.tui._tool_card import ToolCard

pytestmark = pytest.mark.anyio


def chunk(text: str) -> AgentMessageChunkSessionUpdate:
    return AgentMessageChunkSessionUpdate(content=TextContentBlock(text=text))


async def test_blank_chunks_null_fields_and_updates_outside_a_turn(tmp_path: Path) -> None:
    agent = RawAgent(
        [
            [
                chunk(""),
                chunk("   "),
                AgentMessageChunkSessionUpdate(
                    content=ImageContentBlock(data="", mime_type="image/png")
                ),
                chunk("real text"),
                # an update for a tool call never started, with every optional field null
                ToolCallUpdateSessionUpdate.model_validate(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": "ghost",
                        "title": None,
                        "kind": None,
                        "status": None,
                        "content": None,
                        "locations": None,
                    }
                ),
                PlanSessionUpdate(
                    entries=[PlanEntry(content="one", priority="low", status="pending")]
                ),
                PlanSessionUpdate(entries=[]),
            ]
        ]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        # before any prompt: a title, usage and a chunk the agent sends on its own
        await agent.send(SessionInfoUpdateSessionUpdate(title="Renamed [u]session[/u]"))
        await agent.send(UsageUpdateSessionUpdate(used=12_300, size=200_000))
        await agent.send(chunk("hello before asked"))
        await until(pilot, lambda: pane.query(AgentMessage))
        await until(pilot, lambda: "12.3k/200k (6%)" in text_of(app.query_one("#footer")))
        tabs = app.query_one(TabbedContent)
        await until(pilot, lambda: str(tabs.get_tab("session-1").label) == "Renamed [u]session[/u]")

        await pilot.press(*"go", "enter")
        await until(pilot, lambda: app.last_stop_reason)
        await until(pilot, lambda: not pane.conversation.pending and pane.query(ToolCard))
        replies = [w.source for w in pane.query(AgentMessage)]
        assert replies == ["hello before asked", "   real text"]
        ghost = pane.query_one(ToolCard)
        assert ghost.state.status == "pending" and "ghost" in text_of(
            ghost.query_one("_CardHeader")
        )
        assert pane.plan.entries == () and not pane.plan.display


class LongHistoryAgent(RawAgent):
    """Replays a stored session of 200 tool calls on ``session/load``."""

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        self.session_id = request.session_id
        for n in range(200):
            await self.send(ToolCallSessionUpdate(tool_call_id=f"c{n}", title=f"step {n}"))
        return LoadSessionResponse()


async def test_a_long_session_opens_with_its_latest_items_and_draws_earlier_ones_on_demand(
    tmp_path: Path,
) -> None:
    app = chat_app(LongHistoryAgent(), tmp_path, session_id="old")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: not pane.conversation.pending and pane.query(ToolCard))
        cards = list(pane.query(ToolCard))
        assert len(cards) == WINDOW and cards[0].tool_call_id == f"c{200 - WINDOW}"
        assert pane.conversation.hidden_earlier == 200 - WINDOW
        pane.conversation.scroll_end(animate=False)
        await pilot.pause()
        pane.conversation.scroll_home(animate=False)
        await until(pilot, lambda: pane.conversation.hidden_earlier == 0)
        await until(pilot, lambda: len(pane.query(ToolCard)) == 200)
        assert [c.tool_call_id for c in pane.query(ToolCard)] == [f"c{n}" for n in range(200)]


#: Options the way agents that bend the schema send them: no kind, then one the protocol does not
#: define (decoded as ``unknown`` and sent on as such), then a well-formed one.
ODD_OPTIONS = [
    PermissionOption.model_validate({"optionId": "no-kind", "name": "Missing kind"}),
    PermissionOption.model_validate(
        {"optionId": "sometimes", "name": "Allow sometimes", "kind": "allow_sometimes"}
    ),
    PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
]


@pytest.mark.wire_unchecked("the agent sends permission options without a protocol kind")
async def test_permission_options_without_a_kind_are_shown_and_answered_by_number(
    tmp_path: Path,
) -> None:
    call = ToolCallUpdate(tool_call_id="t", title="Run", kind="execute")
    ask = RequestPermissionRequest(session_id="", tool_call=call, options=ODD_OPTIONS)
    agent = RawAgent([[("ask", ask), ("ask", ask)]])
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        await pilot.press(*"go", "enter")
        await until(pilot, lambda: isinstance(app.question, PermissionScreen))
        labels = [str(button.label) for button in app.screen.query(Button)]
        assert labels == ["[1] Missing kind", "[2] Allow sometimes", "[3/a] Allow once"]
        # no kind key reaches an option of unknown kind: the question stays open
        await pilot.press("r", "A", "R")
        assert isinstance(app.question, PermissionScreen) and agent.answers == []
        await pilot.press("1")
        await until(pilot, lambda: len(agent.answers) == 1)
        await until(pilot, lambda: isinstance(app.question, PermissionScreen))
        await pilot.press("2")
        await until(pilot, lambda: app.last_stop_reason)
    assert [answer.option_id for answer in agent.answers] == ["no-kind", "sometimes"]

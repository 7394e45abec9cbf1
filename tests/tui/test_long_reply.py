"""A long streamed reply: drawn in parts that look like one Markdown document, the parts
far from the rows shown put away and drawn again when scrolled to or after a resize."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from _tui_support import SIZE, RawAgent, chat_app, until
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownParagraph

from accord.client import Message, SessionView
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    LoadSessionRequest,
    LoadSessionResponse,
    PromptRequest,
    PromptResponse,
    TextContentBlock,
    UserMessageChunkSessionUpdate,
)
from accord.tui import _conversation
from accord.tui._conversation import AgentMessage, ReplyPart

pytestmark = pytest.mark.anyio

# Every kind of block, twice over, with a code fence whose opening and closing lines
# arrive split across chunks (the stream below is cut every 7 characters).
DOCUMENT = "".join(
    f"# Part {n}\n\nSome *emphasis*, some `code` and a [link](https://example.com).\n\n"
    "- a list item\n- another, **bold**\n\n"
    "```python\ndef greet(name: str) -> str:\n    return f'Hello, {name}!'\n```\n\n"
    f"> quoted {n}\n\n1. first\n2. second\n\n---\n\n"
    "| a | b |\n| - | - |\n| 1 | 2 |\n\n"
    f"Closing paragraph {n}, long enough to wrap over more than one line of the screen"
    " when it is drawn at this width.\n\n"
    for n in range(2)
)


def chunk(text: str) -> AgentMessageChunkSessionUpdate:
    return AgentMessageChunkSessionUpdate(content=TextContentBlock(text=text))


class ReplyApp(App[None]):
    def __init__(self, reply: Markdown) -> None:
        super().__init__()
        self.reply = reply

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield self.reply


async def test_a_reply_streamed_in_parts_is_drawn_as_one_markdown_document(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_conversation, "PART_BLOCKS", 3)
    size = (90, 160)
    # The reference: the whole reply in one Markdown widget (styled as a reply).
    whole = ReplyApp(ReplyPart())
    async with whole.run_test(size=size) as pilot:
        await pilot.pause()
        await whole.reply.append(DOCUMENT)
        await pilot.pause()
        expected = whole.export_screenshot()

    view = SessionView("s")
    view.apply(chunk(DOCUMENT[:7]))
    message = view.timeline[0]
    assert isinstance(message, Message)
    reply = AgentMessage(message)
    streamed = ReplyApp(reply)
    async with streamed.run_test(size=size) as pilot:
        await pilot.pause()
        first_blocks: list[object] = []
        for index, start in enumerate(range(7, len(DOCUMENT), 7)):
            view.apply(chunk(DOCUMENT[start : start + 7]))
            if index % 3 == 0:  # a frame every few chunks
                await reply.catch_up()
                if len(reply.parts) > 1 and not first_blocks:
                    first_blocks = list(reply.parts[0].children)
        await reply.catch_up()
        await pilot.pause()
        assert len(reply.parts) > 4
        assert all(isinstance(part, Markdown) for part in reply.parts)
        # A sealed part is never touched again: its blocks are the ones it was sealed with.
        assert list(reply.parts[0].children) == first_blocks
        assert reply.source == DOCUMENT
        assert streamed.export_screenshot() == expected


PARAGRAPHS = 120


def paragraph(n: int) -> str:
    return f"Paragraph {n}: " + "".join(f"word{w} " for w in range(8)) + "\n\n"


class SteppedAgent(RawAgent):
    """Streams the reply ten paragraphs at a time, each batch once the test says so (so
    each batch is drawn in its own frames, as a model's stream would be)."""

    def __init__(self) -> None:
        super().__init__()
        self.send_more, self._more = anyio.create_memory_object_stream[int](PARAGRAPHS)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        async for first in self._more:
            for n in range(first, first + 10):
                await self.send(chunk(f"Paragraph {n}: "))
                for w in range(8):
                    await self.send(chunk(f"word{w} "))
                await self.send(chunk("\n\n"))
            if first + 10 >= PARAGRAPHS:
                break
        return PromptResponse(stop_reason="end_turn")


def svg_text(app: App[object]) -> str:
    return app.export_screenshot().replace("&#160;", " ")


async def test_parts_far_above_are_put_away_and_drawn_again_when_scrolled_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_conversation, "PART_BLOCKS", 10)
    agent = SteppedAgent()
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        await pilot.press("x", "enter")
        conversation = pane.conversation
        for first in range(0, PARAGRAPHS, 10):
            await agent.send_more.send(first)
            shown = "".join(paragraph(n) for n in range(first + 10))
            await until(
                pilot,
                lambda shown=shown: (
                    any(
                        isinstance(w, AgentMessage) and w.source == shown
                        for w in conversation.items
                    )
                    and not conversation.pending
                ),
            )
        await until(pilot, lambda: app.last_stop_reason)
        reply = next(w for w in conversation.items if isinstance(w, AgentMessage))
        await until(pilot, lambda: reply.has_away)
        expected = "".join(paragraph(n) for n in range(PARAGRAPHS))
        assert reply.source == expected
        # Following the end of the reply: its last paragraph is on screen, and the parts
        # far above hold no blocks any more (each one empty widget of the same height).
        assert f"Paragraph {PARAGRAPHS - 1}:" in svg_text(app)
        away = [part for part in reply.parts if not part.children]
        assert len(away) >= 5
        assert reply.parts[0] in away
        # Scrolled to the top: the first part is drawn again, at the same place.
        conversation.scroll_home(animate=False)
        await until(pilot, lambda: bool(reply.parts[0].children))
        await pilot.pause()
        assert "Paragraph 0: word0" in svg_text(app)
        assert reply.source == expected
        # A resize changes every height: everything put away is drawn again.
        conversation.scroll_end(animate=False)
        await pilot.pause()
        await pilot.resize_terminal(70, 30)
        await until(pilot, lambda: all(part.children for part in reply.parts))
        await until(pilot, lambda: f"Paragraph {PARAGRAPHS - 1}:" in svg_text(app))


class BurstAgent(RawAgent):
    """Sends the whole reply in one chunk (text that comes faster than frames)."""

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.send(chunk("".join(paragraph(n) for n in range(PARAGRAPHS))))
        return PromptResponse(stop_reason="end_turn")


async def test_a_burst_of_text_far_above_is_put_away_unparsed_and_drawn_when_scrolled_to(
    tmp_path: Path,
) -> None:
    app = chat_app(BurstAgent(), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        await pilot.press("x", "enter")
        await until(pilot, lambda: app.last_stop_reason)
        conversation = pane.conversation
        await until(pilot, lambda: not conversation.pending)
        await pilot.pause()
        reply = next(w for w in conversation.items if isinstance(w, AgentMessage))
        expected = "".join(paragraph(n) for n in range(PARAGRAPHS))
        assert reply.source == expected
        # Only the end was parsed: the parts above hold no blocks, the last one holds the
        # last paragraphs (and no more than a few screens of them), shown on screen.
        assert reply.has_away
        *away, last = reply.parts
        assert away and not any(part.children for part in away)
        assert 0 < len(last.children) < PARAGRAPHS // 2
        assert f"Paragraph {PARAGRAPHS - 1}: word0" in svg_text(app)
        # Scrolled to the top: the first part is parsed and drawn, the others stay away.
        conversation.scroll_home(animate=False)
        await until(pilot, lambda: bool(reply.parts[0].children))
        await pilot.pause()
        screen = svg_text(app)
        assert "Paragraph 0: word0 word1" in screen
        assert "Paragraph 1: word0" in screen
        assert not all(part.children for part in reply.parts)
        assert reply.source == expected
        # Every part drawn (a resize brings them all back): every paragraph is a block of
        # its own, in order, as in one Markdown document.
        await pilot.resize_terminal(70, 30)
        await until(pilot, lambda: all(part.children for part in reply.parts))
        blocks = [block for part in reply.parts for block in part.children]
        assert len(blocks) == PARAGRAPHS
        assert all(isinstance(block, MarkdownParagraph) for block in blocks)
        conversation.scroll_home(animate=False)
        await pilot.pause()
        assert "Paragraph 0: word0 word1" in svg_text(app)


TURNS = 50


class StoredRepliesAgent(RawAgent):
    """Replays a stored session of ``TURNS`` prompts and replies on ``session/load``."""

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        self.session_id = request.session_id
        for n in range(TURNS):
            await self.send(
                UserMessageChunkSessionUpdate(content=TextContentBlock(text=f"Question {n}"))
            )
            await self.send(
                AgentMessageChunkSessionUpdate(
                    content=TextContentBlock(text=f"Answer {n}, in *Markdown*."),
                    message_id=f"m{n}",
                )
            )
        return LoadSessionResponse()


async def test_a_loaded_session_parses_its_far_replies_only_when_scrolled_to(
    tmp_path: Path,
) -> None:
    app = chat_app(StoredRepliesAgent(), tmp_path, session_id="old")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        conversation = pane.conversation
        await until(pilot, lambda: len(conversation.items) == 2 * TURNS)
        await until(pilot, lambda: not conversation.pending)
        await pilot.pause()
        replies = [w for w in conversation.items if isinstance(w, AgentMessage)]
        # Each reply fills itself in its own task once mounted: wait for the last ones.
        await until(pilot, lambda: all(reply.children for reply in replies[-5:]))
        await until(pilot, lambda: f"Answer {TURNS - 1}, in" in svg_text(app))
        assert [reply.source for reply in replies[-5:]] == [
            f"Answer {n}, in *Markdown*." for n in range(TURNS - 5, TURNS)
        ]
        # The replies far above the end hold no blocks: nothing of them was parsed.
        assert not replies[0].children and replies[0].source == ""
        # Scrolled to the top: the first replies are drawn, with their Markdown.
        conversation.scroll_home(animate=False)
        await until(pilot, lambda: bool(replies[0].children))
        await pilot.pause()
        assert replies[0].source == "Answer 0, in *Markdown*."
        screen = svg_text(app)
        assert "Question 0" in screen and "Answer 0, in" in screen
        assert "Answer 1, in" in screen

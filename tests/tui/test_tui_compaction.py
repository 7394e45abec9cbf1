"""``accord chat`` shows a compaction of the agent's context: in progress, summary, done, failed.

A raw agent sends the unstable ``compaction_update`` / ``compaction_summary_chunk`` updates
(the chat's client advertises ``session.compaction``); the conversation draws one
:class:`~accord.tui._conversation.CompactionNote` per compaction, in place, updated as it
goes, its text shown as sent (never as markup).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _tui_support import SIZE, RawAgent, chat_app, text_of, until

from accord.client import CompactionState
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    CompactionSummaryChunkSessionUpdate,
    CompactionUpdateSessionUpdate,
    TextContentBlock,
)
from accord.tui._conversation import CompactionNote

pytestmark = pytest.mark.anyio


def status(compaction_id: str, value: str, **fields: Any) -> CompactionUpdateSessionUpdate:
    return CompactionUpdateSessionUpdate(compaction_id=compaction_id, status=value, **fields)


def say(text: str) -> AgentMessageChunkSessionUpdate:
    return AgentMessageChunkSessionUpdate(content=TextContentBlock(text=text))


async def test_a_compaction_is_drawn_in_place_from_in_progress_to_done_and_failed(
    tmp_path: Path,
) -> None:
    summary = CompactionSummaryChunkSessionUpdate(
        compaction_id="c1", content=TextContentBlock(text="[b]kept[/b] the plan")
    )
    agent = RawAgent(
        [
            [status("c1", "in_progress"), summary, status("c1", "completed"), say("the answer")],
            [status("c2", "in_progress"), status("c2", "failed", error="model down")],
        ]
    )
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        conversation = pane.conversation

        def notes() -> list[CompactionNote]:
            return [w for w in conversation.items if isinstance(w, CompactionNote)]

        await pilot.press(*"one", "enter")
        await until(pilot, lambda: len(notes()) == 1 and notes()[0].state.finished)
        await until(pilot, lambda: not conversation.pending)
        [note] = notes()
        shown = text_of(note)
        assert "earlier turns summarised" in shown and "[b]kept[/b] the plan" in shown
        assert not note.has_class("-failed")
        kinds = [type(w).__name__ for w in conversation.items if w.display]
        assert kinds[-2:] == ["CompactionNote", "AgentMessage"]  # before the reply, in place
        await until(pilot, lambda: pane.session.state == "idle")
        await pilot.press(*"two", "enter")
        await until(pilot, lambda: len(notes()) == 2 and notes()[1].state.finished)
        await until(pilot, lambda: not conversation.pending)
        failed = notes()[1]
        assert "compaction failed: model down" in text_of(failed)
        assert failed.has_class("-failed")


def test_a_compaction_in_progress_says_so() -> None:
    note = CompactionNote(CompactionState(compaction_id="c"))
    assert note.text == "⟳ summarising earlier turns…"
    assert not note.has_class("-failed")

"""The footer shows the tokens of the last turn as accord's own coding agent reports them
(``PromptResponse.usage``: the model's own counts, here the fake model server's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _tui_support import SIZE, chat_app, text_of, until

from accord.cli._agent_spec import close_builtin_agent
from accord.cli._build_agent import build_agent
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedUsage

pytestmark = pytest.mark.anyio


async def test_the_footer_shows_the_tokens_the_coding_agent_reports(tmp_path: Path) -> None:
    usage = ScriptedUsage(prompt_tokens=1_200, completion_tokens=334)
    with FakeOpenAIServer([ScriptedReply(text=["Counted."], usage=usage)]) as model:
        agent = build_agent(
            model="openai:fake-model",
            base_url=model.base_url,
            store=str(tmp_path / "store.sqlite3"),
            environ={"OPENAI_API_KEY": "test-key"},
            warn=False,
        )
        app = chat_app(agent, tmp_path, close_agent=close_builtin_agent)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.active_pane is not None or app.failed, 60)
            assert not app.failed, text_of(app.query_one("#failure"))
            footer = app.query_one("#footer")
            assert "last turn" not in text_of(footer)  # nothing reported: nothing shown
            await pilot.press(*"count", "enter")
            await until(pilot, lambda: app.last_stop_reason, 60)
            await until(pilot, lambda: "last turn" in text_of(footer))
            assert "last turn 1.2k in / 334 out" in text_of(footer), text_of(footer)

"""A ``/compact`` cancelled in ``accord chat`` (Ctrl-C while the summary is being written): the
turn ends ``cancelled``, the compaction is drawn cancelled, and the next prompt is answered
with the history whole. accord's own coding agent, over the fake model server (its summary
request hangs until the cancel)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _tui_support import SIZE, chat_app, text_of, until

from accord.cli._agent_spec import close_builtin_agent
from accord.cli._build_agent import build_agent
from accord.engines import MODEL_PURPOSE_HEADER
from accord.testing import FakeOpenAIServer, ScriptedReply
from accord.tui._conversation import CompactionNote

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """The coder's model turns are pydantic-ai's, which runs on asyncio only."""
    return "asyncio"


async def test_the_prompt_after_a_cancelled_compact_is_answered(tmp_path: Path) -> None:
    script = [ScriptedReply(text=[t]) for t in ("one", "two", "three", "after the cancel")]
    hang = ScriptedReply(text=["never"], hang_after=0, hang_timeout=30)
    side = {"compact": [hang]}
    with FakeOpenAIServer(script, side_scripts=side) as model:
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
            pane = app.active_pane
            assert pane is not None
            reasons = app.last_stop_reason
            sid = pane.session.session_id
            for prompt in ("first", "second", "third"):
                await pilot.press(*prompt, "enter")
                await until(pilot, lambda: reasons.get(sid) == "end_turn")
                del reasons[sid]
            # an argument after a space: no completion list takes the Enter
            await pilot.press(*"/compact keep the plan", "enter")

            def compacting() -> bool:
                asked = [r.headers.get(MODEL_PURPOSE_HEADER) for r in model.side_requests]
                return "compact" in asked

            await until(pilot, compacting, 60)
            await pilot.press("ctrl+c")
            await until(pilot, lambda: pane.session.state == "idle", 30)
            await until(pilot, lambda: sid in reasons, 30)
            assert reasons.pop(sid) == "cancelled"
            await pilot.press(*"fourth", "enter")
            await until(pilot, lambda: sid in reasons, 30)
            assert reasons[sid] == "end_turn"
            said = [m.text for m in pane.session.view.messages if m.role == "agent"]
            assert said[-1] == "after the cancel"
            notes = [w for w in pane.conversation.items if isinstance(w, CompactionNote)]
            assert [n.state.status for n in notes] == ["cancelled"], [n.text for n in notes]
    # the cancelled summary left the history whole: the model saw every earlier turn
    last = str(model.requests[-1].body)
    assert all(said in last for said in ("first", "one", "second", "three", "fourth"))

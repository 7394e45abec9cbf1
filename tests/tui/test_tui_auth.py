"""The agent's sign-in in ``accord chat``'s footer (``auth/status``), and each change the agent
reports (``auth/status_update``) in a notice too; nothing for an agent that does not report it.

The coder runs in the process; its keyring is an in-memory one (``helpers.memory_keyring``)
and its configuration directory the test's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _tui_support import SIZE, chat_app, scripted_agent, text_of, until
from helpers.memory_keyring import memory_keyring

from accord.coder import CoderConfig, CoderRuntime
from accord.store import MemorySessionStore
from accord.tui import ChatApp
from accord.tui._footer import AuthShown, StatusFooter, footer_content

pytestmark = pytest.mark.anyio

#: A chat-completions model name no other test uses: the coder builds a model once per process.
_MODEL = "openai-chat:tui-auth-model"
_KEY = "sk-tui-auth-5c2e71"


def _footer(app: ChatApp) -> str:
    return text_of(app.query_one(StatusFooter))


def _notices(app: ChatApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_the_footer_shows_the_account_and_a_change_is_announced(
    tmp_path: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    with memory_keyring(monkeypatch):
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        app = chat_app(runtime, tmp_path)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: app.active_pane is not None or app.failed)
                assert not app.failed, text_of(app.query_one("#failure"))
                await until(pilot, lambda: "signed in OPENAI_API_KEY key" in _footer(app))
                assert _notices(app) == []  # the state at start is no news
                connection = app.connection
                assert connection is not None
                await connection.set_provider(
                    "openai", api_type="openai", base_url="http://127.0.0.1:9/v1", api_key=_KEY
                )
                await until(pilot, lambda: "openai key (providers/set)" in _footer(app))
                assert "Signed in: openai key (providers/set)" in _notices(app)
                assert _KEY not in app.export_screenshot()
                assert not any(_KEY in n for n in _notices(app))
        finally:
            await runtime.aclose()


async def test_an_agent_that_does_not_report_it_shows_nothing(tmp_path: Path) -> None:
    runtime, _ = scripted_agent()
    app = chat_app(runtime, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        assert app.auth is None
        assert "signed in" not in _footer(app)


@pytest.mark.parametrize(
    ("auth", "shown", "hidden"),
    [
        (
            ("authenticated", "me\x1b[2J@example.com\nnext"),
            "signed in me\u241b[2J@example.com next",
            "\x1b",
        ),
        (("authenticated", None), "signed in", "None"),
        (("unauthenticated", None), "not signed in", "None"),
        (("not_required", "ignored"), " agent", "ignored"),
        (("some_future_state", "ignored"), " agent", "ignored"),
    ],
)
def test_the_sign_in_part_of_the_footer_is_one_plain_line(
    auth: AuthShown, shown: str, hidden: str
) -> None:
    line = footer_content(None, "idle", "agent", auth).plain
    assert shown in line
    assert hidden not in line
    assert "\n" not in line

"""The provider screen of ``accord chat`` (Ctrl-R, or ``/providers``): the coder's providers
listed, one set with a masked API key (the next session's model request goes along the route
with it), one disabled; refused clearly for an agent without providers.

The coder runs in the process, on accord's fake OpenAI server on loopback; its keyring is an
in-memory one (``helpers.memory_keyring``) and its configuration directory the test's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from _tui_support import SIZE, chat_app, scripted_agent, text_of, until
from helpers.memory_keyring import memory_keyring
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from accord.coder import CoderConfig, CoderRuntime
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply
from accord.tui import ChatApp
from accord.tui._providers import ProviderForm, ProviderScreen

pytestmark = pytest.mark.anyio

#: A chat-completions model name no other test uses: the coder builds a model once per process.
_MODEL = "openai-chat:tui-providers-model"
_KEY = "sk-tui-providers-8e4f0a"


@pytest.fixture
def anyio_backend() -> str:
    """The coder's model turns are pydantic-ai's, which runs on asyncio only."""
    return "asyncio"


def _rows(screen: ProviderScreen) -> dict[str, list[str]]:
    """The table's rows: provider id -> its state, route and key cells."""
    table = cast("DataTable[object]", screen.query_one(DataTable))
    rows: dict[str, list[str]] = {}
    for key in table.rows:
        first, *cells = (str(c) for c in table.get_row(key))
        rows[first] = cells
    return rows


def _notices(app: ChatApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def _list_again(pilot: Pilot[Any], app: ChatApp, before: object) -> ProviderScreen:
    """The provider screen shown again after ``before`` was dismissed."""
    await until(pilot, lambda: isinstance(app.screen, ProviderScreen) and app.screen is not before)
    screen = app.screen
    assert isinstance(screen, ProviderScreen)
    return screen


async def test_the_screen_sets_a_provider_with_a_masked_key_and_disables_one(
    tmp_path: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")  # the first session opens with it
    with (
        memory_keyring(monkeypatch) as keyring,
        FakeOpenAIServer([ScriptedReply(text=["via the route set"])]) as model,
    ):
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        app = chat_app(runtime, tmp_path)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: app.active_pane is not None or app.failed)
                assert not app.failed, text_of(app.query_one("#failure"))
                # the prompt offers /providers (the agent advertises providers)
                assert "providers" in [c.name for c in app._commands()]
                await pilot.press("ctrl+r")
                await until(pilot, lambda: isinstance(app.screen, ProviderScreen))
                listed = app.screen
                assert isinstance(listed, ProviderScreen)
                rows = _rows(listed)
                assert rows["openai"] == [
                    "in use",
                    "openai at https://api.openai.com/v1",
                    "configured",
                ]
                assert rows["anthropic"][0] == "enabled"

                await pilot.press("enter")  # set the highlighted one: openai
                await until(pilot, lambda: isinstance(app.screen, ProviderForm))
                form = app.screen
                assert form.query_one("#provider-api-type", Input).value == "openai"
                url = form.query_one("#provider-base-url", Input)
                url.value = model.base_url
                key = form.query_one("#provider-key", Input)
                assert key.password and key.has_focus
                await pilot.press(*_KEY)
                await until(pilot, lambda: key.value == _KEY)
                assert _KEY not in app.export_screenshot()  # typed, never shown
                await pilot.press("enter")

                listed = await _list_again(pilot, app, listed)
                assert _rows(listed)["openai"][1] == f"openai at {model.base_url}"
                assert _KEY in keyring.entries[("accord", "providers/openai")]
                assert any("key sent" in n for n in _notices(app))
                assert not any(_KEY in n for n in _notices(app))

                await pilot.press("down", "d")  # anthropic: asks to press again
                await until(pilot, lambda: any("again" in n for n in _notices(app)))
                await pilot.press("d")
                listed = await _list_again(pilot, app, listed)
                assert _rows(listed)["anthropic"][:2] == ["disabled", "-"]

                await pilot.press("up", "d")  # openai is required: refused on the screen
                await until(pilot, lambda: any("cannot be disabled" in n for n in _notices(app)))
                assert app.screen is listed
                await pilot.press("escape")
                await until(pilot, lambda: not isinstance(app.screen, ProviderScreen))

                # a new session builds its model along the route, with the key typed
                await pilot.press("ctrl+n")
                await until(pilot, lambda: len(app.panes) == 2)
                pane = app.panes[1]
                await until(pilot, lambda: pane.session.state == "idle")
                await pilot.press(*"hello", "enter")
                sid = pane.session.session_id
                await until(pilot, lambda: sid in app.last_stop_reason)
                assert app.last_stop_reason[sid] == "end_turn"
        finally:
            await runtime.aclose()
    [request] = model.requests
    assert request.headers["authorization"] == f"Bearer {_KEY}"


async def test_an_agent_without_providers_is_told_so_and_offered_nothing(tmp_path: Path) -> None:
    runtime, _ = scripted_agent()
    app = chat_app(runtime, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        assert "providers" not in [c.name for c in app._commands()]
        await pilot.press("ctrl+r")
        await until(pilot, lambda: any("no providers capability" in n for n in _notices(app)))
        await pilot.press(*"/providers", "enter")
        await until(pilot, lambda: len(_notices(app)) == 2)
        assert all("does not offer provider configuration" in n for n in _notices(app))
        assert not isinstance(app.screen, ProviderScreen)
        # /providers was the chat's own, not a prompt
        assert app.last_stop_reason == {}
        assert app.panes[0].session.view.messages == []

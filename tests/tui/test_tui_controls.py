"""The controls row: config options as selectors (select and boolean), and updates that
arrive while the session's pane is still being mounted (the mount race)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _tui_support import SIZE, RawAgent, chat_app, text_of, until
from textual.widgets import Select, Switch

from accord.errors import InvalidParams
from accord.schema import (
    BooleanSessionConfigOption,
    ConfigOptionUpdateSessionUpdate,
    CurrentModeUpdateSessionUpdate,
    NewSessionRequest,
    NewSessionResponse,
    SelectSessionConfigOption,
    SessionConfigOption,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
    SetSessionModeResponse,
)

pytestmark = pytest.mark.anyio


def model_option(current: str) -> SelectSessionConfigOption:
    return SelectSessionConfigOption(
        id="model",
        name="Model",
        current_value=current,
        options=[
            SessionConfigSelectOption(value="small", name="Small"),
            SessionConfigSelectOption(value="large", name="Large"),
            SessionConfigSelectOption(value="forbidden", name="Forbidden"),
        ],
    )


def web_option(current: bool) -> BooleanSessionConfigOption:
    return BooleanSessionConfigOption(id="web", name="Web search", current_value=current)


class ConfigAgent(RawAgent):
    """An agent with a mode, a select option and a boolean option; it refuses ``forbidden``.

    With ``announce`` it sends that many mode and option updates right after answering
    ``session/new`` (as fast-agent does), while the client is still putting the session on
    screen.
    """

    def __init__(self, *, announce: int = 0) -> None:
        super().__init__()
        self.options: dict[str, str | bool] = {"model": "small", "web": False}
        self.mode = "ask"
        self.set_calls: list[tuple[str, str | bool]] = []
        self._announce = announce
        self._tasks: set[asyncio.Task[None]] = set()

    def config(self) -> list[SessionConfigOption]:
        model = self.options["model"]
        web = self.options["web"]
        assert isinstance(model, str) and isinstance(web, bool)
        return [model_option(model), web_option(web)]

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        if self._announce:
            task = asyncio.get_running_loop().create_task(self._announce_setup())
            self._tasks.add(task)
        return NewSessionResponse(
            session_id=self.session_id,
            modes=SessionModeState(
                current_mode_id=self.mode,
                available_modes=[
                    SessionMode(id="ask", name="Ask"),
                    SessionMode(id="code", name="Code"),
                ],
            ),
            config_options=self.config(),
        )

    async def _announce_setup(self) -> None:
        for n in range(self._announce):
            self.mode = "code" if n % 2 == 0 else "ask"
            self.options["model"] = "large" if n % 2 == 0 else "small"
            await self.send(CurrentModeUpdateSessionUpdate(current_mode_id=self.mode))
            await self.send(ConfigOptionUpdateSessionUpdate(config_options=self.config()))

    async def set_session_mode(self, request: SetSessionModeRequest) -> SetSessionModeResponse:
        self.mode = request.mode_id
        return SetSessionModeResponse()

    async def set_session_config_option(
        self, request: SetSessionConfigOptionRequest
    ) -> SetSessionConfigOptionResponse:
        self.set_calls.append((request.config_id, request.value))
        if request.value == "forbidden":
            raise InvalidParams("not on this plan")
        self.options[request.config_id] = request.value
        return SetSessionConfigOptionResponse(config_options=self.config())


async def test_updates_while_the_pane_mounts_end_on_the_latest_setup(tmp_path: Path) -> None:
    """Mode and option updates sent right after ``session/new`` (before the pane is on
    screen, and while its controls are being rebuilt) leave the app running and the
    selectors showing the agent's last word, each control once."""
    agent = ConfigAgent(announce=25)
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: pane.session.view.current_mode_id == "code")
        await until(pilot, lambda: not pane.controls_pending)
        await pilot.pause()
        assert not app.failed
        # the last announcement (n = 24): mode code, model large
        assert agent.mode == "code"
        assert app.query_one(".select-mode", Select).value == "code"
        assert app.query_one(".select-config_model", Select).value == "large"
        assert len(app.query(".select-mode")) == 1
        assert len(app.query(Switch)) == 1
        # redrawing the controls is not a choice of the user: nothing was set
        assert agent.set_calls == []
        assert "mode Code" in text_of(app.query_one("#footer"))


async def test_a_select_option_is_set_and_a_refusal_puts_it_back(tmp_path: Path) -> None:
    agent = ConfigAgent()
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: app.query(".select-config_model"))
        select = app.query_one(".select-config_model", Select)
        assert select.value == "small"
        # open the dropdown and choose "Large" with the keyboard, as a person would
        select.focus()
        await pilot.press("enter")
        await until(pilot, lambda: select.expanded)
        await pilot.press("down", "enter")
        await until(pilot, lambda: agent.set_calls == [("model", "large")])
        await until(pilot, lambda: pane.session.view.config_options[0].current_value == "large")

        app.query_one(".select-config_model", Select).value = "forbidden"
        await until(pilot, lambda: ("model", "forbidden") in agent.set_calls)
        await until(pilot, lambda: any("refused" in str(n.message) for n in app._notifications))
        await until(pilot, lambda: not pane.controls_pending)
        await until(pilot, lambda: app.query_one(".select-config_model", Select).value == "large")
        assert agent.options["model"] == "large"


async def test_a_boolean_option_is_a_switch(tmp_path: Path) -> None:
    agent = ConfigAgent()
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        await until(pilot, lambda: app.query(".switch-config_web"))
        switch = app.query_one(".switch-config_web", Switch)
        assert switch.value is False
        assert "web search" in [text_of(s) for s in app.query("#controls Static")]
        switch.focus()
        await pilot.press("space")
        await until(pilot, lambda: agent.set_calls == [("web", True)])
        await until(pilot, lambda: pane.session.view.config_options[1].current_value is True)
        await until(pilot, lambda: not pane.controls_pending)
        app.query_one(".switch-config_web", Switch).focus()
        await pilot.press("enter")
        await until(pilot, lambda: agent.set_calls == [("web", True), ("web", False)])
        assert agent.options["web"] is False


class ModelAgent(ConfigAgent):
    """:class:`ConfigAgent` whose select option is marked as the session's model."""

    def config(self) -> list[SessionConfigOption]:
        model, web = super().config()
        assert isinstance(model, SelectSessionConfigOption)
        model.category = "model"
        return [model, web]


async def test_the_footer_shows_the_current_model_and_follows_it(tmp_path: Path) -> None:
    """The option of category ``model`` is named in the footer; choosing another model in
    its selector, or the agent announcing one (``config_option_update``), changes it."""
    agent = ModelAgent()
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        footer = app.query_one("#footer")
        await until(pilot, lambda: "model Small" in text_of(footer))
        await until(pilot, lambda: app.query(".select-config_model"))
        select = app.query_one(".select-config_model", Select)
        select.focus()
        await pilot.press("enter")
        await until(pilot, lambda: select.expanded)
        await pilot.press("down", "enter")
        await until(pilot, lambda: agent.set_calls == [("model", "large")])
        await until(pilot, lambda: "model Large" in text_of(footer))
        assert "model Small" not in text_of(footer)

        agent.options["model"] = "small"
        await agent.send(ConfigOptionUpdateSessionUpdate(config_options=agent.config()))
        await until(pilot, lambda: "model Small" in text_of(footer))
        assert "model Large" not in text_of(footer)
        assert agent.set_calls == [("model", "large")]  # the agent's word, not a choice

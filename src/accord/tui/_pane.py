"""One session on screen: its controls (mode, config options), conversation and plan.

The pane redraws from the session's view when asked (:meth:`SessionPane.request_refresh`,
called on every update for the session); the conversation syncs at most once per frame.
The mode and every config option of the session are selectors; picking a value calls
``session/set_mode`` or ``session/set_config_option`` (a refusal is shown, and the selector
goes back to the session's value).

Above: :mod:`accord.tui._app` (one pane per tab). Below: the client session, the
conversation view, the plan view.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Select, Static, Switch

from ..client import ClientSession
from ..errors import AcpError
from ..schema import (
    SelectSessionConfigOption,
    SessionConfigOption,
    SessionConfigSelectOption,
    SessionMode,
)
from ._conversation import ConversationView
from ._plan import PlanView
from ._safe import plain_line
from ._tool_card import TerminalReader

__all__ = ("SessionPane",)

_MODE = "mode"


def _choices(option: SelectSessionConfigOption) -> list[SessionConfigSelectOption]:
    choices: list[SessionConfigSelectOption] = []
    for item in option.options:
        if isinstance(item, SessionConfigSelectOption):
            choices.append(item)
        else:
            choices.extend(item.options)
    return choices


class _OptionSelect(Select[str]):
    """A selector bound to the session's mode or to one config option."""

    def __init__(self, config_id: str, choices: list[tuple[Content, str]], value: str) -> None:
        known = any(v == value for _, v in choices)
        super().__init__(
            choices,
            value=value if known else Select.NULL,
            allow_blank=not known,
            compact=True,
            classes=f"select-{_css_id(config_id)}",
        )
        self.config_id = config_id


class _OptionSwitch(Switch):
    def __init__(self, config_id: str, value: bool) -> None:
        super().__init__(value=value, classes=f"switch-{_css_id(config_id)}")
        self.config_id = config_id


def _css_id(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text) or "_"


def _control_widgets(
    modes: tuple[SessionMode, ...],
    current_mode: str | None,
    options: tuple[SessionConfigOption, ...],
) -> list[Static | Select[str] | Switch]:
    """The controls row: the mode (unless a config option is the mode) and every option."""
    widgets: list[Static | Select[str] | Switch] = []
    has_mode_option = any(
        isinstance(o, SelectSessionConfigOption) and o.category == "mode" for o in options
    )
    if modes and not has_mode_option:
        widgets.append(Static("mode"))
        choices = [(plain_line(mode.name), mode.id) for mode in modes]
        widgets.append(_OptionSelect(_MODE, choices, current_mode or ""))
    for option in options:
        widgets.append(Static(plain_line(option.name.lower())))
        if isinstance(option, SelectSessionConfigOption):
            choices = [(plain_line(c.name), c.value) for c in _choices(option)]
            widgets.append(_OptionSelect(f"config:{option.id}", choices, option.current_value))
        else:
            widgets.append(_OptionSwitch(f"config:{option.id}", option.current_value))
    return widgets


class SessionPane(Vertical):
    """The widgets of one session."""

    DEFAULT_CSS = """
    SessionPane {
        height: 1fr;
        #controls { height: auto; padding: 0 1; display: none; }
        #controls.-shown { display: block; }
        #controls Static { width: auto; padding: 0 1 0 0; color: $text-muted; }
        #controls Select { width: auto; min-width: 16; margin: 0 2 0 0; }
        #controls Switch { margin: 0 2 0 0; }
    }
    """

    def __init__(self, session: ClientSession, *, terminals: TerminalReader | None = None) -> None:
        super().__init__()
        self.session = session
        self.conversation = ConversationView(
            session.view, cwd=session.cwd, terminals=terminals, id="conversation"
        )
        self.plan = PlanView(id="plan")
        self._controls = Horizontal(id="controls")
        self._shown_setup: tuple[object, ...] = ()
        self._controls_stale = False
        self._rebuilding = False
        self._updating_controls = False

    def compose(self) -> ComposeResult:
        yield self._controls
        yield self.conversation
        yield self.plan

    def on_mount(self) -> None:
        self.request_refresh()

    def request_refresh(self) -> None:
        """Redraw what changed in the session's view (the conversation within a frame).

        Safe to call at any time: updates can arrive while the pane is still being mounted
        (an agent may announce its modes right after ``session/new``); the controls are then
        drawn once the pane is mounted (:meth:`on_mount` calls this again), and rebuilds of
        the controls never overlap (one runs at a time, and runs again if the setup changed
        meanwhile).
        """
        view = self.session.view
        self.conversation.request_sync()
        self.plan.show_plan(view.plan)
        if not self._controls.is_mounted:
            return
        setup = (view.available_modes, view.current_mode_id, view.config_options)
        if setup != self._shown_setup:
            self._shown_setup = setup
            self._controls_stale = True
            if not self._rebuilding:
                self._rebuilding = True
                self._updating_controls = True
                self.call_later(self._rebuild_controls)

    @property
    def controls_pending(self) -> bool:
        """Whether the controls row is being redrawn for a newer mode or config options."""
        return self._rebuilding

    async def _rebuild_controls(self) -> None:
        try:
            while self._controls_stale and self.is_attached:
                self._controls_stale = False
                view = self.session.view
                widgets = _control_widgets(
                    view.available_modes, view.current_mode_id, view.config_options
                )
                await self._controls.remove_children()
                await self._controls.mount_all(widgets)
                self._controls.set_class(bool(widgets), "-shown")
        finally:
            self._rebuilding = False
            # Selectors announce their initial value once mounted: not a choice of the user.
            self.call_after_refresh(self._controls_ready)

    def _controls_ready(self) -> None:
        if not self._rebuilding:
            self._updating_controls = False

    @on(Select.Changed)
    async def _select_changed(self, event: Select.Changed) -> None:
        event.stop()
        control = event.select
        if self._updating_controls or not isinstance(control, _OptionSelect):
            return
        if not isinstance(event.value, str):
            return
        await self._apply(control.config_id, event.value)

    @on(Switch.Changed)
    async def _switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        control = event.switch
        if self._updating_controls or not isinstance(control, _OptionSwitch):
            return
        await self._apply(control.config_id, event.value)

    async def _apply(self, config_id: str, value: Any) -> None:
        session = self.session
        view = session.view
        try:
            if config_id == _MODE:
                if value == view.current_mode_id:
                    return
                await session.set_mode(value)
            else:
                option_id = config_id.removeprefix("config:")
                current = next(
                    (o.current_value for o in view.config_options if o.id == option_id), None
                )
                if value == current:
                    return
                await session.set_config_option(option_id, value)
        except AcpError as error:
            self.notify(f"The agent refused: {error}", severity="error")
            self._shown_setup = ()
        self.request_refresh()
        self.post_message(self.SetupChanged(self))

    class SetupChanged(Message):
        """The session's mode or a config option was set from this pane."""

        def __init__(self, pane: SessionPane) -> None:
            super().__init__()
            self.pane = pane

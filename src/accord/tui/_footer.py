"""The footer line: the session's state, mode, model, context use and cost.

``observer`` follows the state while this client watches a session other clients have open
(it attached to it) and has not prompted in it yet; joined while another client's turn ran, it
also says whose (``Zed is running a turn``, the name that client gave the agent).

Mode and model come from the session's view: the mode from its modes (or a config option of
category ``mode``), the model from the config option of category ``model``; context use from
the latest ``usage_update`` (used / size, with a percentage); cost when the agent reports one.

Above: :mod:`accord.tui._app`. Below: the session's :class:`~accord.client.SessionView`.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from ..client import SessionView
from ..schema import SelectSessionConfigOption, SessionConfigSelectOption
from ._safe import plain_line

__all__ = (
    "StatusFooter",
    "config_value_name",
    "footer_content",
    "short_count",
    "turn_runner",
)


def short_count(tokens: int) -> str:
    """``1234`` as ``1.2k``, ``200000`` as ``200k``, ``1500000`` as ``1.5M``."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        value, unit = tokens / 1000, "k"
    else:
        value, unit = tokens / 1_000_000, "M"
    text = f"{value:.1f}".removesuffix(".0")
    return f"{text}{unit}"


def config_value_name(view: SessionView, category: str) -> str | None:
    """The display name of the current value of the select option of ``category``."""
    for option in view.config_options:
        if isinstance(option, SelectSessionConfigOption) and option.category == category:
            for choice in _choices(option):
                if choice.value == option.current_value:
                    return choice.name
            return option.current_value
    return None


def _choices(option: SelectSessionConfigOption) -> list[SessionConfigSelectOption]:
    choices: list[SessionConfigSelectOption] = []
    for item in option.options:
        if isinstance(item, SessionConfigSelectOption):
            choices.append(item)
        else:
            choices.extend(item.options)
    return choices


def _mode_name(view: SessionView) -> str | None:
    for mode in view.available_modes:
        if mode.id == view.current_mode_id:
            return mode.name
    return view.current_mode_id or config_value_name(view, "mode")


def turn_runner(view: SessionView | None) -> str | None:
    """Who runs the turn this client joined (``None``: none, or this client prompted since)."""
    if view is None or not view.joined_turn:
        return None
    return view.turn_client or "another client"


def footer_content(view: SessionView | None, state: str, agent: str) -> Content:
    """The footer's text for a session (None: no session yet) in ``state``."""
    parts: list[Content] = [Content.styled(f" {state} ", "reverse"), plain_line(f" {agent}")]
    if view is not None and view.observer:
        # Attached to a session other clients have open, and not prompted in it yet.
        parts.insert(1, Content.styled(" observer ", "bold $text-warning"))
    runner = turn_runner(view)
    if runner is not None:
        parts.insert(2, plain_line(f" {runner} is running a turn "))
    if view is not None:
        mode = _mode_name(view)
        if mode:
            parts.append(Content.assemble(("  mode ", "dim"), plain_line(mode)))
        model = config_value_name(view, "model")
        if model:
            parts.append(Content.assemble(("  model ", "dim"), plain_line(model)))
        if view.usage_used is not None and view.usage_size:
            share = 100 * view.usage_used / view.usage_size
            context = f"{short_count(view.usage_used)}/{short_count(view.usage_size)}"
            parts.append(Content.assemble(("  context ", "dim"), f"{context} ({share:.0f}%)"))
        if view.usage_cost is not None:
            cost = view.usage_cost
            parts.append(
                Content.assemble(
                    ("  cost ", "dim"), plain_line(f"{cost.amount:.4f} {cost.currency}")
                )
            )
        usage = view.last_turn_usage
        if usage is not None:
            tokens = (
                f"{short_count(usage.input_tokens)} in / {short_count(usage.output_tokens)} out"
            )
            parts.append(Content.assemble(("  last turn ", "dim"), tokens))
    return Content("").join(parts)


class StatusFooter(Static):
    """One line at the bottom of the screen."""

    DEFAULT_CSS = """
    StatusFooter {
        dock: bottom;
        height: 1;
        background: $panel;
        color: $text;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._shown: Content | None = None

    def show_status(self, view: SessionView | None, state: str, agent: str) -> None:
        """Redraw for this session and state (only if the line changed: it is asked on
        every frame of a streamed reply)."""
        content = footer_content(view, state, agent)
        if content != self._shown:
            self._shown = content
            # One line, docked: its size never depends on its text, so no layout.
            self.update(content, layout=False)

"""The footer line: the session's state, the agent's sign-in, mode, model, context use and cost.

``observer`` follows the state while this client watches a session other clients have open
(it attached to it) and has not prompted in it yet; joined while another client's turn ran, it
also says whose (``Zed is running a turn``, the name that client gave the agent).

Mode and model come from the session's view: the mode from its modes (or a config option of
category ``mode``), the model from the config option of category ``model``; context use from
the latest ``usage_update`` (used / size, with a percentage); cost when the agent reports one.

The sign-in comes from ``auth/status`` and ``auth/status_update``, for an agent that
advertises them (:func:`auth_account`): ``signed in`` with the account's label, or ``not
signed in``; nothing when the agent needs none or says nothing. The label is the agent's
text, shown as one plain line (:func:`~._safe.plain_line`).

Above: :mod:`accord.tui._app`. Below: the session's :class:`~accord.client.SessionView`.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

from ..client import SessionView
from ..schema import AuthAccount, SelectSessionConfigOption, SessionConfigSelectOption
from ._safe import plain_line

__all__ = (
    "AuthShown",
    "StatusFooter",
    "auth_account",
    "config_value_name",
    "footer_content",
    "short_count",
    "turn_runner",
)


AuthShown = tuple[str, str | None]
"""The agent's sign-in as the footer shows it: the ``auth/status`` state and the account's
label (``None``: the agent named none)."""


def auth_account(accounts: Sequence[AuthAccount]) -> str | None:
    """The label of the account to show: the active one, else the first (``None``: none)."""
    for account in accounts:
        if account.active:
            return account.label
    return accounts[0].label if accounts else None


def _auth_part(auth: AuthShown) -> Content | None:
    state, label = auth
    if state == "authenticated":
        if label is None:
            return Content.styled("  signed in", "dim")
        return Content.assemble(("  signed in ", "dim"), plain_line(label))
    if state == "unauthenticated":
        return Content.styled("  not signed in", "bold $text-warning")
    return None  # not_required, or a state this client does not know


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


def footer_content(
    view: SessionView | None, state: str, agent: str, auth: AuthShown | None = None
) -> Content:
    """The footer's text for a session (None: no session yet) in ``state``, with the agent's
    sign-in (``None``: the agent does not report it)."""
    parts: list[Content] = [Content.styled(f" {state} ", "reverse"), plain_line(f" {agent}")]
    if view is not None and view.observer:
        # Attached to a session other clients have open, and not prompted in it yet.
        parts.insert(1, Content.styled(" observer ", "bold $text-warning"))
    runner = turn_runner(view)
    if runner is not None:
        parts.insert(2, plain_line(f" {runner} is running a turn "))
    signed = None if auth is None else _auth_part(auth)
    if signed is not None:
        parts.append(signed)
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

    def show_status(
        self, view: SessionView | None, state: str, agent: str, auth: AuthShown | None = None
    ) -> None:
        """Redraw for this session, state and sign-in (only if the line changed: it is asked
        on every frame of a streamed reply)."""
        content = footer_content(view, state, agent, auth)
        if content != self._shown:
            self._shown = content
            # One line, docked: its size never depends on its text, so no layout.
            self.update(content, layout=False)

"""The permission question: a modal that shows what the agent wants to do and takes an answer.

It shows the tool call's kind and title, the command it would run (from its raw input), the
paths it touches, every diff it carries, and the agent's options as buttons. Each option is
answered with its number (1-9) or, by its kind, with ``a`` (allow once), ``A`` (allow always),
``r`` (reject once) or ``R`` (reject always); Escape answers ``cancelled``. Options of a kind
this client does not know (``unknown``: missing, null or not defined by the protocol) still get
their number, and no kind key. Everything shown is agent text, so it is
shown literally (see :mod:`accord.tui._safe`).

Above: :mod:`accord.tui._app`, whose permission policy pushes this screen and waits for its
answer. Below: the client's :class:`~accord.client.PermissionContext` and decisions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import orjson
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Static

from ..client import Cancel, PermissionContext, PermissionDecision, Select
from ..schema import PermissionOption
from ._diff import diff_view, display_path
from ._safe import plain, plain_line

__all__ = ("KIND_KEYS", "PermissionScreen", "command_of")

#: The key that answers with the first option of each kind.
KIND_KEYS: Mapping[str, str] = {
    "allow_once": "a",
    "allow_always": "A",
    "reject_once": "r",
    "reject_always": "R",
}

#: How much of a raw input that is not a command is shown.
RAW_INPUT_LIMIT = 2000


def command_of(raw_input: Any) -> str | None:
    """The command line a tool call would run, if its raw input names one."""
    if not isinstance(raw_input, dict):
        return None
    fields: dict[str, Any] = raw_input  # pyright: ignore[reportUnknownVariableType]
    command = fields.get("command") or fields.get("cmd")
    if isinstance(command, list):
        words: list[Any] = command  # pyright: ignore[reportUnknownVariableType]
        return " ".join(str(word) for word in words)
    if not isinstance(command, str):
        return None
    args = fields.get("args")
    if isinstance(args, list):
        items: list[Any] = args  # pyright: ignore[reportUnknownVariableType]
        return " ".join([command, *(str(arg) for arg in items)])
    return command


def _raw_input_text(raw_input: Any) -> str | None:
    if raw_input is None:
        return None
    try:
        text = orjson.dumps(raw_input, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        text = repr(raw_input)
    if len(text) > RAW_INPUT_LIMIT:
        text = text[:RAW_INPUT_LIMIT] + "\n…"
    return text


class PermissionScreen(ModalScreen[PermissionDecision]):
    """Asks one permission question; dismissed with the decision."""

    DEFAULT_CSS = """
    PermissionScreen {
        align: center middle;
        #dialog {
            width: 90%;
            max-width: 120;
            height: auto;
            max-height: 90%;
            border: thick $warning;
            background: $surface;
            padding: 0 1;
        }
        #question { text-style: bold; margin: 0 0 1 0; }
        #details { height: auto; max-height: 30; }
        .label { color: $text-muted; }
        .command { background: $panel; padding: 0 1; margin: 0 0 1 0; }
        #options { height: auto; margin: 1 0 0 0; }
        #options Button { margin: 0 1 0 0; min-width: 12; }
        #hint { color: $text-muted; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", show=False),
    ]

    def __init__(self, context: PermissionContext, *, cwd: str | None = None) -> None:
        super().__init__()
        self.context = context
        self._cwd = cwd
        self._options: list[PermissionOption] = list(context.options)

    def compose(self) -> ComposeResult:
        call = self.context.tool_call
        with Vertical(id="dialog"):
            title = call.title or call.name or call.tool_call_id
            yield Static(
                Content.assemble(
                    ("The agent asks permission to ", ""),
                    (call.kind, "bold $text-warning"),
                    ": ",
                    plain_line(title),
                ),
                id="question",
            )
            with VerticalScroll(id="details"):
                yield from self._details()
            with Horizontal(id="options"):
                for number, option in enumerate(self._options, 1):
                    yield Button(self._label(number, option), id=f"option-{number}")
            yield Static(self._hint(), id="hint")

    def _details(self) -> Iterator[Widget]:
        call = self.context.tool_call
        command = command_of(call.raw_input)
        if command is not None:
            yield Static("command", classes="label")
            yield Static(plain(command), classes="command")
        paths = [location.path for location in call.locations]
        paths += [diff.path for diff in call.diffs if diff.path not in paths]
        if paths:
            yield Static("paths", classes="label")
            yield Static(plain("\n".join(display_path(p, self._cwd) for p in paths)))
        for diff in call.diffs:
            yield diff_view(diff, self._cwd)
        if command is None and not call.diffs:
            raw = _raw_input_text(call.raw_input)
            if raw is not None:
                yield Static("input", classes="label")
                yield Static(plain(raw), classes="command")
        if call.text:
            yield Static(plain(call.text))

    def _label(self, number: int, option: PermissionOption) -> Content:
        key = KIND_KEYS.get(option.kind)
        keys = f"{number}" if number <= 9 else ""
        if key is not None and self._first_of_kind(option):
            keys = f"{keys}/{key}" if keys else key
        return Content.assemble((f"[{keys}] " if keys else "", "bold"), plain_line(option.name))

    def _first_of_kind(self, option: PermissionOption) -> bool:
        return next(o for o in self._options if o.kind == option.kind) is option

    def _hint(self) -> str:
        if not self._options:
            return "The agent offered no options: Escape answers cancelled."
        return "Press a key shown in brackets (or Tab and Enter); Escape answers cancelled."

    def on_mount(self) -> None:
        buttons = list(self.query(Button))
        if buttons:
            buttons[0].focus()

    def on_key(self, event: events.Key) -> None:
        option = self._option_for(event.character)
        if option is not None:
            event.stop()
            event.prevent_default()
            self.dismiss(Select(option.option_id))

    def _option_for(self, character: str | None) -> PermissionOption | None:
        if character is None:
            return None
        if character.isdigit() and character != "0":
            index = int(character) - 1
            return self._options[index] if index < len(self._options) else None
        for kind, key in KIND_KEYS.items():
            if key == character:
                return next((o for o in self._options if o.kind == kind), None)
        return None

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        number = int((event.button.id or "option-0").removeprefix("option-"))
        if 1 <= number <= len(self._options):
            self.dismiss(Select(self._options[number - 1].option_id))

    def action_cancel(self) -> None:
        """Answer ``cancelled``."""
        self.dismiss(Cancel())

"""The agent's questions to the user (``elicitation/create``): a form, or a URL to open.

A form question shows the agent's message and one field per property of the requested
schema: a selector for a string with choices (``enum`` / ``oneOf``), a list of checkboxes for
a multi-select, a switch for a boolean, a text input (digits only for numbers) otherwise;
declared defaults are filled in, required fields are marked ``*``. Ctrl-S (or Enter in a
field, or the Submit button) accepts; the content is checked against the schema first
(:func:`accord.roles.content_problems`) and the problems are shown instead of being sent.
Ctrl-D declines; Escape cancels (dismisses). A URL question shows the URL literally, never as
a link, with Accept (Enter) / Decline / Escape. Every string is agent text, shown literally.

Above: :mod:`accord.tui._app`, whose elicitation policy pushes this screen. Below: the
client's :class:`~accord.client.ElicitationContext` and decisions, the schema models.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Select, SelectionList, Static, Switch

from ..client import Accept, Cancel, Decline, ElicitationContext, ElicitationDecision
from ..roles import content_problems, default_content
from ..schema import (
    ArrayElicitationPropertySchema,
    BooleanElicitationPropertySchema,
    ElicitationContentValue,
    ElicitationPropertySchema,
    IntegerElicitationPropertySchema,
    NumberElicitationPropertySchema,
    StringElicitationPropertySchema,
    TitledMultiSelectItems,
)
from ._safe import plain, plain_line

__all__ = ("ElicitationScreen",)


def _choices_of(prop: ElicitationPropertySchema) -> list[tuple[str, str]]:
    """(label, value) pairs of a property with fixed choices (empty: free input)."""
    if isinstance(prop, StringElicitationPropertySchema):
        if prop.one_of:
            return [(option.title, option.const) for option in prop.one_of]
        return [(value, value) for value in prop.enum or ()]
    if isinstance(prop, ArrayElicitationPropertySchema):
        items = prop.items
        if isinstance(items, TitledMultiSelectItems):
            return [(option.title, option.const) for option in items.any_of]
        values: list[str] = getattr(items, "enum", None) or []
        return [(value, value) for value in values]
    return []


class ElicitationScreen(ModalScreen[ElicitationDecision]):
    """Asks one elicitation question; dismissed with the decision."""

    DEFAULT_CSS = """
    ElicitationScreen {
        align: center middle;
        #dialog {
            width: 90%;
            max-width: 100;
            height: auto;
            max-height: 90%;
            border: thick $accent;
            background: $surface;
            padding: 0 1;
        }
        #message { text-style: bold; margin: 0 0 1 0; }
        #fields { height: auto; max-height: 30; }
        .field-label { margin: 1 0 0 0; }
        .field-help { color: $text-muted; }
        .url { background: $panel; padding: 0 1; }
        #problems { color: $text-error; display: none; }
        #problems.-shown { display: block; }
        #buttons { height: auto; margin: 1 0 0 0; }
        #buttons Button { margin: 0 1 0 0; }
        SelectionList { height: auto; max-height: 8; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", show=False),
        Binding("ctrl+s", "accept", "Accept", show=False, priority=True),
        Binding("ctrl+d", "decline", "Decline", show=False, priority=True),
    ]

    def __init__(self, context: ElicitationContext) -> None:
        super().__init__()
        self.context = context
        self._fields: dict[str, Widget] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(plain(self.context.message or "The agent asks:"), id="message")
            with VerticalScroll(id="fields"):
                if self.context.mode == "url":
                    yield Static("Open this address in your browser?", classes="field-help")
                    yield Static(plain(self.context.url or ""), classes="url")
                else:
                    yield from self._form()
            yield Static("", id="problems")
            with Horizontal(id="buttons"):
                accept = "Submit [ctrl+s]" if self.context.mode == "form" else "Accept"
                yield Button(Content(accept), id="accept", variant="primary")
                yield Button(Content("Decline [ctrl+d]"), id="decline")
                yield Button(Content("Cancel [esc]"), id="cancel")

    def _form(self) -> Iterator[Widget]:
        schema = self.context.schema
        defaults = default_content(schema)
        required = set(schema.required or ())
        for name, prop in schema.properties.items():
            label = getattr(prop, "title", None) or name
            mark = " *" if name in required else ""
            yield Static(plain_line(f"{label}{mark}"), classes="field-label")
            description = getattr(prop, "description", None)
            if description:
                yield Static(plain(description), classes="field-help")
            widget = self._field(prop, defaults.get(name))
            self._fields[name] = widget
            yield widget

    def _field(self, prop: ElicitationPropertySchema, default: object) -> Widget:
        choices = _choices_of(prop)
        if isinstance(prop, ArrayElicitationPropertySchema):
            chosen: set[str] = (
                {str(item) for item in default}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
                if isinstance(default, list)
                else set()
            )
            return SelectionList[str](
                *[(plain_line(label), value, value in chosen) for label, value in choices]
            )
        if isinstance(prop, BooleanElicitationPropertySchema):
            return Switch(value=bool(default))
        if choices:
            value = default if isinstance(default, str) else Select.NULL
            return Select[str](
                [(plain_line(label), value) for label, value in choices], value=value
            )
        kind = "text"
        if isinstance(prop, IntegerElicitationPropertySchema):
            kind = "integer"
        elif isinstance(prop, NumberElicitationPropertySchema):
            kind = "number"
        text = "" if default is None else str(default)
        return Input(text, type=kind)

    def on_mount(self) -> None:
        focusable = [w for w in self._fields.values() if w.can_focus]
        (focusable[0] if focusable else self.query_one("#accept", Button)).focus()

    def content(self) -> dict[str, ElicitationContentValue]:
        """The form's values (fields left empty are left out)."""
        content: dict[str, ElicitationContentValue] = {}
        properties = self.context.schema.properties
        for name, widget in self._fields.items():
            prop = properties[name]
            if isinstance(widget, SelectionList):
                selection: list[str] = list(widget.selected)  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
                content[name] = selection
            elif isinstance(widget, Switch):
                content[name] = widget.value
            elif isinstance(widget, Select):
                value: object = widget.value  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                if isinstance(value, str):
                    content[name] = value
            elif isinstance(widget, Input) and widget.value.strip():
                text = widget.value.strip()
                try:
                    if isinstance(prop, IntegerElicitationPropertySchema):
                        content[name] = int(text)
                    elif isinstance(prop, NumberElicitationPropertySchema):
                        content[name] = float(text)
                    else:
                        content[name] = widget.value
                except ValueError:
                    content[name] = widget.value
        return content

    def action_accept(self) -> None:
        """Accept: the form's content once it satisfies the schema (else show why not)."""
        if self.context.mode == "url":
            self.dismiss(Accept())
            return
        content = self.content()
        problems = content_problems(self.context.schema, content)
        if problems:
            shown = self.query_one("#problems", Static)
            shown.update(plain("\n".join(problems)))
            shown.add_class("-shown")
            return
        self.dismiss(Accept(content))

    def action_decline(self) -> None:
        """Decline the question."""
        self.dismiss(Decline())

    def action_cancel(self) -> None:
        """Dismiss the question (answers ``cancel``)."""
        self.dismiss(Cancel())

    @on(Input.Submitted)
    def _entered(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_accept()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        actions = {"accept": self.action_accept, "decline": self.action_decline}
        actions.get(event.button.id or "", self.action_cancel)()

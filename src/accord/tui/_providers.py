"""The provider screen: the agent's model providers (``providers/list``), to set or disable.

:class:`ProviderScreen` is a table of the providers the agent lists: its id, whether it is the
one in use (the default model's provider, accord's ``_meta["accord/inUse"]``) or ``required``,
where its requests go (or ``disabled``) and whether a key is configured when the agent says so.
Keys act on the highlighted row: Enter or ``s`` sets it (a :class:`ProviderForm` asks for the
protocol, the base URL and the API key), ``d`` twice disables it, Escape closes the screen. The
screen is dismissed with a :class:`ProviderChoice` (or None); the app sends the request.

:class:`ProviderForm` asks for what ``providers/set`` sends. Its key field is masked (a password
input): the key is shown nowhere, put in no notice, and only handed to
:meth:`accord.client.ConnectedAgent.set_provider`. An empty key sends none (the agent then uses
the key it has, e.g. its provider's environment variable).

Above: :mod:`accord.tui._app`. Below: Textual's ``DataTable`` and ``Input``; the providers come
from the app.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, TypeAlias, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from ..schema import ProviderInfo
from ._safe import plain_line

__all__ = (
    "ProviderAction",
    "ProviderChoice",
    "ProviderForm",
    "ProviderScreen",
    "ProviderSetting",
    "provider_state",
)

ProviderAction: TypeAlias = Literal["set", "disable"]
"""What to do with the chosen provider."""


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    """The screen's answer: an action and the provider it applies to."""

    action: ProviderAction
    provider: ProviderInfo


@dataclass(frozen=True, slots=True)
class ProviderSetting:
    """The form's answer: what ``providers/set`` sends (``api_key`` None: no key)."""

    api_type: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)


def provider_state(info: ProviderInfo) -> tuple[str, str, str]:
    """The state, route and key columns of ``info``'s row, as plain words."""
    meta = info.meta or {}
    if info.current is None:
        state = "disabled"
    elif meta.get("accord/inUse") is True:
        state = "in use"
    elif info.required:
        state = "required"
    else:
        state = "enabled"
    route = "-" if info.current is None else f"{info.current.api_type} at {info.current.base_url}"
    configured = meta.get("accord/keyConfigured")
    key = "-" if not isinstance(configured, bool) else "configured" if configured else "no key"
    return state, route, key


class ProviderScreen(ModalScreen[ProviderChoice | None]):
    """Lists the agent's providers; dismissed with the chosen action."""

    DEFAULT_CSS = """
    ProviderScreen {
        align: center middle;
        #providers {
            width: 90%;
            max-width: 120;
            height: auto;
            max-height: 80%;
            border: thick $primary;
            background: $surface;
        }
        #providers-title { text-style: bold; padding: 0 1; }
        DataTable { height: auto; max-height: 20; }
        #providers-keys { color: $text-muted; padding: 0 1; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", show=False),
        Binding("s", "act('set')", "Set", show=False),
        Binding("d", "act('disable')", "Disable", show=False),
    ]

    def __init__(self, providers: Sequence[ProviderInfo]) -> None:
        super().__init__()
        self.providers = list(providers)
        self._disable_armed: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="providers"):
            count = len(self.providers)
            heading = f"Model providers ({count})" if count else "The agent lists no providers"
            yield Static(heading, id="providers-title")
            table: DataTable[object] = DataTable(cursor_type="row")
            for column in ("Provider", "State", "Route", "Key"):
                table.add_column(column, key=column.lower())
            for info in self.providers:
                # Rich Text built from plain strings: what the agent sent is literal, no markup.
                cells = (info.provider_id, *provider_state(info))
                table.add_row(*(Text(plain_line(c).plain) for c in cells), key=info.provider_id)
            yield table
            yield Static("enter/s set  d d disable  esc close", id="providers-keys")

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()

    def _highlighted(self) -> ProviderInfo | None:
        table = cast("DataTable[object]", self.query_one(DataTable))
        if not self.providers or table.cursor_row < 0:
            return None
        return self.providers[min(table.cursor_row, len(self.providers) - 1)]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a row sets it."""
        event.stop()
        self.action_act("set")

    def action_act(self, action: ProviderAction) -> None:
        """Answer with ``action`` on the highlighted provider."""
        info = self._highlighted()
        if info is None:
            return
        if action == "disable":
            if info.current is None:
                self.notify("This provider is disabled already.", severity="warning")
                return
            if info.required:
                self.notify(
                    "The agent needs this provider (its default model's): it cannot be disabled.",
                    severity="warning",
                )
                return
            if self._disable_armed != info.provider_id:
                self._disable_armed = info.provider_id
                self.notify("Press d again to disable this provider.", severity="warning")
                return
        self.dismiss(ProviderChoice(action, info))

    def action_close(self) -> None:
        """Close without choosing."""
        self.dismiss(None)


class ProviderForm(ModalScreen[ProviderSetting | None]):
    """Asks for one provider's protocol, base URL and API key (masked)."""

    DEFAULT_CSS = """
    ProviderForm {
        align: center middle;
        #provider-form {
            width: 80%;
            max-width: 100;
            height: auto;
            border: thick $primary;
            background: $surface;
            padding: 0 1;
        }
        #provider-form-title { text-style: bold; }
        .provider-label { color: $text-muted; margin-top: 1; }
        #provider-form-keys { color: $text-muted; margin-top: 1; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", show=False)]

    def __init__(self, provider: ProviderInfo) -> None:
        super().__init__()
        self.provider = provider

    def compose(self) -> ComposeResult:
        info = self.provider
        current = info.current
        api_type = current.api_type if current else (info.supported[0] if info.supported else "")
        supported = ", ".join(info.supported) or "not said"
        with Vertical(id="provider-form"):
            title = plain_line(f"Set provider {info.provider_id}").plain
            yield Static(Text(title), id="provider-form-title")
            yield Static(
                Text(f"Protocol ({plain_line(supported).plain})"), classes="provider-label"
            )
            yield Input(api_type, id="provider-api-type")
            yield Static("Base URL", classes="provider-label")
            yield Input(current.base_url if current else "", id="provider-base-url")
            yield Static(
                "API key (hidden; empty: send none, the agent uses its own)",
                classes="provider-label",
            )
            yield Input("", password=True, id="provider-key")
            yield Static("enter set  tab next field  esc cancel", id="provider-form-keys")

    def on_mount(self) -> None:
        self.query_one("#provider-key", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in any field sets the provider (when protocol and URL are given)."""
        event.stop()
        api_type = self.query_one("#provider-api-type", Input).value.strip()
        base_url = self.query_one("#provider-base-url", Input).value.strip()
        key = self.query_one("#provider-key", Input).value.strip()
        if not api_type or not base_url:
            self.notify("Give the protocol and the base URL.", severity="warning")
            return
        self.dismiss(ProviderSetting(api_type, base_url, key or None))

    def action_close(self) -> None:
        """Cancel: nothing is sent."""
        self.dismiss(None)

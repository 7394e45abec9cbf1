"""One card per tool call: kind, title, status, locations, output, diffs and terminals.

A card is keyed by the tool call's id and updated in place with each new snapshot
(:class:`~accord.client.ToolCallState`); only the parts that changed are redrawn. The header
line (status symbol, kind, title) toggles the body with Enter or a click; the conversation's
"expand all / collapse all" key sets every card at once. Embedded terminals are read from the
client's terminal host and follow their output while the call runs.

Above: :mod:`accord.tui._conversation`. Below: the client's snapshots, the diff widget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from ..client import ToolCallState
from ..schema import (
    ContentToolCallContent,
    DiffToolCallContent,
    TextContentBlock,
)
from ._diff import diff_view, display_path
from ._safe import plain, plain_line

__all__ = ("STATUS_SYMBOLS", "TerminalReader", "TerminalView", "ToolCard")

TerminalReader = Callable[[str], Awaitable[str | None]]
"""Reads a terminal's output by id (None once the terminal is gone)."""

STATUS_SYMBOLS = {
    "pending": "○",
    "in_progress": "◐",
    "completed": "✓",
    "failed": "✗",
    "cancelled": "⊘",
}

#: Output lines kept visible per text block and per terminal (the rest scrolls off the top).
OUTPUT_LINES = 12


def _tail(text: str, lines: int = OUTPUT_LINES) -> str:
    parts = text.rstrip("\n").split("\n")
    if len(parts) <= lines:
        return "\n".join(parts)
    return f"… {len(parts) - lines} more lines\n" + "\n".join(parts[-lines:])


class TerminalView(Static):
    """The output of a terminal embedded in a tool call, following it while it runs."""

    #: Seconds between two reads of a running terminal's output.
    POLL_INTERVAL: ClassVar[float] = 0.2

    def __init__(self, terminal_id: str, reader: TerminalReader | None) -> None:
        super().__init__(plain(f"$ terminal {terminal_id}", "dim"), classes="terminal")
        self.terminal_id = terminal_id
        self._reader = reader
        self._last: str | None = None

    def on_mount(self) -> None:
        if self._reader is not None:
            self.set_interval(self.POLL_INTERVAL, self.poll, name=f"terminal {self.terminal_id}")
            self.call_later(self.poll)

    async def poll(self) -> None:
        """Read the terminal's output again and show its tail."""
        if self._reader is None:
            return
        output = await self._reader(self.terminal_id)
        if output is None or output == self._last:
            return
        self._last = output
        self.update(plain(_tail(output)) if output else plain("(no output yet)", "dim"))

    @property
    def output(self) -> str | None:
        """The output last read (None before the first read)."""
        return self._last


class _CardHeader(Static, can_focus=True):
    """The card's one-line summary; Enter or a click folds the card."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space", "fold", "Fold", show=False),
    ]

    def action_fold(self) -> None:
        card = self.parent
        if isinstance(card, ToolCard):
            card.expanded = not card.expanded

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.action_fold()


class ToolCard(Vertical):
    """A tool call, updated in place from its snapshots."""

    DEFAULT_CSS = """
    ToolCard {
        height: auto;
        margin: 0 0 1 0;
        padding: 0 1;
        border-left: thick $secondary 60%;
        &.-completed { border-left: thick $success 70%; }
        &.-failed { border-left: thick $error 80%; }
        &.-cancelled { border-left: thick $warning 60%; }
        _CardHeader { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
        _CardHeader:focus { background: $boost; text-style: bold; }
        #body { height: auto; }
        .locations { color: $text-muted; }
        .output { color: $text; max-height: 16; }
        .terminal { background: $surface-darken-1; padding: 0 1; }
        DiffView { margin: 1 0 0 0; }
    }
    """

    def __init__(
        self,
        state: ToolCallState,
        *,
        cwd: str | None = None,
        terminals: TerminalReader | None = None,
        expanded: bool = True,
    ) -> None:
        super().__init__(id=None, classes=f"-{state.status}")
        self.state = state
        self._cwd = cwd
        self._terminals = terminals
        self._expanded = expanded
        self._header = _CardHeader(self._header_content(state))
        self._body = Vertical(id="body")
        self._body.display = expanded

    @property
    def tool_call_id(self) -> str:
        """The id of the tool call this card shows."""
        return self.state.tool_call_id

    @property
    def expanded(self) -> bool:
        """Whether the body (locations, output, diffs, terminals) is shown."""
        return self._expanded

    @expanded.setter
    def expanded(self, value: bool) -> None:
        self._expanded = value
        self._body.display = value
        self._header.update(self._header_content(self.state))

    def compose(self) -> ComposeResult:
        yield self._header
        with self._body:
            yield from self._body_widgets(self.state)

    def show(self, state: ToolCallState) -> None:
        """Show a newer snapshot of the same tool call."""
        old, self.state = self.state, state
        if old is state:
            return
        if old.status != state.status:
            self.remove_class(f"-{old.status}")
            self.add_class(f"-{state.status}")
        self._header.update(self._header_content(state))
        if old.content is not state.content or old.locations is not state.locations:
            self._body.remove_children()
            self._body.mount_all(list(self._body_widgets(state)))

    def _header_content(self, state: ToolCallState) -> Content:
        fold = "▾" if self._expanded else "▸"
        symbol = STATUS_SYMBOLS.get(state.status, "?")
        title = state.title or state.name or state.tool_call_id
        return Content.assemble(
            (f"{fold} {symbol} ", f"$text-{_status_colour(state.status)}"),
            (state.kind, "bold"),
            " ",
            plain_line(title),
            (f"  {state.status.replace('_', ' ')}", "dim"),
        )

    def _body_widgets(self, state: ToolCallState) -> list[Widget]:
        widgets: list[Widget] = []
        if state.locations:
            lines = [
                display_path(location.path, self._cwd)
                + (f":{location.line}" if location.line is not None else "")
                for location in state.locations
            ]
            widgets.append(Static(plain("\n".join(lines)), classes="locations"))
        for item in state.content:
            if isinstance(item, ContentToolCallContent):
                block = item.content
                if isinstance(block, TextContentBlock):
                    if block.text.strip():
                        widgets.append(Static(plain(_tail(block.text)), classes="output"))
                else:
                    widgets.append(Static(plain(f"[{block.type} content]", "dim")))
            elif isinstance(item, DiffToolCallContent):
                widgets.append(diff_view(item, self._cwd))
            else:
                widgets.append(TerminalView(item.terminal_id, self._terminals))
        return widgets


def _status_colour(status: str) -> str:
    return {
        "completed": "success",
        "failed": "error",
        "cancelled": "warning",
        "in_progress": "accent",
    }.get(status, "secondary")

"""The conversation of one session: user messages, the streamed reply, thoughts, tool cards.

The view is drawn from the session's :class:`~accord.client.SessionView` (the client library
folds every update into it, inside a turn or not), not from a second copy of the state: each
:meth:`ConversationView.sync` mounts a widget for every timeline item it has not shown yet
and brings the shown ones up to date (a message that grew gets only its new text appended;
a tool card gets the newer snapshot). Syncs are requested on every update and run at most
once per frame, so a reply of thousands of chunks costs one Markdown append per frame, never
one per chunk, and never redraws what did not change. The scroll position follows the end
of the conversation until the reader scrolls up (Textual's anchoring), and everything stays
in the scrollback.

Above: :mod:`accord.tui._pane`. Below: the view, :mod:`accord.tui._tool_card`, Textual's
``Markdown`` (code blocks highlighted).
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Markdown, Static

from ..client import Message, SessionView, ToolCallState
from ..schema import ResourceLinkContentBlock, TextContentBlock
from ._safe import clean, plain
from ._tool_card import TerminalReader, ToolCard

__all__ = ("AgentMessage", "ConversationView", "Notice", "ThoughtBlock", "UserMessage")

#: Seconds between two syncs while updates keep coming (about one frame).
FRAME = 1 / 30
#: A long session opens with only its latest items drawn; earlier ones are drawn on demand,
#: this many at a time (scrolling to the top, or Enter on the "earlier" line).
WINDOW = 150


def _markdown_text(text: str) -> str:
    """Message text for the Markdown widget: carriage returns dropped, controls visible."""
    return clean(text.replace("\r", ""))


class UserMessage(Static):
    """A prompt: its text, and the files and images it carried."""

    DEFAULT_CSS = """
    UserMessage {
        margin: 0 0 1 0;
        padding: 0 1;
        border-left: thick $primary;
        background: $primary 8%;
    }
    """

    def __init__(self, message: Message, *, echo_of: Message | None = None) -> None:
        super().__init__(plain(_user_text(message)))
        self.message = message
        self.shown_length = len(message.text)
        # An agent that echoes the prompt this client sent (as ``user_message_chunk``s) would
        # show it twice: the echo stays hidden while it repeats the prompt.
        self._echo_of = echo_of
        self._check_echo()

    def _check_echo(self) -> None:
        original = self._echo_of
        if original is not None:
            repeats = original.text.startswith(self.message.text)
            self.display = not repeats
            if not repeats:
                self._echo_of = None

    @property
    def is_echo(self) -> bool:
        """Whether this is the agent's echo of the prompt before it (and hidden)."""
        return self._echo_of is not None

    def catch_up(self) -> None:
        """Show text that arrived since (a replayed prompt comes in chunks)."""
        if len(self.message.text) != self.shown_length:
            self.shown_length = len(self.message.text)
            self.update(plain(_user_text(self.message)))
            self._check_echo()


def _user_text(message: Message) -> str:
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceLinkContentBlock):
            parts.append(f"\n📎 {block.name}")
        else:
            parts.append(f"\n[{block.type}]")
    return "".join(parts).strip("\n") or " "


class AgentMessage(Markdown):
    """The agent's reply as Markdown, extended as chunks arrive."""

    DEFAULT_CSS = """
    AgentMessage {
        margin: 0 0 1 0;
        padding: 0 1;
        background: transparent;
    }
    """

    def __init__(self, message: Message) -> None:
        self.message = message
        self.shown_length = len(message.text)
        super().__init__(_markdown_text(message.text))

    async def catch_up(self) -> None:
        """Append the text that arrived since the last call."""
        text = self.message.text
        if len(text) > self.shown_length:
            fragment = text[self.shown_length :]
            self.shown_length = len(text)
            await self.append(_markdown_text(fragment))


class _ThoughtHeader(Static, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space", "fold", "Fold", show=False),
    ]

    def action_fold(self) -> None:
        block = self.parent
        if isinstance(block, ThoughtBlock):
            block.expanded = not block.expanded

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.action_fold()


class ThoughtBlock(Vertical):
    """The agent's visible reasoning, set apart (dim, in a foldable block)."""

    DEFAULT_CSS = """
    ThoughtBlock {
        height: auto;
        margin: 0 0 1 0;
        padding: 0 1;
        border-left: thick $foreground 20%;
        color: $text-muted;
        _ThoughtHeader { text-style: italic; }
        _ThoughtHeader:focus { background: $boost; }
        #thought { text-style: italic; }
    }
    """

    def __init__(self, message: Message, *, expanded: bool = True) -> None:
        super().__init__()
        self.message = message
        self.shown_length = len(message.text)
        self._expanded = expanded
        self._header = _ThoughtHeader(self._header_text())
        self._text = Static(plain(message.text.strip()), id="thought")
        self._text.display = expanded

    def compose(self) -> ComposeResult:
        yield self._header
        yield self._text

    @property
    def expanded(self) -> bool:
        """Whether the reasoning's text is shown."""
        return self._expanded

    @expanded.setter
    def expanded(self, value: bool) -> None:
        self._expanded = value
        self._text.display = value
        self._header.update(self._header_text())

    def _header_text(self) -> str:
        return f"{'▾' if self._expanded else '▸'} thinking"

    def catch_up(self) -> None:
        """Show text that arrived since the last call."""
        if len(self.message.text) != self.shown_length:
            self.shown_length = len(self.message.text)
            self._text.update(plain(self.message.text.strip()))


_Item = UserMessage | AgentMessage | ThoughtBlock | ToolCard


class ConversationView(VerticalScroll):
    """Everything said and done in one session, in order, kept in sync with its view."""

    DEFAULT_CSS = """
    ConversationView {
        height: 1fr;
        padding: 0 1;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(
        self,
        view: SessionView,
        *,
        cwd: str | None = None,
        terminals: TerminalReader | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.view = view
        self._cwd = cwd
        self._terminals = terminals
        self._items: list[_Item] = []
        # The timeline index of the first item drawn (earlier ones wait for the reader).
        self._first: int | None = None
        self._earlier: EarlierItems | None = None
        self._cards: dict[str, ToolCard] = {}
        self._timer: Timer | None = None
        self._dirty = False
        self._syncing = False
        self._expanded = True
        #: How many syncs ran (a benchmark figure: frames drawn for a reply).
        self.syncs = 0

    def compose(self) -> ComposeResult:
        return iter(())

    def on_mount(self) -> None:
        self.anchor()
        self.request_sync()

    @property
    def items(self) -> tuple[Widget, ...]:
        """The widgets shown, one per timeline item, in order."""
        return tuple(self._items)

    def card(self, tool_call_id: str) -> ToolCard | None:
        """The card of a tool call, if it is shown."""
        return self._cards.get(tool_call_id)

    @property
    def pending(self) -> bool:
        """Whether updates wait to be drawn."""
        return self._dirty or self._syncing or self._timer is not None

    def request_sync(self) -> None:
        """Draw what changed in the view, within a frame (several requests: one sync)."""
        self._dirty = True
        if self._timer is None and not self._syncing and self.is_mounted:
            self._timer = self.set_timer(FRAME, self._run_sync, name="conversation sync")

    async def flush(self) -> None:
        """Draw what is pending now, not at the next frame (before a modal covers the view:
        the screen under a modal is not redrawn until the modal closes)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._dirty:
            await self._run_sync()

    async def _run_sync(self) -> None:
        self._timer = None
        if self._syncing:
            return
        self._syncing = True
        try:
            while self._dirty:
                self._dirty = False
                await self.sync()
        finally:
            self._syncing = False

    async def sync(self) -> None:
        """Mount widgets for new timeline items and bring the others up to date."""
        self.syncs += 1
        timeline = self.view.timeline
        if self._first is None:
            self._first = max(0, len(timeline) - WINDOW)
            if self._first:
                self._earlier = EarlierItems(self._first)
                await self.mount(self._earlier)
        new: list[_Item] = []
        for item in timeline[self._first + len(self._items) :]:
            widget = self._widget_for(item)
            self._items.append(widget)
            new.append(widget)
        calls = self.view.tool_calls
        for widget in self._items:
            if isinstance(widget, ToolCard):
                state = calls.get(widget.tool_call_id)
                if state is not None and state is not widget.state:
                    widget.show(state)
            elif isinstance(widget, AgentMessage):
                if widget.is_mounted:
                    await widget.catch_up()
            else:
                widget.catch_up()
        if new:
            await self.mount_all(new)

    @property
    def hidden_earlier(self) -> int:
        """How many earlier timeline items are not drawn yet."""
        return self._first or 0

    async def show_earlier(self) -> None:
        """Draw the previous :data:`WINDOW` items above the ones shown."""
        first = self._first or 0
        if not first or self._earlier is None:
            return
        start = max(0, first - WINDOW)
        timeline = self.view.timeline
        widgets = [self._widget_for(item, before=None) for item in timeline[start:first]]
        self._items[:0] = widgets
        self._first = start
        await self.mount_all(widgets, after=self._earlier)
        if start:
            self._earlier.count = start
        else:
            await self._earlier.remove()
            self._earlier = None

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        if new_value <= 0 < old_value and self._earlier is not None:
            self.call_later(self.show_earlier)
        super().watch_scroll_y(old_value, new_value)

    def _widget_for(self, item: Message | ToolCallState, before: object = ...) -> _Item:
        if isinstance(item, ToolCallState):
            card = ToolCard(item, cwd=self._cwd, terminals=self._terminals, expanded=self._expanded)
            self._cards[item.tool_call_id] = card
            return card
        if item.role == "user":
            if before is ...:
                before = self._items[-1] if self._items else None
            echo_of = None
            if (
                item.message_id is not None
                and isinstance(before, UserMessage)
                and before.message.message_id is None
                and not before.is_echo
            ):
                echo_of = before.message
            return UserMessage(item, echo_of=echo_of)
        if item.role == "thought":
            return ThoughtBlock(item, expanded=self._expanded)
        return AgentMessage(item)

    def set_expanded(self, expanded: bool) -> None:
        """Unfold (or fold) every tool card and thought, and those still to come."""
        self._expanded = expanded
        for widget in self._items:
            if isinstance(widget, ToolCard | ThoughtBlock):
                widget.expanded = expanded

    @property
    def expanded(self) -> bool:
        """Whether cards and thoughts are unfolded (the last :meth:`set_expanded`)."""
        return self._expanded

    async def add_notice(self, text: str, *, error: bool = False) -> None:
        """Add a line of the client's own after what is shown (drawn up to date first)."""
        await self.sync()
        await self.mount(Notice(plain(text), classes="-error" if error else ""))


class EarlierItems(Static, can_focus=True):
    """The line above a long session's drawn items: how many earlier ones wait; Enter or a
    click (or scrolling to the top) draws them."""

    DEFAULT_CSS = """
    EarlierItems { color: $text-muted; text-align: center; margin: 0 0 1 0; }
    EarlierItems:focus { background: $boost; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space", "show", "Show earlier", show=False),
    ]

    def __init__(self, count: int) -> None:
        super().__init__(self._text(count))
        self._count = count

    @staticmethod
    def _text(count: int) -> str:
        return f"▲ {count} earlier items (scroll up or press Enter to show them)"

    @property
    def count(self) -> int:
        """How many earlier items are not drawn."""
        return self._count

    @count.setter
    def count(self, value: int) -> None:
        self._count = value
        self.update(self._text(value))

    async def action_show(self) -> None:
        view = self.parent
        if isinstance(view, ConversationView):
            await view.show_earlier()

    async def on_click(self, event: events.Click) -> None:
        event.stop()
        await self.action_show()


class Notice(Static):
    """A line the client adds to the conversation (a turn's end, an error); not agent text."""

    DEFAULT_CSS = """
    Notice { margin: 0 0 1 0; padding: 0 1; color: $text-muted; }
    Notice.-error { color: $text-error; border-left: thick $error; }
    """

"""The conversation of one session: user messages, the streamed reply, thoughts, tool cards.

The view is drawn from the session's :class:`~accord.client.SessionView` (the client library
folds every update into it, inside a turn or not), not from a second copy of the state: each
:meth:`ConversationView.sync` mounts a widget for every timeline item it has not shown yet
and brings the shown ones up to date (a message that grew gets only its new text appended;
a tool card gets the newer snapshot). Syncs are requested on every update and run at most
once per frame, so a reply of thousands of chunks costs one Markdown append per frame, never
one per chunk, and never redraws what did not change. A long reply is drawn in parts (see
:class:`AgentMessage`): a frame appends to its last part only, and the parts far from the
rows shown are put away (one empty widget of the same height each) until scrolled to, as
Textual lays out every widget of the screen on every frame; so a frame costs what changed,
not the reply's length. Text that comes faster than frames (a burst of many paragraphs)
has only its last two screens parsed; the rest goes into parts put away unparsed. A session
opened on a long history parses only its latest replies; the others when scrolled to. The
scroll position follows the end of the conversation until the
reader scrolls up (Textual's anchoring), and everything stays in the scrollback.

Above: :mod:`accord.tui._pane`. Below: the view, :mod:`accord.tui._tool_card`, Textual's
``Markdown`` (code blocks highlighted).
"""

from __future__ import annotations

import itertools
from typing import ClassVar

from markdown_it import MarkdownIt
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message as TextualMessage
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownBlock

from ..client import CompactionState, Message, SessionView, ToolCallState
from ..schema import ResourceLinkContentBlock, TextContentBlock
from ._safe import clean, plain
from ._tool_card import TerminalReader, ToolCard

__all__ = (
    "AgentMessage",
    "CompactionNote",
    "ConversationView",
    "Notice",
    "ReplyPart",
    "ThoughtBlock",
    "UserMessage",
)

#: Seconds between two syncs while updates keep coming (about one frame).
FRAME = 1 / 30
#: A reply's last part is sealed once it holds more Markdown blocks than this (a frame's
#: layout and parsing cost follows the last part's size, not the reply's).
PART_BLOCKS = 40
#: A session opened with more items than this draws the replies among its latest ones
#: only (the others are parsed when scrolled to: see :class:`AgentMessage`).
LIVE = 30
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


_REPLY_CSS = """
    margin: 0 0 1 0;
    padding: 0 1;
    background: transparent;
"""


#: The tokens Textual's Markdown widget draws a top-level block for (named after them).
_BLOCK_TOKENS = frozenset(
    {
        "heading_open",
        "hr",
        "paragraph_open",
        "blockquote_open",
        "bullet_list_open",
        "ordered_list_open",
        "table_open",
        "fence",
        "code_block",
    }
)


def _block_starts(source: str) -> list[tuple[str, int]]:
    """The top-level blocks ``source`` parses into (as Textual's Markdown widget parses
    it): each one's token type and first line."""
    tokens = MarkdownIt("gfm-like").parse(source)
    return [
        (token.type, token.map[0])
        for token in tokens
        if token.level == 0 and token.type in _BLOCK_TOKENS and token.map is not None
    ]


#: What a line of a reply's text starting with one of these may be other than a paragraph.
_NOT_PLAIN = frozenset(" \t#-*+>|`~<=_[!0123456789")


def _plain_cuts(text: str, start: int) -> list[int]:
    """Where, from ``start`` on, ``text`` can be cut into parts drawn as one Markdown
    document: the offsets of the lines that start a paragraph after a blank line, outside
    code fences (a paragraph has no top margin, and nothing open continues across it)."""
    cuts: list[int] = []
    fence: str | None = None
    blank = False
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif blank and offset >= start and stripped and line[0] not in _NOT_PLAIN:
            cuts.append(offset)
        blank = fence is None and not stripped
        offset += len(line)
    return cuts


def _rows(text: str, width: int) -> int:
    """About how many rows ``text`` takes drawn ``width`` cells wide (a block's lines
    wrapped, and a blank row after each block): the height of a part put away unparsed."""
    rows = 0
    for block in text.split("\n\n"):
        if block.strip():
            rows += 1 + sum(max(1, -(-len(line) // width)) for line in block.strip().split("\n"))
    return rows


class ReplyPart(Markdown):
    """A later part of a long reply: a run of its Markdown blocks, drawn after the part
    before it (see :class:`AgentMessage`)."""

    DEFAULT_CSS = "ReplyPart {" + _REPLY_CSS + "}"


class AgentMessage(Markdown):
    """The agent's reply as Markdown, extended as chunks arrive.

    A long reply is drawn in parts: this widget, then :class:`ReplyPart` widgets after it
    in the conversation. New text is appended to the last part (Textual re-parses it from
    its last block on); once that part holds more than :data:`PART_BLOCKS` blocks, its
    finished blocks stay in it, sealed, and the blocks still open move to a new last part.
    A sealed part is never touched again, and the parts sit directly in the scrolling
    conversation (whose size does not change as the reply grows), so Textual keeps their
    layout: a frame lays out and re-parses the last part only, however long the reply.
    The cut always falls before a finished block with no top margin (a paragraph, a
    list), so the gaps between blocks are those of one Markdown document; a block still
    open (a code fence whose closing line has not come yet, a list still growing) is
    never cut, so its highlighting and layout are those of the whole block.
    """

    DEFAULT_CSS = "AgentMessage {" + _REPLY_CSS + "}"

    def __init__(self, message: Message, *, lazy_width: int = 0) -> None:
        self.message = message
        # A reply far above the end of a session as it opens (``lazy_width``, the width
        # it will be drawn at): nothing is parsed until it is scrolled to (bring_back);
        # until then it is one empty widget of about its height.
        self._lazy = lazy_width > 0
        # Nothing is shown until the first catch_up (once mounted), which appends it all:
        # Textual's Markdown.update (the path of a widget's initial text) leaves its
        # bookkeeping off by a line or more, and the next append then redraws the last
        # block from the wrong line (a paragraph is lost when the text ended with a blank
        # line). Text only ever goes in by append.
        self.shown_length = 0
        # The sealed parts (this one first, once sealed), the text each keeps, those put
        # away (see fold_away), and the part that grows.
        self._sealed: list[Markdown] = []
        self._kept: list[str] = []
        self._away: set[int] = set()
        self._tail: Markdown = self
        super().__init__()
        if self._lazy:
            self.styles.height = _rows(_markdown_text(message.text), lazy_width)

    class Sealed(TextualMessage):
        """A part of the reply was sealed (the conversation may put parts away)."""

    def on_mount(self) -> None:
        # After Markdown's own mount handler (which empties the widget), in this widget's
        # task: each reply of a long session fills itself, side by side with the others.
        if not self._lazy:
            self.call_later(self._first_catch_up)

    async def _first_catch_up(self) -> None:
        if await self.catch_up():
            self.post_message(self.Sealed())

    @property
    def parts(self) -> tuple[Markdown, ...]:
        """The widgets drawing the reply, in order (this one first; the last one grows)."""
        return (*self._sealed, self._tail)

    @property
    def source(self) -> str:
        """The reply's Markdown as drawn so far (every part's)."""
        if self._tail is self:
            return super().source
        return "".join(self._kept) + self._tail.source

    def _own_source(self) -> str:
        return super().source

    async def catch_up(self) -> bool:
        """Append the text that arrived since the last call; whether a part was sealed."""
        text = self.message.text
        if len(text) > self.shown_length and not self._lazy:
            fragment = _markdown_text(text[self.shown_length :])
            self.shown_length = len(text)
            if fragment.count("\n\n") > PART_BLOCKS and await self._put_away_burst(fragment):
                return True
            await self._tail.append(fragment)
            if len(self._tail.children) > PART_BLOCKS:
                return await self._seal()
        return False

    async def _put_away_burst(self, fragment: str) -> bool:
        """Draw only the end of a large ``fragment`` (text that came faster than frames):
        the text more than two screens above the end is sealed into parts put away
        without being parsed (their heights estimated), drawn when scrolled to like any
        part put away; so a frame after a burst costs about what a frame of a steady
        stream costs. Whether it did (a burst too short to fill two screens is appended)."""
        parent = self.parent
        tail = self._tail
        if not isinstance(parent, Widget) or not parent.size.height:
            return False
        height = parent.size.height
        width = max(10, tail.size.width - 2)
        own = self._own_source() if tail is self else tail.source
        whole = own + fragment
        cuts = _plain_cuts(whole, len(own))
        rows = 0
        end = len(whole)
        keep_from: int | None = None
        for cut in reversed(cuts):
            rows += _rows(whole[cut:end], width)
            end = cut
            if rows > 2 * height + 2:
                keep_from = cut
                break
        if keep_from is None:
            return False
        bounds = [0, *[c for c in cuts if c < keep_from][PART_BLOCKS::PART_BLOCKS], keep_from]
        pieces = [whole[a:b] for a, b in itertools.pairwise(bounds) if b > a]
        away = [ReplyPart() for _ in pieces[1:]]
        last = ReplyPart()
        async with parent.batch():
            await tail.remove_children()
            for part, piece in zip((tail, *away), pieces, strict=True):
                part.styles.margin = (0, 0, 0, 0)
                part.styles.height = _rows(piece, width)
            await parent.mount_all([*away, last], after=tail)
            await last.append(whole[keep_from:])
        first = len(self._sealed)
        self._sealed.extend((tail, *away))
        self._kept.extend(pieces)
        self._away.update(range(first, len(self._sealed)))
        self._tail = last
        return True

    async def _seal(self) -> bool:
        """Leave the finished blocks in the last part and move the open ones to a new part."""
        tail = self._tail
        parent = self.parent
        if not isinstance(parent, Widget):
            return False
        own = self._own_source() if tail is self else tail.source
        blocks = [child for child in tail.children if isinstance(child, MarkdownBlock)]
        # Where each block starts, from a parse of the whole part (the line numbers Textual
        # keeps while appending can be off); a block is named after its opening token.
        starts = _block_starts(own)
        if [name for name, _ in starts] != [block.name for block in blocks]:
            return False  # not the blocks this text parses into: leave the part as it is
        # The last block may still change (even its kind); cut before a finished one that
        # has no top margin, so the gap above it is the previous block's bottom margin,
        # as it is inside one Markdown widget.
        cut = next(
            (
                index
                for index in range(len(blocks) - 2, 0, -1)
                if blocks[index].styles.margin.top == 0
            ),
            None,
        )
        if cut is None:
            return False
        lines = own.splitlines(keepends=True)
        first_line = starts[cut][1]
        part = ReplyPart()
        async with parent.batch():  # one screen update: no frame shows the blocks gone
            await tail.remove_children(blocks[cut:])
            # The gap after the reply goes after its last part. (Inline, not a class: a
            # class change restyles every block of the part.)
            tail.styles.margin = (0, 0, 0, 0)
            await parent.mount(part, after=tail)
            await part.append("".join(lines[first_line:]))
        self._sealed.append(tail)
        self._kept.append("".join(lines[:first_line]))
        self._tail = part
        return True

    @property
    def has_away(self) -> bool:
        """Whether some sealed part is put away (see :meth:`fold_away`), or the reply is
        not drawn yet (opened far above the end of its session)."""
        return self._lazy or bool(self._away)

    async def fold_away(self, top: int, bottom: int) -> None:
        """Put away the sealed parts outside rows ``top`` to ``bottom`` of the conversation:
        their blocks are removed and the part keeps its height, one empty widget in their
        place. Textual lays out every widget of a screen on every frame, wherever it is, so
        this keeps a frame's cost independent of how long the reply above has grown."""
        for index, part in enumerate(self._sealed):
            if index in self._away or not part.children:
                continue
            region = part.virtual_region
            height = part.size.height
            if height and (region.bottom < top or region.y > bottom):
                async with part.batch():
                    await part.remove_children()
                    part.styles.height = height
                self._away.add(index)

    async def bring_back(self, top: int | None = None, bottom: int | None = None) -> None:
        """Draw again the parts put away that reach into rows ``top`` to ``bottom`` (all of
        them without bounds: after a resize, their heights are no longer right)."""
        if self._lazy:
            region = self.virtual_region
            if (
                top is not None
                and bottom is not None
                and not (region.bottom >= top and region.y <= bottom)
            ):
                return
            self._lazy = False
            self.styles.height = "auto"
            if await self.catch_up():
                self.post_message(self.Sealed())
        for index in sorted(self._away):
            part = self._sealed[index]
            region = part.virtual_region
            if top is None or bottom is None or (region.bottom >= top and region.y <= bottom):
                self._away.discard(index)
                await part.update(self._kept[index])
                part.styles.height = "auto"


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


class CompactionNote(Static):
    """A compaction of the agent's context: it summarised earlier turns for its model.

    One line while it runs ("summarising earlier turns…"), then "earlier turns summarised"
    with the summary under it (dim), or why it failed (the history is kept as it was).
    The summary is the agent's text, shown as it is (never as markup).
    """

    DEFAULT_CSS = """
    CompactionNote {
        margin: 0 0 1 0;
        padding: 0 1;
        color: $text-muted;
        border-left: thick $secondary;
    }
    CompactionNote.-failed { color: $text-error; border-left: thick $error; }
    """

    def __init__(self, state: CompactionState) -> None:
        super().__init__(plain(self._text(state)))
        self.state = state
        self.set_class(state.finished and state.status != "completed", "-failed")

    @staticmethod
    def _text(state: CompactionState) -> str:
        summary = state.summary_text.strip()
        match state.status:
            case "in_progress":
                head = "⟳ summarising earlier turns…"
            case "completed":
                head = "✓ earlier turns summarised (the model now sees the summary)"
            case status:
                head = f"✗ compaction {status}: {state.error or status}; the history is kept"
        return f"{head}\n{summary}" if summary else head

    @property
    def text(self) -> str:
        """What the note shows."""
        return self._text(self.state)

    def show(self, state: CompactionState) -> None:
        """Show a newer snapshot of the compaction."""
        self.state = state
        self.set_class(state.finished and state.status != "completed", "-failed")
        self.update(plain(self._text(state)))

    def catch_up(self) -> None:
        """Nothing to do: :meth:`show` brings it up to date."""


_Item = UserMessage | AgentMessage | ThoughtBlock | ToolCard | CompactionNote


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
        # Replies with parts put away (see AgentMessage.fold_away), and the width they had.
        self._away: set[AgentMessage] = set()
        self._folding = False
        self._bringing_back = False
        self._width = 0
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
        while self._dirty and not self._syncing:
            await self._sync_once()

    async def _run_sync(self) -> None:
        self._timer = None
        if not self._syncing:
            await self._sync_once()
            if self._dirty:
                # More came while this sync ran: it is drawn a frame later, with whatever
                # else comes meanwhile (a sync per frame, however fast the updates come).
                self.request_sync()

    async def _sync_once(self) -> None:
        self._syncing = True
        self._dirty = False
        try:
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
        fresh = timeline[self._first + len(self._items) :]
        # Opening a long session: the replies far above its end are parsed when scrolled to.
        lazy_until = len(fresh) - LIVE if not self._items and len(fresh) > 2 * LIVE else 0
        width = self.scrollable_content_region.width - 2  # the reply's padding
        for index, item in enumerate(fresh):
            widget = self._widget_for(item, lazy_width=width if index < lazy_until else 0)
            self._items.append(widget)
            new.append(widget)
        calls = self.view.tool_calls
        compactions = self.view.compactions
        for widget in self._items:
            if isinstance(widget, CompactionNote):
                latest = compactions.get(widget.state.compaction_id)
                if latest is not None and latest is not widget.state:
                    widget.show(latest)
            elif isinstance(widget, ToolCard):
                state = calls.get(widget.tool_call_id)
                if state is not None and state is not widget.state:
                    widget.show(state)
            elif isinstance(widget, AgentMessage):
                if widget.is_mounted and await widget.catch_up():
                    self._fold_soon()
            else:
                widget.catch_up()
        if new:
            await self.mount_all(new)
            self._away.update(w for w in new if isinstance(w, AgentMessage) and w.has_away)

    def on_agent_message_sealed(self, event: AgentMessage.Sealed) -> None:
        event.stop()
        self._fold_soon()

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
        if self._away and not self._bringing_back:
            self._bringing_back = True
            self.call_later(self._bring_back_near)
        super().watch_scroll_y(old_value, new_value)

    def _window(self) -> tuple[int, int]:
        """The rows shown, and a screen above and below."""
        height = self.size.height
        top = round(self.scroll_y)
        return top - height, top + 2 * height

    def _fold_soon(self) -> None:
        """Put away, once this frame is drawn, the sealed reply parts far from the rows
        shown (a long reply's parts, as they scroll out of sight)."""
        if not self._folding:
            self._folding = True
            self.call_after_refresh(self._fold_away)

    async def _fold_away(self) -> None:
        self._folding = False
        top, bottom = self._window()
        for widget in self._items:
            if isinstance(widget, AgentMessage) and len(widget.parts) > 1:
                await widget.fold_away(top, bottom)
                if widget.has_away:
                    self._away.add(widget)

    async def _bring_back_near(self) -> None:
        self._bringing_back = False
        top, bottom = self._window()
        for reply in list(self._away):
            await reply.bring_back(top, bottom)
            if not reply.has_away:
                self._away.discard(reply)

    async def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            # The heights kept for parts put away were those of the old width.
            for reply in list(self._away):
                await reply.bring_back()
            self._away.clear()

    def _widget_for(
        self,
        item: Message | ToolCallState | CompactionState,
        before: object = ...,
        *,
        lazy_width: int = 0,
    ) -> _Item:
        if isinstance(item, CompactionState):
            return CompactionNote(item)
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
        return AgentMessage(item, lazy_width=lazy_width)

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

"""The prompt: a multi-line input with history, slash-command and ``@file`` completion.

* Enter sends; Ctrl-J (or Shift-Enter / Alt-Enter where the terminal reports them) starts
  a new line. Up on the first line and Down on the last walk the history of sent prompts
  (the draft is kept).
* Typing ``/`` at the start lists the agent's slash commands (from
  ``available_commands_update``) and ``@`` lists the session's files, ranked fuzzily; Tab
  (or Enter) takes the highlighted one, Up/Down move, Escape closes the list.
* Pasting the path of an image file (what terminals do when a file is dropped on them)
  attaches the image instead of inserting the path.

The bar posts :class:`PromptBar.Submitted` with the text and the attached images; turning them
into content blocks (and refusing what the agent does not accept) is the app's business.

Above: :mod:`accord.tui._app`. Below: Textual's ``TextArea`` and ``OptionList``,
:mod:`accord.tui._mentions`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.fuzzy import Matcher
from textual.message import Message
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.option_list import Option

from ..schema import AvailableCommand
from ._mentions import AttachmentRefused, FileIndex, ImageAttachment, image_from_paste
from ._safe import plain_line

__all__ = ("Completion", "PromptArea", "PromptBar", "slash_completions")

_MENTION_AT_CURSOR = re.compile(r"(?:^|\s)@(\S*)$")
_NEWLINE_KEYS = frozenset({"ctrl+j", "shift+enter", "alt+enter", "ctrl+enter"})


@dataclass(frozen=True, slots=True)
class Completion:
    """What the list offers: replace ``start``..cursor on the cursor's line with ``text``."""

    start: int
    text: str
    label: Content


def slash_completions(
    commands: Sequence[AvailableCommand], query: str, limit: int = 10
) -> list[AvailableCommand]:
    """The commands matching ``query`` (prefix matches first, then fuzzy ones)."""
    prefix = [c for c in commands if c.name.lower().startswith(query.lower())]
    if not query:
        return prefix[:limit]
    matcher = Matcher(query)
    fuzzy = sorted(
        (c for c in commands if c not in prefix and matcher.match(c.name) > 0),
        key=lambda c: -matcher.match(c.name),
    )
    return [*prefix, *fuzzy][:limit]


class PromptArea(TextArea):
    """The text area of the prompt bar (see the module docstring for its keys)."""

    class Submitted(Message):
        """Enter was pressed on a prompt that is not blank."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.sent: list[str] = []
        self._history_index: int | None = None
        self._draft = ""
        self.completions: list[Completion] = []
        #: Called when the completions change (the bar shows them).
        self.on_completions: Callable[[list[Completion]], None] | None = None
        self.commands: Callable[[], Sequence[AvailableCommand]] = lambda: ()
        self.files: FileIndex | None = None
        self.highlighted = 0
        #: Called with pasted text; True if it took the paste (an image), so it is not inserted.
        self.on_paste_text: Callable[[str], bool] | None = None

    async def _on_paste(self, event: events.Paste) -> None:
        if self.on_paste_text is not None and self.on_paste_text(event.text):
            event.stop()
            event.prevent_default()

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        handled = True
        if key in _NEWLINE_KEYS:
            self.insert("\n")
        elif key in ("enter", "tab") and self.completions:
            self.accept_completion()
        elif key == "enter":
            self.submit()
        elif key == "escape" and self.completions:
            self.set_completions([])
        elif key == "up" and self.completions:
            self.highlighted = (self.highlighted - 1) % len(self.completions)
            self._notify_completions()
        elif key == "down" and self.completions:
            self.highlighted = (self.highlighted + 1) % len(self.completions)
            self._notify_completions()
        elif key == "up" and self.cursor_location[0] == 0:
            self.history_previous()
        elif key == "down" and self.cursor_location[0] == self.document.line_count - 1:
            self.history_next()
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()

    def submit(self) -> None:
        """Send the prompt (a blank one is ignored) and remember it."""
        text = self.text
        if not text.strip():
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._history_index = None
        self._draft = ""
        self.clear()
        self.set_completions([])
        self.post_message(self.Submitted(text))

    def history_previous(self) -> None:
        """Show the prompt sent before the one shown (the draft is kept)."""
        if not self.sent:
            return
        if self._history_index is None:
            self._draft = self.text
            self._history_index = len(self.sent)
        if self._history_index > 0:
            self._history_index -= 1
            self._show(self.sent[self._history_index])

    def history_next(self) -> None:
        """Show the prompt sent after the one shown, then the draft."""
        if self._history_index is None:
            return
        self._history_index += 1
        if self._history_index >= len(self.sent):
            self._history_index = None
            self._show(self._draft)
        else:
            self._show(self.sent[self._history_index])

    def _show(self, text: str) -> None:
        self.load_text(text)
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document.get_line(last))))

    # ------------------------------------------------------------------ completion

    @on(TextArea.Changed)
    def _changed(self) -> None:
        self.update_completions()

    def update_completions(self) -> None:
        """Work out what the list offers for the text before the cursor."""
        row, column = self.cursor_location
        line = self.document.get_line(row)[:column]
        completions: list[Completion] = []
        if row == 0 and line.startswith("/") and " " not in line:
            for command in slash_completions(self.commands(), line[1:]):
                label = Content.assemble(
                    (f"/{plain_line(command.name).plain}", "bold"),
                    ("  ", ""),
                    plain_line(command.description, "dim"),
                )
                completions.append(Completion(0, f"/{command.name} ", label))
        else:
            match = _MENTION_AT_CURSOR.search(line)
            if match is not None and self.files is not None:
                start = match.start(1) - 1
                if self.files.loaded:
                    for path in self.files.complete(match.group(1)):
                        completions.append(Completion(start, f"@{path} ", plain_line(f"@{path}")))
                else:
                    self._index_files()
        self.set_completions(completions)

    @work(thread=True, exclusive=True, group="file index")
    def _index_files(self) -> None:
        if self.files is not None:
            self.files.load()
            self.app.call_from_thread(self.update_completions)  # pyright: ignore[reportUnknownMemberType]

    def set_completions(self, completions: list[Completion]) -> None:
        """Offer ``completions`` (an empty list closes the list)."""
        self.completions = completions
        self.highlighted = 0
        self._notify_completions()

    def _notify_completions(self) -> None:
        if self.on_completions is not None:
            self.on_completions(self.completions)

    def accept_completion(self, index: int | None = None) -> None:
        """Put the highlighted (or the given) completion in place of the partial word."""
        if not self.completions:
            return
        chosen = self.completions[self.highlighted if index is None else index]
        row, column = self.cursor_location
        self.replace(chosen.text, (row, chosen.start), (row, column))
        self.set_completions([])


class PromptBar(Vertical):
    """The prompt area with its completion list and its attachments line."""

    DEFAULT_CSS = """
    PromptBar {
        dock: bottom;
        height: auto;
        max-height: 50%;
        margin: 0 0 1 0;
        #completions { height: auto; max-height: 10; display: none; border: none; }
        #completions.-shown { display: block; }
        #attachments { height: auto; color: $text-accent; display: none; }
        #attachments.-shown { display: block; }
        PromptArea { height: auto; min-height: 3; max-height: 12; border: round $primary 60%; }
        PromptArea:focus { border: round $primary; }
    }
    """

    class Submitted(Message):
        """A prompt to send: its text and the images attached to it."""

        def __init__(self, text: str, images: tuple[ImageAttachment, ...]) -> None:
            super().__init__()
            self.text = text
            self.images = images

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.area = PromptArea(id="prompt")
        self.area.on_completions = self._show_completions
        self.area.on_paste_text = self._pasted
        self.menu = OptionList(id="completions")
        self.menu.can_focus = False
        self.attachments_line = Static("", id="attachments")
        self.images: list[ImageAttachment] = []
        self.accepts_images: Callable[[], bool] = lambda: False

    def compose(self) -> ComposeResult:
        yield self.menu
        yield self.attachments_line
        yield self.area

    def _show_completions(self, completions: list[Completion]) -> None:
        self.menu.clear_options()
        self.menu.add_options([Option(c.label) for c in completions])
        self.menu.set_class(bool(completions), "-shown")
        if completions:
            self.menu.highlighted = self.area.highlighted

    @on(OptionList.OptionSelected, "#completions")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.area.accept_completion(event.option_index)
        self.area.focus()

    @on(PromptArea.Submitted)
    def _submitted(self, event: PromptArea.Submitted) -> None:
        event.stop()
        images, self.images = tuple(self.images), []
        self._show_attachments()
        self.post_message(self.Submitted(event.text, images))

    def _pasted(self, text: str) -> bool:
        """A pasted image path becomes an attachment (when the agent takes images)."""
        try:
            image = image_from_paste(text)
        except AttachmentRefused as refusal:
            self.notify(str(refusal), severity="error")
            return True
        if image is None:
            return False
        if not self.accepts_images():
            self.notify("The agent does not accept images.", severity="warning")
            return True
        self.images.append(image)
        self._show_attachments()
        return True

    def _show_attachments(self) -> None:
        names = ", ".join(image.name for image in self.images)
        self.attachments_line.update(plain_line(f"📎 {names}") if names else "")
        self.attachments_line.set_class(bool(self.images), "-shown")

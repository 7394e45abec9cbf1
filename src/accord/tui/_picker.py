"""The session picker: the agent's stored sessions (``session/list``) and what to do with one.

A table of title, directory and last update, newest first as the agent sends them. Keys act
on the highlighted row: Enter or ``l`` loads it (its history replays), ``r`` resumes it
(without replay), ``f`` forks it, ``d`` twice deletes it, ``n`` starts a new session, Escape
closes the picker. Only what the agent advertises is offered; the footer of the picker says
which keys work. The picker is dismissed with a :class:`PickedSession` (or None).

Above: :mod:`accord.tui._app`. Below: Textual's ``DataTable``; the rows come from the app.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeAlias, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from ..schema import SessionInfo
from ._safe import plain_line

__all__ = ("PickedSession", "SessionAction", "SessionPicker")

SessionAction: TypeAlias = Literal["load", "resume", "fork", "delete", "new"]
"""What to do with the picked session."""

#: The keys of each action, as the picker's footer lists them.
_ACTIONS: dict[SessionAction, str] = {
    "load": "enter/l load",
    "resume": "r resume",
    "fork": "f fork",
    "delete": "d d delete",
    "new": "n new",
}


@dataclass(frozen=True, slots=True)
class PickedSession:
    """The picker's answer: an action, and the session it applies to (None for ``new``)."""

    action: SessionAction
    session: SessionInfo | None = None


class SessionPicker(ModalScreen[PickedSession | None]):
    """Lists sessions; dismissed with the chosen action."""

    DEFAULT_CSS = """
    SessionPicker {
        align: center middle;
        #picker {
            width: 90%;
            max-width: 140;
            height: 80%;
            border: thick $primary;
            background: $surface;
        }
        #picker-title { text-style: bold; padding: 0 1; }
        DataTable { height: 1fr; }
        #picker-keys { color: $text-muted; padding: 0 1; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_picker", "Close", show=False),
        Binding("l", "act('load')", "Load", show=False),
        Binding("r", "act('resume')", "Resume", show=False),
        Binding("f", "act('fork')", "Fork", show=False),
        Binding("d", "act('delete')", "Delete", show=False),
        Binding("n", "act('new')", "New", show=False),
    ]

    def __init__(
        self,
        sessions: Sequence[SessionInfo],
        *,
        actions: frozenset[SessionAction],
        open_ids: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.sessions = list(sessions)
        self.actions = actions | {"new"}
        self._open_ids = open_ids
        self._delete_armed: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            count = len(self.sessions)
            heading = f"Sessions ({count})" if count else "No stored sessions"
            yield Static(heading, id="picker-title")
            table: DataTable[object] = DataTable(cursor_type="row", zebra_stripes=True)
            table.add_column("Title", key="title")
            table.add_column("Directory", key="cwd")
            table.add_column("Updated", key="updated")
            for info in self.sessions:
                title = info.title or "(untitled)"
                if info.session_id in self._open_ids:
                    title = f"● {title}"
                # Rich Text built from a plain string: literal (no markup), and measured.
                table.add_row(
                    Text(plain_line(title).plain),
                    Text(plain_line(info.cwd).plain),
                    Text(plain_line(info.updated_at or "-").plain),
                    key=info.session_id,
                )
            yield table
            keys = "  ".join(_ACTIONS[action] for action in _ACTIONS if action in self.actions)
            yield Static(f"{keys}  esc close", id="picker-keys")

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()

    def _highlighted(self) -> SessionInfo | None:
        table = cast("DataTable[object]", self.query_one(DataTable))
        if not self.sessions or table.cursor_row < 0:
            return None
        return self.sessions[min(table.cursor_row, len(self.sessions) - 1)]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a row loads it."""
        event.stop()
        self.action_act("load")

    def action_act(self, action: SessionAction) -> None:
        """Answer with ``action`` on the highlighted session (if the agent offers it)."""
        if action == "new":
            self.dismiss(PickedSession("new"))
            return
        if action not in self.actions:
            self.notify(f"The agent does not offer {action}.", severity="warning")
            return
        info = self._highlighted()
        if info is None:
            return
        if action == "delete" and self._delete_armed != info.session_id:
            self._delete_armed = info.session_id
            self.notify("Press d again to delete this session.", severity="warning")
            return
        self.dismiss(PickedSession(action, info))

    def action_dismiss_picker(self) -> None:
        """Close without choosing."""
        self.dismiss(None)

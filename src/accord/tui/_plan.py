"""The agent's plan as a checklist; each plan update replaces the whole list.

Above: :mod:`accord.tui._pane`. Below: the plan entries of the session's view.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

from ..schema import PlanEntry
from ._safe import plain_line

__all__ = ("PlanView", "plan_content")

_MARKS = {
    "pending": ("☐", "$text-muted"),
    "in_progress": ("◐", "$text-accent"),
    "completed": ("☑", "$text-success"),
}


def plan_content(entries: Sequence[PlanEntry]) -> Content:
    """The checklist: one line per entry, its mark showing its status."""
    done = sum(entry.status == "completed" for entry in entries)
    lines = [Content.styled(f"Plan {done}/{len(entries)}", "bold")]
    for entry in entries:
        mark, colour = _MARKS.get(entry.status, ("☐", "$text-muted"))
        text = plain_line(entry.content, "strike dim" if entry.status == "completed" else "")
        high = " !" if entry.priority == "high" and entry.status != "completed" else ""
        lines.append(Content.assemble((f"{mark} ", colour), text, (high, "$text-warning")))
    return Content("\n").join(lines)


class PlanView(Static):
    """The current plan (hidden while there is none)."""

    DEFAULT_CSS = """
    PlanView {
        height: auto;
        max-height: 12;
        padding: 0 1;
        border-top: solid $foreground 20%;
        display: none;
        &.-shown { display: block; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.entries: tuple[PlanEntry, ...] = ()

    def show_plan(self, entries: Sequence[PlanEntry]) -> None:
        """Replace the checklist with ``entries`` (an empty plan hides it)."""
        entries = tuple(entries)
        if entries == self.entries:
            return
        self.entries = entries
        self.set_class(bool(entries), "-shown")
        self.update(plan_content(entries) if entries else "")

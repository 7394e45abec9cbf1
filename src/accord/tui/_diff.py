"""File changes a tool call reports (ACP ``diff`` content), shown as highlighted diffs.

A diff is drawn by ``textual-diff-view``: unified, with line numbers, the added and removed
lines tinted, and within a changed line the characters that changed highlighted, with syntax
highlighting from the file's extension. A new file (no ``oldText``) is all additions.

Above: :mod:`accord.tui._tool_card` and the permission modal. Below: ``textual_diff_view``.
"""

from __future__ import annotations

import os

from textual_diff_view import DiffView

from ..schema import DiffToolCallContent
from ._safe import clean

__all__ = ("diff_view", "display_path")


def display_path(path: str, cwd: str | None) -> str:
    """``path`` relative to ``cwd`` when it lies inside it, else as given (cleaned)."""
    if cwd and os.path.isabs(path):
        try:
            relative = os.path.relpath(path, cwd)
        except ValueError:  # another drive (Windows)
            relative = path
        if not relative.startswith(os.pardir):
            path = relative
    return clean(path)


def diff_view(diff: DiffToolCallContent, cwd: str | None = None) -> DiffView:
    """A widget showing ``diff`` (the path relative to ``cwd``)."""
    path = display_path(diff.path, cwd)
    return DiffView(
        path,
        path,
        clean(diff.old_text or ""),
        clean(diff.new_text),
        split=False,
        annotations=True,
        classes="diff",
    )

"""Agent-supplied text made safe to show: no markup, no control characters.

Everything an agent sends (titles, paths, commands, option names, tool output, message text)
is shown as it is, never interpreted: Textual markup such as ``[b]`` stays literal (it is
wrapped in a :class:`~textual.content.Content`, which never parses markup), and control
characters that a terminal would act on (escape sequences that move the cursor, change
colours, clear the screen, set the title; carriage returns that overwrite a line) are
replaced by visible symbols. Newlines and tabs are kept.

Above: every widget of :mod:`accord.tui`. Below: Textual's ``Content``.
"""

from __future__ import annotations

import re

from textual.content import Content

__all__ = ("clean", "plain", "plain_line")

# C0 controls except tab and newline, DEL, and the C1 range (which some terminals obey).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␛, ␍, ...
    if code == 0x7F:
        return "\u2421"  # ␡
    return "\ufffd"


def clean(text: str) -> str:
    """``text`` with every control character but newline and tab made visible.

    A ``\\r\\n`` line ending becomes ``\\n`` (it is a line ending, not an overwrite).
    """
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _CONTROL.sub(_visible, text)


def plain(text: str, style: str = "") -> Content:
    """``text`` as literal content: cleaned, markup left as it is, optionally styled."""
    return Content.styled(clean(text), style) if style else Content(clean(text))


def plain_line(text: str, style: str = "") -> Content:
    """Like :func:`plain`, on one line: newlines and tabs become spaces."""
    return plain(" ".join(text.split()) if text else "", style)

"""Make text from an agent safe to print on a terminal: every control sequence shown, none obeyed.

A terminal obeys what it is sent: an escape sequence in an agent's reply can write the
clipboard (OSC 52), retitle the window, move the cursor over earlier lines, or hide text
(``ESC[8m``) so that a permission question reads differently from what it asks. Everything
the ``accord`` command prints, and what :func:`accord.client.render_event` renders, that an
agent wrote (message text, thoughts, titles, tool
titles, commands, diffs, option names, its stderr, session ids and titles) goes through
:func:`neutralise` first; only accord's own styling reaches the terminal as control codes.

What is replaced, and by what:

* C0 control characters and DEL in caret notation: ESC as ``^[``, BEL as ``^G``, DEL as ``^?``
  (a CSI sequence ``ESC [ 2 J`` is then printed as the harmless text ``^[[2J``);
* C1 control characters (U+0080 to U+009F; U+009B is a one-character CSI on many terminals)
  and the Unicode bidirectional controls (which reorder what is displayed: "Trojan Source")
  as ``\\x9b`` / ``\\u202e``;
* lone surrogates (which cannot be encoded for the terminal) as ``\\ud83d``;
* a carriage return that is not part of a CRLF line end as ``^M`` (it would move back over
  the line); CRLF becomes a plain line end.

Newlines and tabs are kept in prose (``multiline=True``, the default) and shown as ``^J`` /
``^I`` in one-line fields (``multiline=False``: titles, ids, option names), so one field
cannot pose as several lines. Above: :func:`accord.client.render_event` and the modules of
:mod:`accord.cli` that print (exported as :func:`accord.client.neutralise` for any program
that shows an agent's text on a terminal). Below: nothing but :mod:`re`.
"""

from __future__ import annotations

import re

__all__ = ("neutralise",)

_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_PROSE = re.compile(f"[{_CONTROLS}]")
_ONE_LINE = re.compile(f"[{_CONTROLS}\t\n]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def neutralise(text: str, *, multiline: bool = True) -> str:
    """``text`` with every terminal control character replaced by a visible notation.

    Args:
        text: what the agent sent.
        multiline: keep newlines and tabs (prose); ``False`` shows them too (one-line fields).
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    pattern = _PROSE if multiline else _ONE_LINE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_visible, text)

"""``neutralise``: what an agent wrote is shown, never obeyed, by the terminal.

Unit tests for the one function every printed agent string goes through (issue 12, finding
10); the end-to-end tests through a real pseudo-terminal are in ``test_cli_terminal_safety``.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accord.client import neutralise

#: Characters a terminal may act on: C0 (except newline and tab in prose), DEL, C1, the
#: bidirectional controls, and lone surrogates (which cannot even be encoded).
DANGEROUS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


@pytest.mark.parametrize(
    ("attack", "shown"),
    [
        ("\x1b]52;c;cm0gLXJmIH4=\x07", "^[]52;c;cm0gLXJmIH4=^G"),  # OSC 52 clipboard write
        ("\x1b]0;pwned\x1b\\", "^[]0;pwned^[\\"),  # window title, ended by ST
        ("\x1b[2J\x1b[H\x1b[3A", "^[[2J^[[H^[[3A"),  # clear, home, cursor up
        ("Deny\x1b[8m allow always", "Deny^[[8m allow always"),  # invisible text
        ("\x9b31m", "\\x9b31m"),  # the one-character CSI
        ("\x9d0;t\x9c", "\\x9d0;t\\x9c"),  # C1 OSC ... ST
        ("abc\u202edef", "abc\\u202edef"),  # bidi override
        ("x\x7fy\x08z", "x^?y^Hz"),  # DEL, backspace
        ("over\rwrite", "over^Mwrite"),  # a lone carriage return would rewrite the line
        ("cut\ud83d", "cut\\ud83d"),  # a lone surrogate
        ("\x00", "^@"),
    ],
)
def test_each_attack_is_shown_as_visible_text(attack: str, shown: str) -> None:
    assert neutralise(attack) == shown
    assert neutralise(attack, multiline=False) == shown


def test_prose_keeps_newlines_tabs_and_crlf_line_ends() -> None:
    assert neutralise("a\n\tb\r\nc") == "a\n\tb\nc"


def test_one_line_fields_show_newlines_and_tabs() -> None:
    assert neutralise("Deny\nAllow\talways", multiline=False) == "Deny^JAllow^Ialways"


def test_ordinary_text_is_unchanged() -> None:
    text = "Ünïcödé, emoji 🎉, CJK 漢字, quotes “”, math ∑ and a\ttab\n"
    assert neutralise(text) == text


@given(st.text())
def test_no_control_character_survives(text: str) -> None:
    prose = neutralise(text)
    line = neutralise(text, multiline=False)
    assert DANGEROUS.search(prose) is None
    assert DANGEROUS.search(line) is None
    assert "\n" not in line and "\t" not in line
    prose.encode("utf-8")  # always encodable for the terminal
    line.encode("utf-8")


@given(st.text(st.characters(exclude_categories=("Cc", "Cf", "Cs"))))
def test_text_without_controls_passes_through(text: str) -> None:
    assert neutralise(text) == text
    assert neutralise(text, multiline=False) == text


@given(st.text())
def test_every_printable_character_is_kept_in_order(text: str) -> None:
    """Nothing the agent wrote is hidden: its printable characters all appear, in order."""
    printable = [c for c in text if unicodedata.category(c)[0] not in "CZ" or c == " "]
    shown = iter(neutralise(text))
    assert all(any(c == s for s in shown) for c in printable)

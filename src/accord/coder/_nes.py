"""The coder's next edit suggestions, without the model: the request's text, the answer's edits.

A suggestion is one small, fast model request (:mod:`._nes_model` sends it, marked
``x-accord-purpose: nes``). What it says (:func:`nes_prompt`):

* the client's recent edits (the runtime's :class:`~accord.engines.RecentEdit` values, then
  the client's own ``editHistory``), as lines removed and added;
* the verdicts on this NES session's earlier suggestions (:class:`Verdicts`): what the user
  accepted and what they rejected, and why, so the model does not offer the same again;
* the client's diagnostics and related snippets, when it sent them (bounded);
* the lines around the cursor the runtime handed over, the few nearest the cursor marked as
  the *editable region*, with the cursor marked in it (:data:`CURSOR`).

The model answers with the editable region rewritten with the edit it predicts applied
(:func:`edits_from_answer`): the answer is compared with the region line by line, and each
changed run of lines becomes one :class:`~accord.documents.TextEdit` trimmed to the characters
that differ; a cursor marker in the answer says where the cursor goes. An unchanged region is
no suggestion. An answer without the region's markers, or far longer than the region, is not
a suggestion at all: :class:`UnusableAnswer` says why.

Everything is in code points (Python string indices), as the engine contract has it; the
runtime converts to the client's position encoding. Imports nothing of pydantic-ai.
"""

from __future__ import annotations

import difflib
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ..documents import Point, Span, TextEdit
from ..engines import EditFeedback, EditRequest, SuggestedEdit

__all__ = (
    "CURSOR",
    "NES_INSTRUCTIONS",
    "NES_PURPOSE",
    "REGION_END",
    "REGION_START",
    "Region",
    "UnusableAnswer",
    "Verdicts",
    "edits_from_answer",
    "nes_prompt",
)

NES_PURPOSE: Final = "nes"
"""The :data:`~accord.engines.MODEL_PURPOSE_HEADER` value of a suggestion request."""

REGION_START: Final = "<<<REGION_START>>>"
"""Marks the start of the lines the model may rewrite."""

REGION_END: Final = "<<<REGION_END>>>"
"""Marks their end."""

CURSOR: Final = "<<<CURSOR>>>"
"""Marks the cursor in the region (and, in the answer, where the cursor goes)."""

REGION_ABOVE: Final = 3
"""Lines above the cursor's the model may rewrite."""

REGION_BELOW: Final = 6
"""Lines below the cursor's the model may rewrite."""

_ANSWER_SLACK: Final = 4
"""An answer may have this many times the region's lines, plus :data:`_ANSWER_EXTRA`."""

_ANSWER_EXTRA: Final = 20

_SHOWN_EDITS: Final = 12
"""Recent edits (runtime's and client's together, the newest) the request shows."""

_EDIT_LINES: Final = 12
"""Lines of one recent edit shown on each side (removed, added)."""

_CONTEXT_CHARS: Final = 6000
"""How much of the client's context (diagnostics, snippets, history) the request carries."""

_VERDICTS_KEPT: Final = 8
"""Verdicts remembered per NES session (the newest)."""

_SESSIONS_KEPT: Final = 64
"""NES sessions whose verdicts are remembered (the most recently used)."""

_VERDICT_TEXT: Final = 160
"""How much of a suggestion's new text a verdict line shows."""

NES_INSTRUCTIONS: Final = (
    "You predict the next edit a programmer will make in the file they are editing. You are "
    "shown their recent edits, what they thought of your earlier suggestions, and the lines "
    f"around their cursor. Part of those lines is between {REGION_START} and {REGION_END}; "
    f"the cursor is marked {CURSOR}. Answer with that region only, from {REGION_START} to "
    f"{REGION_END}, rewritten with the edit you predict applied, and put {CURSOR} where the "
    "cursor should be after it. Change only what the edit needs; keep everything else "
    "exactly as it is. When no edit is likely, answer with the region unchanged. Do not "
    "explain."
)
"""The system prompt of a suggestion request."""


class UnusableAnswer(ValueError):
    """The model's answer is not a rewrite of the editable region (the message says why)."""


@dataclass(frozen=True, slots=True)
class Region:
    """The lines the model may rewrite: ``lines`` start at document line ``first``."""

    first: int
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        """The region's text, lines joined by ``\\n``."""
        return "\n".join(self.lines)


@dataclass(frozen=True, slots=True)
class _Verdict:
    accepted: bool
    reason: str | None
    summary: str


class Verdicts:
    """The client's verdicts on each NES session's suggestions, newest last, bounded."""

    def __init__(self) -> None:
        """An empty memory."""
        self._by_session: OrderedDict[str, deque[_Verdict]] = OrderedDict()

    def note(self, feedback: EditFeedback) -> None:
        """Remember one verdict (the oldest of the session, or the stalest session, go)."""
        kept = self._by_session.get(feedback.nes_session_id)
        if kept is None:
            kept = self._by_session[feedback.nes_session_id] = deque(maxlen=_VERDICTS_KEPT)
        self._by_session.move_to_end(feedback.nes_session_id)
        while len(self._by_session) > _SESSIONS_KEPT:
            self._by_session.popitem(last=False)
        kept.append(_Verdict(feedback.accepted, feedback.reason, _describe(feedback.suggestion)))

    def lines(self, nes_session_id: str) -> list[str]:
        """The session's verdicts as lines of the request (oldest first)."""
        out: list[str] = []
        for verdict in self._by_session.get(nes_session_id, ()):
            if verdict.accepted:
                out.append(f"- accepted: {verdict.summary}")
            else:
                out.append(f"- rejected ({verdict.reason or 'rejected'}): {verdict.summary}")
        return out


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"


def _describe(suggestion: SuggestedEdit) -> str:
    parts: list[str] = []
    for edit in suggestion.edits:
        where = f"line {edit.span.start.line + 1}"
        if edit.span.start == edit.span.end:
            parts.append(f"insert {_clip(edit.new_text, _VERDICT_TEXT)!r} at {where}")
        elif edit.new_text:
            parts.append(f"replace at {where} by {_clip(edit.new_text, _VERDICT_TEXT)!r}")
        else:
            parts.append(f"delete from {where} to line {edit.span.end.line + 1}")
    return "; ".join(parts) or "no change"


def region_of(request: EditRequest) -> Region:
    """The editable region: up to :data:`REGION_ABOVE` lines above the cursor's and
    :data:`REGION_BELOW` below, within the lines the runtime handed over."""
    cursor = request.cursor.line - request.first_line
    start = max(0, cursor - REGION_ABOVE)
    stop = min(len(request.lines), cursor + REGION_BELOW + 1)
    return Region(request.first_line + start, request.lines[start:stop])


def _recent(request: EditRequest) -> list[str]:
    blocks: list[str] = []
    for edit in request.recent_edits:
        removed = [f"-{line}" for line in edit.before[:_EDIT_LINES]]
        added = [f"+{line}" for line in edit.after[:_EDIT_LINES]]
        blocks.append("\n".join([f"{edit.uri} line {edit.first + 1}:", *removed, *added]))
    context = request.context
    if context is not None and context.edit_history:
        blocks.extend(f"{entry.uri}:\n{entry.diff}" for entry in context.edit_history)
    return blocks[-_SHOWN_EDITS:]


def _client_context(request: EditRequest) -> list[str]:
    context = request.context
    if context is None:
        return []
    sections: list[str] = []
    if context.diagnostics:
        sections.append(
            "Diagnostics:\n"
            + "\n".join(
                f"{d.uri} line {d.range.start.line + 1}: {d.severity}: {d.message}"
                for d in context.diagnostics
            )
        )
    for snippet in context.related_snippets or ():
        for excerpt in snippet.excerpts:
            sections.append(
                f"Related code from {snippet.uri} (lines {excerpt.start_line + 1}-"
                f"{excerpt.end_line + 1}):\n{excerpt.text}"
            )
    return sections


def nes_prompt(request: EditRequest, verdicts: Sequence[str] = ()) -> tuple[str, Region]:
    """The user message of a suggestion request for ``request``, and its editable region.

    ``verdicts``: :meth:`Verdicts.lines` of the request's NES session.
    """
    region = region_of(request)
    sections: list[str] = []
    recent = _recent(request)
    if recent:
        sections.append("The programmer's recent edits, oldest first:\n\n" + "\n\n".join(recent))
    if verdicts:
        sections.append(
            "Your earlier suggestions in this session and what the programmer did with them "
            "(do not offer a rejected one again):\n" + "\n".join(verdicts)
        )
    extra = "\n\n".join(_client_context(request))
    if extra:
        sections.append(_clip(extra, _CONTEXT_CHARS))
    cursor = request.cursor
    offset = cursor.line - request.first_line
    lines = list(request.lines)
    line = lines[offset]
    lines[offset] = f"{line[: cursor.column]}{CURSOR}{line[cursor.column :]}"
    start = region.first - request.first_line
    stop = start + len(region.lines)
    shown = [
        *lines[:start],
        REGION_START,
        *lines[start:stop],
        REGION_END,
        *lines[stop:],
    ]
    where = (
        f"{request.uri} ({request.language_id}), lines {request.first_line + 1}-"
        f"{request.first_line + len(request.lines)} of {request.line_count}:"
    )
    sections.append(f"{where}\n" + "\n".join(shown))
    return "\n\n".join(sections), region


def _answer_region(answer: str, region: Region) -> str:
    """The rewritten region (markers and the line breaks beside them dropped).

    Raises:
        UnusableAnswer: no region in the answer, or far more lines than the region has.
    """
    start = answer.find(REGION_START)
    if start < 0:
        raise UnusableAnswer(f"the answer has no {REGION_START} marker")
    start += len(REGION_START)
    end = answer.find(REGION_END, start)
    if end < 0:
        raise UnusableAnswer(f"the answer's region has no {REGION_END} marker")
    body = answer[start:end]
    if body.startswith("\r\n"):
        body = body[2:]
    elif body.startswith("\n"):
        body = body[1:]
    if body.endswith("\r\n"):
        body = body[:-2]
    elif body.endswith("\n"):
        body = body[:-1]
    body = body.replace("\r\n", "\n")
    limit = len(region.lines) * _ANSWER_SLACK + _ANSWER_EXTRA
    if body.count("\n") + 1 > limit:
        raise UnusableAnswer(
            f"the answer's region has {body.count(chr(10)) + 1} lines for a region of "
            f"{len(region.lines)}"
        )
    return body


def _point(first: int, text: str, offset: int) -> Point:
    """The document point of ``offset`` in ``text``, a region starting at line ``first``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return Point(first + text.count("\n", 0, offset), offset - line_start)


def _line_offsets(lines: Sequence[str]) -> list[int]:
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    return offsets


def _edit(
    region: Region, old: tuple[int, int], new_lines: Sequence[str], offsets: Sequence[int]
) -> TextEdit:
    """One edit replacing region lines ``old`` (``[i1, i2)``) by ``new_lines``, trimmed."""
    text = region.text
    i1, i2 = old
    count = len(region.lines)
    if i1 == i2:  # an insertion before line i1 (or after the last)
        if i1 < count:
            return TextEdit(
                Span.at(_point(region.first, text, offsets[i1])), "\n".join(new_lines) + "\n"
            )
        return TextEdit(Span.at(_point(region.first, text, len(text))), "\n" + "\n".join(new_lines))
    if not new_lines:  # a deletion of lines i1..i2-1 with their breaks
        if i2 < count:
            start, end = offsets[i1], offsets[i2]
        elif i1 > 0:
            start, end = offsets[i1] - 1, len(text)
        else:
            start, end = 0, len(text)
        return TextEdit(
            Span(_point(region.first, text, start), _point(region.first, text, end)), ""
        )
    before = "\n".join(region.lines[i1:i2])
    after = "\n".join(new_lines)
    prefix = 0
    limit = min(len(before), len(after))
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    start = offsets[i1] + prefix
    end = offsets[i1] + len(before) - suffix
    return TextEdit(
        Span(_point(region.first, text, start), _point(region.first, text, end)),
        after[prefix : len(after) - suffix],
    )


def edits_from_answer(answer: str, region: Region) -> list[SuggestedEdit]:
    """The suggestion in the model's ``answer`` for ``region`` (none when it changed nothing).

    Raises:
        UnusableAnswer: the answer is not a rewrite of the region (:func:`_answer_region`).
    """
    body = _answer_region(answer, region)
    marker = body.find(CURSOR)
    plain = body.replace(CURSOR, "")
    new_lines = plain.split("\n")
    matcher = difflib.SequenceMatcher(None, list(region.lines), new_lines, autojunk=False)
    offsets = _line_offsets(region.lines)
    edits = [
        _edit(region, (i1, i2), new_lines[j1:j2], offsets)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]
    if not edits:
        return []
    cursor = None if marker < 0 else _point(region.first, plain, marker)
    return [SuggestedEdit(edits=tuple(edits), cursor=cursor)]

"""Turn events as readable text, for command lines and logs.

:func:`render_event` gives one line per event (no trailing newline): a text chunk as its text,
everything else as a bracketed summary such as ``[tool in_progress] Read src/app.py``.
:class:`TurnRenderer` keeps a little state so that a whole turn prints well: streamed text runs
inline, and every other event starts on a line of its own.

What an agent wrote is neutralised for a terminal (:func:`~accord.client.neutralise`): an
escape sequence in a reply, a title or an option name is shown (``^[[2J``), never obeyed, and
a one-line field (a title, an id, an option name) cannot pose as several lines. The raw text
stays on the event itself (``event.text``, ``event.tool_call.title``, ...).

Above: ``accord run`` and other programs that print a turn. Below: the events of
:mod:`accord.client._events`; plain text only (no colours, no terminal control).
"""

from __future__ import annotations

from typing import assert_never

from ..schema import BooleanSessionConfigOption, SessionConfigOption
from ._events import (
    CommandsUpdated,
    CompactionSummaryDelta,
    CompactionUpdated,
    ConfigUpdated,
    ModeUpdated,
    OtherUpdate,
    PermissionRequested,
    PermissionResolved,
    PlanUpdated,
    TextDelta,
    ThoughtDelta,
    TitleUpdated,
    ToolCallAdded,
    ToolCallUpdated,
    TurnEvent,
    TurnFinished,
    UsageUpdated,
    UserMessageDelta,
)
from ._neutralise import neutralise
from ._state import CompactionState, ToolCallState

__all__ = ("TurnRenderer", "render_event")


def render_event(event: TurnEvent) -> str:
    """One line describing ``event``, safe to print on a terminal; a message chunk renders as
    its own text (newlines kept, control sequences neutralised)."""
    match event:
        case TextDelta() | ThoughtDelta() | UserMessageDelta():
            if event.text or event.content.type == "text":
                return neutralise(event.text)
            return f"[{_field(event.content.type)}]"
        case _:
            return _field(_describe(event))


def _field(text: str) -> str:
    return neutralise(text, multiline=False)


def _describe(event: TurnEvent) -> str:
    """The bracketed summary of a non-text event (neutralised whole by the caller)."""
    match event:
        case TextDelta() | ThoughtDelta() | UserMessageDelta():
            return event.text
        case ToolCallAdded(tool_call=call):
            return f"[tool {call.status}] {_tool_label(call)}"
        case ToolCallUpdated(tool_call=call, changed=changed):
            return f"[tool {call.status}] {_tool_label(call)}{_tool_detail(call, changed)}"
        case PlanUpdated(entries=entries):
            done = sum(entry.status == "completed" for entry in entries)
            current = next((e.content for e in entries if e.status == "in_progress"), None)
            line = f"[plan {done}/{len(entries)} done]"
            return f"{line} now: {current}" if current else line
        case UsageUpdated(used=used, size=size, cost=cost):
            share = f" ({used / size:.0%})" if size else ""
            line = f"[usage] {used}/{size} tokens{share}"
            return f"{line}, {cost.amount:g} {cost.currency}" if cost else line
        case ModeUpdated(mode_id=mode_id):
            return f"[mode] {mode_id}"
        case ConfigUpdated(config_options=options):
            return "[config] " + ", ".join(_config_value(option) for option in options)
        case CommandsUpdated(commands=commands):
            return "[commands] " + " ".join(f"/{command.name}" for command in commands)
        case TitleUpdated(title=title):
            return f"[title] {title}" if title is not None else "[title cleared]"
        case CompactionUpdated(compaction=compaction):
            return compaction_line(compaction)
        case CompactionSummaryDelta(text=text, content=content):
            return f"[compaction summary] {_first_line(text) if text else '[' + content.type + ']'}"
        case OtherUpdate(update=update):
            return f"[{update.session_update}]"
        case PermissionRequested(tool_call=call, options=options):
            offered = ", ".join(option.name for option in options)
            return f"[permission?] {_tool_label(call)} ({offered})"
        case PermissionResolved(option=option):
            return f"[permission] {option.name}" if option is not None else "[permission] cancelled"
        case TurnFinished(stop_reason=stop_reason, usage=usage):
            tokens = f", {usage.total_tokens} tokens" if usage is not None else ""
            return f"[{stop_reason}{tokens}]"
        case _:
            assert_never(event)


class TurnRenderer:
    """Renders a turn's events as text to write out as is.

    Text chunks flow inline; any other event gets a line of its own; a run of reasoning is
    introduced by ``(thinking)`` on its own line, or left out when ``show_thoughts`` is false.
    """

    def __init__(self, *, show_thoughts: bool = True) -> None:
        self.show_thoughts = show_thoughts
        self._inline: str | None = None  # the kind of chunk the current line is made of
        self._at_line_start = True

    def render(self, event: TurnEvent) -> str:
        """The text to write for ``event`` (possibly empty)."""
        if isinstance(event, ThoughtDelta) and not self.show_thoughts:
            return ""
        if isinstance(event, TextDelta | ThoughtDelta | UserMessageDelta):
            text = render_event(event)
            prefix = ""
            if self._inline != event.kind:
                prefix = self._break()
                if isinstance(event, ThoughtDelta):
                    prefix += "(thinking)\n"
                elif isinstance(event, UserMessageDelta):
                    prefix += "> "
                self._inline = event.kind
            if text:
                self._at_line_start = text.endswith("\n")
            return prefix + text
        line = self._break() + render_event(event) + "\n"
        self._inline = None
        self._at_line_start = True
        return line

    def _break(self) -> str:
        if self._at_line_start:
            return ""
        self._at_line_start = True
        return "\n"


def compaction_line(compaction: CompactionState) -> str:
    """The one-line marker of a compaction (not neutralised): ``[compaction in_progress]
    summarising earlier turns``, ``[compaction completed] earlier turns summarised``,
    ``[compaction failed] <error>; history kept``."""
    match compaction.status:
        case "in_progress":
            return "[compaction in_progress] summarising earlier turns"
        case "completed":
            summary = _first_line(compaction.summary_text)
            tail = f": {summary}" if summary else ""
            return f"[compaction completed] earlier turns summarised{tail}"
        case status:
            reason = compaction.error or status
            return f"[compaction {status}] {reason}; history kept as it was"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:80] if lines else ""


def _tool_label(call: ToolCallState) -> str:
    title = call.title or call.tool_call_id
    return title if call.kind == "other" else f"{call.kind}: {title}"


def _tool_detail(call: ToolCallState, changed: frozenset[str]) -> str:
    if "content" not in changed:
        return ""
    diffs = call.diffs
    if diffs:
        return " (edits " + ", ".join(diff.path for diff in diffs) + ")"
    text = call.text.strip().splitlines()
    return f" ({text[0][:80]})" if text else ""


def _config_value(option: SessionConfigOption) -> str:
    if isinstance(option, BooleanSessionConfigOption):
        return f"{option.name}={'on' if option.current_value else 'off'}"
    return f"{option.name}={option.current_value}"

"""How ``accord run`` shows a turn: the reply, the work (tool calls, diffs, plans) and its end.

:class:`Display` writes the events of a turn (:mod:`accord.client`'s ``TurnEvent``) to an
output stream, in one of two manners:

* on a terminal: colours (unless ``NO_COLOR`` is set or ``TERM=dumb``), one line per tool
  call that changes in place (pending, running, done, failed), unified diffs coloured, a
  spinner while the agent is silent, thoughts dimmed between ``(thinking)`` and
  ``(end of thinking)``;
* elsewhere (a pipe, a file): plain text, one line per tool call once it has ended, diffs as
  plain unified diffs, no control codes at all.

Either way every string the agent sent is passed through
:func:`~accord.cli._neutralise.neutralise` before it is written, so the only control codes
reaching a terminal are accord's own. A diff is shown once: in the permission question when
the edit asks first, otherwise when the call ends. The turn ends with a summary line: the
stop reason in words, the session id, the token usage and the context meter (context used of
the window, the cost) when the agent reported them.

Above: :mod:`accord.cli._run` (which feeds the events and the spinner ticks) and the
permission question (:mod:`accord.cli._question`, which writes through :meth:`Display.ask`).
Below: the client's event and state classes, :mod:`difflib`.
"""

from __future__ import annotations

import difflib
import os
import shlex
import sys
import time
from collections.abc import Sequence
from typing import Any, Literal, TextIO

import orjson

from ..client import (
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
    ToolCallState,
    ToolCallUpdated,
    TurnEvent,
    TurnFinished,
    UsageUpdated,
    UserMessageDelta,
    neutralise,
)
from ..schema import (
    BooleanSessionConfigOption,
    DiffToolCallContent,
    PermissionOption,
    PermissionOptionKind,
    StopReason,
    Usage,
)

__all__ = (
    "OPTION_WORDS",
    "STOP_WORDS",
    "Display",
    "Style",
    "colour_wanted",
    "command_line_of",
    "option_keys",
    "tool_label",
    "unified_diff",
)

#: The stop reasons in words, as the summary line gives them.
STOP_WORDS: dict[str, str] = {
    "end_turn": "done",
    "max_tokens": "stopped: the model reached its output token limit",
    "max_turn_requests": "stopped: the turn reached its limit of model requests",
    "refusal": "the agent refused the prompt",
    "cancelled": "cancelled",
}

#: What choosing an option of each kind means, in words (the agent's own name is not trusted).
OPTION_WORDS: dict[PermissionOptionKind | Literal["unknown"], str] = {
    "allow_once": "allowed once",
    "allow_always": "allowed always",
    "reject_once": "refused",
    "reject_always": "refused always",
    "unknown": "chosen (of an unknown kind)",
}

#: Lines of one diff shown before the rest is summed up.
DIFF_LINES = 200
#: Seconds of silence before the spinner shows.
SPINNER_DELAY = 0.3
_FRAMES_UTF8 = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_FRAMES_ASCII = "|/-\\"
_ERASE_LINE = "\r\x1b[2K"


def colour_wanted(stream: TextIO, environ: dict[str, str] | None = None) -> bool:
    """Whether to colour ``stream``: a terminal, ``NO_COLOR`` unset or empty, ``TERM`` not dumb."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("TERM") == "dumb":
        return False
    return _isatty(stream)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


class Style:
    """accord's own styling (SGR codes), or nothing when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def dim(self, text: str) -> str:
        """Less prominent text (thoughts, details)."""
        return self._sgr("2", text)

    def bold(self, text: str) -> str:
        """Emphasised text (questions)."""
        return self._sgr("1", text)

    def red(self, text: str) -> str:
        """Failures, removed lines."""
        return self._sgr("31", text)

    def green(self, text: str) -> str:
        """Success, added lines."""
        return self._sgr("32", text)

    def yellow(self, text: str) -> str:
        """Warnings, questions."""
        return self._sgr("33", text)

    def cyan(self, text: str) -> str:
        """Diff hunks, tool kinds."""
        return self._sgr("36", text)


def command_line_of(raw_input: Any) -> str | None:
    """The command line a tool call will run, from its ``rawInput`` (``command`` and ``args``)."""
    if not isinstance(raw_input, dict):
        return None
    fields: dict[str, Any] = raw_input  # pyright: ignore[reportUnknownVariableType]
    command = fields.get("command", fields.get("cmd"))
    words: list[str] = []
    if isinstance(command, str):
        words.append(command)
    elif isinstance(command, list) and all(isinstance(w, str) for w in command):  # pyright: ignore[reportUnknownVariableType]
        words.append(shlex.join(command))  # pyright: ignore[reportUnknownArgumentType]
    else:
        return None
    args = fields.get("args")
    if isinstance(args, list) and args and all(isinstance(a, str) for a in args):  # pyright: ignore[reportUnknownVariableType]
        words.append(shlex.join(args))  # pyright: ignore[reportUnknownArgumentType]
    return " ".join(words)


def unified_diff(diff: DiffToolCallContent, style: Style, *, limit: int = DIFF_LINES) -> list[str]:
    """The diff as unified-diff lines (neutralised, coloured by ``style``), at most ``limit``."""
    old = (diff.old_text or "").splitlines()
    new = diff.new_text.splitlines()
    path = neutralise(diff.path, multiline=False)
    before = "/dev/null" if diff.old_text is None else f"a{path}" if path.startswith("/") else path
    after = f"b{path}" if path.startswith("/") else path
    lines = list(difflib.unified_diff(old, new, before, after, lineterm=""))
    if not lines:
        return [style.dim(f"(no change to {path})")]
    shown: list[str] = []
    for line in lines[:limit]:
        text = neutralise(line, multiline=False)
        if line.startswith(("---", "+++")):
            shown.append(style.bold(text))
        elif line.startswith("@@"):
            shown.append(style.cyan(text))
        elif line.startswith("+"):
            shown.append(style.green(text))
        elif line.startswith("-"):
            shown.append(style.red(text))
        else:
            shown.append(text)
    if len(lines) > limit:
        shown.append(style.dim(f"... {len(lines) - limit} more lines of diff"))
    return shown


def _usage_words(usage: Usage) -> str:
    words = f"{usage.total_tokens:,} tokens ({usage.input_tokens:,} in, {usage.output_tokens:,} out"
    if usage.thought_tokens:
        words += f", {usage.thought_tokens:,} thinking"
    return words + ")"


def _context_words(report: UsageUpdated) -> list[str]:
    """The context meter in words: ``context 1,234/128,000 tokens (1%)``, and the cost."""
    used, size = report.used, report.size
    share = f" ({100 * used / size:.0f}%)" if size > 0 else ""
    words = [f"context {used:,}/{size:,} tokens{share}"]
    if report.cost is not None:
        currency = neutralise(report.cost.currency, multiline=False)
        words.append(f"cost {report.cost.amount:.4f} {currency}")
    return words


def tool_label(call: ToolCallState) -> str:
    """``kind: title`` of a tool call (neutralised, one line)."""
    title = neutralise(call.title or call.tool_call_id, multiline=False)
    return title if call.kind == "other" else f"{call.kind}: {title}"


class Display:
    """Writes one turn's events to ``out`` (module docstring).

    Args:
        out: where the reply goes (stdout).
        err: where notices go (stderr); on a terminal both usually show on the same screen,
            so a notice first ends the line the reply is in.
        terminal: ``out`` is a terminal: rewrite tool lines in place, show the spinner.
        colour: use colours (see :func:`colour_wanted`).
        show_thoughts: show the agent's reasoning.
        show_user: show user message chunks (a replayed history; during a turn they are the
            agent's echo of the prompt just typed, so ``accord run`` leaves them out).
    """

    def __init__(
        self,
        out: TextIO,
        err: TextIO | None = None,
        *,
        terminal: bool,
        colour: bool,
        show_thoughts: bool = True,
        show_user: bool = True,
    ) -> None:
        self.out = out
        self.err = err if err is not None else sys.stderr
        self.terminal = terminal
        self.style = Style(colour)
        self.show_thoughts = show_thoughts
        self.show_user = show_user
        utf8 = (getattr(out, "encoding", "") or "").lower().replace("-", "") == "utf8"
        self._frames = _FRAMES_UTF8 if utf8 else _FRAMES_ASCII
        self._marks = (
            {"completed": "✓", "failed": "✗", "cancelled": "-", "pending": "·"}
            if utf8
            else {"completed": "+", "failed": "x", "cancelled": "-", "pending": "."}
        )
        self._frame = 0
        self._line_open = False  # the cursor is not at the start of a line
        self._tool_line: str | None = None  # the tool call whose line is the open line
        self._spinner_shown = False
        self._paused = False  # a question is waiting for an answer: no spinner
        self._inline: str | None = None  # the kind of text the current run is made of
        self._last_write = time.monotonic()
        self._printed_status: dict[str, str] = {}
        self._calls: dict[str, ToolCallState] = {}  # the latest state of each tool call
        self._diff_shown: set[str] = set()
        self._final_parts: list[str] = []
        self.usage: Usage | None = None
        self.context: UsageUpdated | None = None
        """The last context window report (``usage_update``): tokens used, window, cost."""

    @property
    def final_text(self) -> str:
        """The text of the agent's last message run (what ``--quiet`` prints)."""
        return "".join(self._final_parts)

    # -- writing ------------------------------------------------------------------------

    def _emit(self, text: str) -> None:
        if not text:
            return
        if self._spinner_shown:
            text = _ERASE_LINE + text
            self._spinner_shown = False
        self.out.write(text)
        self.out.flush()
        self._last_write = time.monotonic()

    def _new_line(self) -> None:
        """End the open line, if any, so that what follows starts a line of its own."""
        if self._line_open:
            self._emit("\n")
            self._line_open = False
        self._tool_line = None
        if self._inline == "thought":
            self._emit(self.style.dim("(end of thinking)") + "\n")
        self._inline = None

    def line(self, text: str) -> None:
        """Write one line of accord's own (already safe) text on a line of its own."""
        self._new_line()
        self._emit(text + "\n")

    def notice(self, text: str) -> None:
        """Write a notice to ``err`` on a line of its own (``text`` is accord's own)."""
        self._new_line()
        if self._spinner_shown:
            self.out.write(_ERASE_LINE)
            self.out.flush()
            self._spinner_shown = False
        self.err.write(text + "\n")
        self.err.flush()

    def ask(self, question: str) -> None:
        """Write a question (no line end: the answer is typed after it); pause the spinner."""
        self._new_line()
        self._paused = True
        self._emit(question)
        self._line_open = True

    def answered(self, *, line_ended: bool) -> None:
        """The question was answered; the spinner may run again.

        ``line_ended``: the answer ended with Enter, which the terminal echoed (end of input
        does not end the line).
        """
        self._paused = False
        if line_ended:
            self._line_open = False
        self._last_write = time.monotonic()

    def end(self) -> None:
        """End the line the output stopped in, or erase the spinner (before the shell prompt,
        or an error)."""
        self._new_line()
        if self._spinner_shown:
            self.out.write(_ERASE_LINE)
            self.out.flush()
            self._spinner_shown = False

    # -- the spinner --------------------------------------------------------------------

    def tick(self) -> None:
        """Advance the spinner, if the agent has been silent a while (terminal only)."""
        if not self.terminal or self._paused:
            return
        if time.monotonic() - self._last_write < SPINNER_DELAY:
            return
        self._frame = (self._frame + 1) % len(self._frames)
        frame = self._frames[self._frame]
        if self._tool_line is not None:
            call = self._calls.get(self._tool_line)
            if call is not None and call.status == "in_progress":  # its mark spins
                self.out.write(_ERASE_LINE + self._tool_text(call))
                self.out.flush()
            return
        if self._line_open:
            return  # mid-text: a spinner would break the line
        self.out.write(_ERASE_LINE + self.style.dim(f"{frame} waiting for the agent"))
        self.out.flush()
        self._spinner_shown = True

    # -- events -------------------------------------------------------------------------

    def show(self, event: TurnEvent) -> None:
        """Write ``event``."""
        match event:
            case TextDelta() | ThoughtDelta() | UserMessageDelta():
                self._text(event)
            case ToolCallAdded(tool_call=call) | ToolCallUpdated(tool_call=call):
                self._final_parts.clear()
                self._tool(call)
            case PermissionRequested(tool_call=call):
                self._final_parts.clear()
                self._permission(call)
            case PermissionResolved(option=option):
                words = OPTION_WORDS[option.kind] if option is not None else "cancelled"
                mark = (
                    self.style.green
                    if option and option.kind.startswith("allow")
                    else (self.style.red)
                )
                self.line(f"[permission] {mark(words)}")
            case PlanUpdated(entries=entries):
                done = sum(entry.status == "completed" for entry in entries)
                current = next((e.content for e in entries if e.status == "in_progress"), None)
                text = f"[plan {done}/{len(entries)} done]"
                if current:
                    text += f" now: {neutralise(current, multiline=False)}"
                self.line(self.style.dim(text) if self.terminal else text)
            case UsageUpdated():
                self.context = event
            case ModeUpdated(mode_id=mode_id):
                self.line(self.style.dim(f"[mode] {neutralise(mode_id, multiline=False)}"))
            case ConfigUpdated(config_options=options):
                values = ", ".join(
                    neutralise(
                        f"{o.name}={'on' if o.current_value else 'off'}"
                        if isinstance(o, BooleanSessionConfigOption)
                        else f"{o.name}={o.current_value}",
                        multiline=False,
                    )
                    for o in options
                )
                self.line(self.style.dim(f"[config] {values}"))
            case TitleUpdated(title=title):
                if title is not None:
                    self.line(self.style.dim(f"[title] {neutralise(title, multiline=False)}"))
            case CompactionUpdated(compaction=compaction):
                # One line when it ends (the summary itself is the model's, not the reader's).
                if compaction.status == "completed":
                    self.line(self.style.dim("[compaction] earlier turns summarised"))
                elif compaction.finished:
                    status = neutralise(compaction.status, multiline=False)
                    reason = neutralise(compaction.error or compaction.status, multiline=False)
                    self.line(
                        self.style.red(f"[compaction {status}]")
                        + f" {reason}; the history is kept as it was"
                    )
            case CommandsUpdated() | OtherUpdate() | CompactionSummaryDelta():
                pass  # bookkeeping the person does not need to watch scroll by
            case TurnFinished(usage=usage):
                self.usage = usage

    def _text(self, event: TextDelta | ThoughtDelta | UserMessageDelta) -> None:
        if isinstance(event, ThoughtDelta) and not self.show_thoughts:
            return
        if isinstance(event, UserMessageDelta) and not self.show_user:
            return
        text = (
            event.text
            if event.text or event.content.type == "text"
            else (f"[{event.content.type}]")
        )
        text = neutralise(text)
        if self._inline != event.kind:
            self._new_line()
            if isinstance(event, ThoughtDelta):
                self._emit(self.style.dim("(thinking)") + "\n")
            elif isinstance(event, UserMessageDelta):
                self._emit(self.style.bold("> "))
                self._line_open = True
            self._inline = event.kind
        if isinstance(event, TextDelta):
            self._final_parts.append(event.text)  # joined once, at the end: linear
        if not text:
            return
        self._emit(self.style.dim(text) if isinstance(event, ThoughtDelta) else text)
        self._line_open = not text.endswith("\n")

    def _tool_text(self, call: ToolCallState) -> str:
        status = call.status
        label = tool_label(call)
        detail = ""
        if status == "failed":
            first = next(iter(call.text.strip().splitlines()), "")
            if first:
                detail = ": " + neutralise(first[:120], multiline=False)
        if not self.terminal:
            return f"[tool {status}] {label}{detail}"
        style = self.style
        if status == "completed":
            mark = style.green(self._marks["completed"])
        elif status == "failed":
            mark = style.red(self._marks["failed"])
        elif status == "cancelled":
            mark = style.yellow(self._marks["cancelled"])
        elif status == "in_progress":
            mark = style.cyan(self._frames[self._frame])
        else:
            mark = style.dim(self._marks["pending"])
        words = {"pending": "pending", "in_progress": "running"}.get(status, "")
        tail = style.dim(f" ({words})") if words else ""
        return f"{mark} {label}{style.red(detail) if detail else ''}{tail}"

    def _tool(self, call: ToolCallState) -> None:
        key = call.tool_call_id
        status = call.status
        self._calls[key] = call
        if self.terminal:
            if self._tool_line == key:
                self._emit(_ERASE_LINE + self._tool_text(call))
            elif self._printed_status.get(key) != status:
                self._new_line()
                self._emit(self._tool_text(call))
                self._line_open = True
                self._tool_line = key
            self._printed_status[key] = status
        elif call.finished and self._printed_status.get(key) != status:
            self.line(self._tool_text(call))
            self._printed_status[key] = status
        if call.finished and call.diffs and key not in self._diff_shown:
            self._diff_shown.add(key)
            self._new_line()
            self._diffs(call.diffs)

    def _diffs(self, diffs: Sequence[DiffToolCallContent]) -> None:
        for diff in diffs:
            for text in unified_diff(diff, self.style):
                self._emit(text + "\n")

    def _permission(self, call: ToolCallState) -> None:
        style = self.style
        self.line(style.yellow("[permission?] ") + tool_label(call))
        for location in call.locations:
            where = neutralise(location.path, multiline=False)
            if location.line is not None:
                where += f":{location.line}"
            self._emit(f"  path: {where}\n")
        command = command_line_of(call.raw_input)
        if command is not None:
            self._emit(f"  command: {style.bold(neutralise(command, multiline=False))}\n")
        if call.diffs:
            self._diff_shown.add(call.tool_call_id)
            self._diffs(call.diffs)
        elif command is None and call.raw_input not in (None, {}):
            raw = orjson.dumps(call.raw_input, default=str).decode()
            if len(raw) > 300:
                raw = raw[:300] + "..."
            self._emit(f"  input: {neutralise(raw, multiline=False)}\n")

    # -- the end ------------------------------------------------------------------------

    def summary(self, stop_reason: StopReason | None, session_id: str | None) -> str:
        """The last line of a turn: how it ended, the session id, the usage."""
        if stop_reason is None:
            words = "quit without waiting for the agent"
        else:
            words = STOP_WORDS.get(stop_reason, stop_reason)
            if words != stop_reason and stop_reason not in ("end_turn", "cancelled"):
                words += f" ({stop_reason})"
        parts = [words]
        if session_id is not None:
            parts.append(f"session {neutralise(session_id, multiline=False)}")
        if self.usage is not None:
            parts.append(_usage_words(self.usage))
        if self.context is not None:
            parts.extend(_context_words(self.context))
        text = "[" + ", ".join(parts) + "]"
        if not self.style.enabled:
            return text
        if stop_reason == "end_turn":
            return self.style.green(text)
        return self.style.yellow(text)


def option_keys(options: Sequence[PermissionOption]) -> dict[str, PermissionOption]:
    """The key to type for each option, by its kind: ``y`` once, ``a`` always, ``n``, ``N``.

    Only the first option of each kind gets a key (the agent's names are not shown as
    choices: a name can say "Deny" on an option that allows). An option whose kind is
    ``unknown`` (missing, null or not one the protocol defines) gets a number instead (``1``,
    ``2``, ... in the order offered): only its name says what it means.
    """
    keys: dict[str, PermissionOption] = {}
    for key, kind in (("y", "allow_once"), ("a", "allow_always"), ("n", "reject_once")):
        option = next((o for o in options if o.kind == kind), None)
        if option is not None:
            keys[key] = option
    never = next((o for o in options if o.kind == "reject_always"), None)
    if never is not None:
        keys["N"] = never
    unknown = (o for o in options if o.kind == "unknown")
    for number, option in enumerate(unknown, start=1):
        keys[str(number)] = option
    return keys

"""The permission policies of ``accord run``: a question on the terminal, or a refusal.

On a terminal (:class:`TerminalQuestion`) the person is asked, once the output shows what the
request is about (title, path, command line, diff: see :class:`~._display.Display`)::

    Allow edit: Update config.toml? [y]es / [a]lways / [n]o / [N]ever:

The keys stand for the options' *kinds* (``allow_once``, ``allow_always``, ``reject_once``,
``reject_always``), only those the agent offers; its option names are not trusted (a name can
say "Deny" on an option that allows). An option of a kind the client does not know (missing,
null or unknown on the wire: ``unknown``) is offered by a number and its name, never picked
for the person. Anything else is asked again; end of input (Ctrl-D)
refuses. Without a terminal (:class:`RefuseWithNotice`) every request is refused, saying once
why on stderr.

Above: :mod:`accord.cli._run`. Below: the client's policies (:mod:`accord.client`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from collections.abc import Awaitable, Callable

import anyio
from anyio.from_thread import BlockingPortal

from ..client import (
    Cancel,
    DenyAll,
    PermissionContext,
    PermissionDecision,
    PermissionRequested,
    Select,
    neutralise,
)
from ._display import Display, option_keys, tool_label

__all__ = ("RefuseWithNotice", "TerminalQuestion", "question_for", "terminal_asker")

_KEY_WORDS = {"y": "[y]es", "a": "[a]lways", "n": "[n]o", "N": "[N]ever"}

#: How long a question waits for its request to be printed; only a request outside a turn
#: (which the turn's output never shows) waits that long.
_SHOW_WAIT = 2.0


class RefuseWithNotice:
    """Refuse every request, saying once why (no terminal to ask on)."""

    def __init__(self, display: Display) -> None:
        self._told = False
        self._deny = DenyAll()
        self._display = display

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        """Refuse (``reject_once`` or ``reject_always``; cancel when neither is offered)."""
        if not self._told:
            self._told = True
            self._display.notice(
                "accord: stdin is not a terminal, so permission requests are refused "
                "(use --approve-all to allow them)"
            )
        return await self._deny.decide(context)


def question_for(context: PermissionContext) -> tuple[str, dict[str, str]]:
    """The question line for ``context`` and the option id of each key it offers."""
    keys = option_keys(context.options)
    label = tool_label(context.tool_call)
    choices = " / ".join(
        _KEY_WORDS.get(key) or f"[{key}] {neutralise(option.name, multiline=False)}"
        for key, option in keys.items()
    )
    return f"Allow {label}? {choices}: ", {key: o.option_id for key, o in keys.items()}


class TerminalQuestion:
    """Ask the person at the terminal, once the output shows the request.

    The turn's events are printed by the main loop while the policy is called from the
    connection: without waiting, the question could appear before the lines that lead up to
    it, and those lines would then be printed into the question (or after the answer).
    """

    def __init__(self, display: Display) -> None:
        self._display = display
        self._shown: Counter[str] = Counter()  # requests printed, per tool call id
        self._asked: Counter[str] = Counter()
        self._changed = anyio.Event()

    def shown(self, event: PermissionRequested) -> None:
        """The output now shows this request (and everything before it)."""
        self._shown[event.tool_call.tool_call_id] += 1
        self._changed.set()
        self._changed = anyio.Event()

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        """Ask until the answer is one of the offered keys; end of input refuses."""
        key = context.tool_call.tool_call_id
        self._asked[key] += 1
        with anyio.move_on_after(_SHOW_WAIT):
            while self._shown[key] < self._asked[key]:
                await self._changed.wait()
        question, ids = question_for(context)
        if not ids:
            return Cancel()
        style = self._display.style
        prompt = style.bold(question)
        while True:
            self._display.ask(prompt)
            answer: str | None = None
            try:
                answer = await _read_line()
            finally:
                self._display.answered(line_ended=answer is not None)
            if answer is None:  # end of input: refuse
                refuse = context.option("reject_once", "reject_always")
                return Select(refuse.option_id) if refuse is not None else Cancel()
            answer = answer.strip()
            if answer in ids:
                return Select(ids[answer])
            if answer.lower() in ("yes", "no") and answer[0] in ids:
                return Select(ids[answer[0]])
            offered = ", ".join(ids)
            self._display.line(style.yellow(f"Please answer one of: {offered}"))


def terminal_asker(display: Display) -> Callable[[str], Awaitable[str]]:
    """An ``ask(question) -> typed line`` on the terminal, through ``display`` (for the
    agent's questions and its sign-in offer: :mod:`._elicit`, :mod:`._signin`)."""

    async def ask(question: str) -> str:
        display.ask(question)
        answer: str | None = None
        try:
            answer = await _read_line()
        finally:
            display.answered(line_ended=answer is not None)
        return (answer or "").strip()

    return ask


async def _read_line() -> str | None:
    """The next line typed on stdin (without its end), or None at end of input.

    The blocking read runs in a daemon thread of its own, not in anyio's worker threads:
    when Ctrl-C cancels the turn, the question is abandoned with the thread still waiting
    for a line, and a non-daemon thread would keep the process from exiting until Enter.
    """
    answered = anyio.Event()
    answer: str | None = None

    def read() -> None:
        nonlocal answer
        answer = _read_answer()
        try:
            portal.call(answered.set)
        except RuntimeError:  # the portal is closed: nobody waits for this answer any more
            pass

    async with BlockingPortal() as portal:
        threading.Thread(target=read, name="accord permission question", daemon=True).start()
        await answered.wait()
    return answer


def _read_answer() -> str | None:
    # The file descriptor, not sys.stdin: an abandoned thread blocked here holds no lock
    # that the interpreter would need at exit.
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(sys.stdin.fileno(), 1024)
        if not chunk:  # end of input (Ctrl-D)
            return None if not line else line.decode(errors="replace")
        line += chunk
    return line.decode(errors="replace").rstrip("\r\n")

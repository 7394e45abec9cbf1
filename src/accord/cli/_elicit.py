"""The agent's questions (``elicitation/create``) asked on the terminal, for ``accord run``.

:class:`TerminalElicitation` is an :class:`~accord.client.ElicitationPolicy`: it shows the
agent's message, asks whether to answer (``y``), decline (``n``) or dismiss (``c``), then asks
the form's fields one at a time, by type:

* ``string``: free text (checked for length, pattern and format); with ``enum`` / ``oneOf``
  a numbered list to pick from (by number or value);
* ``number`` / ``integer``: a number in the allowed range;
* ``boolean``: yes or no;
* ``array`` (multi-select): numbers or values separated by commas;

each with its title, description and default (Enter takes the default; an optional field
without one is left out; a required one is asked again). A wrong answer is explained and the
field asked again. A field of a type this version cannot show is never shown as another
control: optional ones are skipped, a required one declines the question (saying why). A URL
question prints the address and asks whether the user will open it.

Everything the agent wrote is shown without terminal control characters. ``accord run``
installs the policy only when stdin is a terminal; otherwise no elicitation is advertised,
so agents ask in their reply (and an agent that asks anyway is refused with -32601).

Below: :mod:`accord.client` (the policy protocol), :mod:`accord.roles` (the field checks).
Above: ``accord run`` (:mod:`._run`), which passes its line reader.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Final, TextIO

from ..client import Accept, Cancel, Decline, ElicitationContext, ElicitationDecision
from ..roles import choices_of, value_problem
from ..schema import (
    ArrayElicitationPropertySchema,
    BooleanElicitationPropertySchema,
    ElicitationContentValue,
    ElicitationPropertySchema,
    IntegerElicitationPropertySchema,
    NumberElicitationPropertySchema,
    StringElicitationPropertySchema,
    StringMultiSelectItems,
    TitledMultiSelectItems,
)

__all__ = ("Ask", "TerminalElicitation", "printable")

Ask = Callable[[str], Awaitable[str]]
"""Writes a question and returns the line typed in answer (stripped)."""

#: Escape sequences (CSI, OSC, two-character), then any other control character.
_ESCAPES: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]"
)
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_YES: Final = frozenset({"y", "yes", "true", "1"})
_NO: Final = frozenset({"n", "no", "false", "0"})
#: Wrong answers to one field before the question is dismissed (a stuck script, not a person).
MAX_ATTEMPTS: Final = 5


def printable(text: str) -> str:
    """``text`` without terminal control characters (escape sequences cannot run)."""
    return _CONTROL.sub("", _ESCAPES.sub("", text))


class _Dismissed(Exception):
    """The question is over without an answer (the decision is attached)."""

    def __init__(self, decision: ElicitationDecision) -> None:
        self.decision = decision


class TerminalElicitation:
    """Asks the agent's questions on the terminal (module docstring).

    Args:
        ask: Writes a question and returns the typed line.
        out: Where the message and explanations go (default: stderr).
    """

    def __init__(self, ask: Ask, out: TextIO | None = None) -> None:
        self._ask = ask
        self._out = out

    def _say(self, text: str) -> None:
        out = self._out if self._out is not None else sys.stderr
        out.write(text + "\n")
        out.flush()

    async def decide(self, context: ElicitationContext) -> ElicitationDecision:
        """Ask on the terminal and return the user's answer."""
        self._say(f"\nThe agent asks: {printable(context.message)}")
        if context.mode == "url":
            return await self._url(context)
        schema = context.schema
        if schema.title:
            self._say(printable(schema.title))
        if schema.description:
            self._say(printable(schema.description))
        first = (await self._ask("Answer? [y]es / [n]o, decline / [c]ancel: ")).lower()
        if first in ("n", "no"):
            return Decline()
        if first in ("c", "cancel"):
            return Cancel()
        required = set(schema.required or ())
        content: dict[str, ElicitationContentValue] = {}
        try:
            for name, prop in schema.properties.items():
                value = await self._field(name, prop, required=name in required)
                if value is not None:
                    content[name] = value
        except _Dismissed as dismissed:
            return dismissed.decision
        return Accept(content)

    async def _url(self, context: ElicitationContext) -> ElicitationDecision:
        self._say(f"Open this address in your browser: {printable(context.url or '')}")
        answer = (await self._ask("Will you open it? [y/N]: ")).lower()
        return Accept() if answer in _YES else Decline()

    async def _field(
        self, name: str, prop: ElicitationPropertySchema, *, required: bool
    ) -> ElicitationContentValue | None:
        """Ask one field until its answer fits; ``None``: left out."""
        label = printable(getattr(prop, "title", None) or name)
        description = getattr(prop, "description", None)
        if description:
            label += f" ({printable(description)})"
        reader = _reader(prop)
        if reader is None:
            kind = printable(str(getattr(prop, "type", "?")))
            if required:
                self._say(f"accord cannot show the field {label!r} (type {kind}): declined")
                raise _Dismissed(Decline())
            self._say(f"(skipped {label!r}: accord cannot show fields of type {kind})")
            return None
        hint, parse = reader
        default = _default(prop)
        shown = f"{label}{hint}"
        if default is not None:
            shown += f" [default: {_show(default)}]"
        elif not required:
            shown += " [optional]"
        for _ in range(MAX_ATTEMPTS):
            line = await self._ask(f"{shown}: ")
            if not line:
                if default is not None:
                    return default
                if not required:
                    return None
                self._say("  an answer is required")
                continue
            value, problem = parse(line)
            if problem is None:
                problem = value_problem(prop, value)
            if problem is None:
                return value
            self._say(f"  {problem}")
        self._say("  too many wrong answers: the question is dismissed")
        raise _Dismissed(Cancel())


Parser = Callable[[str], tuple[Any, str | None]]


def _reader(prop: ElicitationPropertySchema) -> tuple[str, Parser] | None:
    """A hint for the prompt and a parser for the typed line, or ``None`` (not showable)."""
    match prop:
        case StringElicitationPropertySchema():
            choices = choices_of(prop)
            if choices is None:
                return ("", lambda line: (line, None))
            return (_menu(choices), lambda line: _pick(line, [value for value, _ in choices]))
        case IntegerElicitationPropertySchema():
            return (" (a whole number)", _integer)
        case NumberElicitationPropertySchema():
            return (" (a number)", _number)
        case BooleanElicitationPropertySchema():
            return (" (y/n)", _boolean)
        case ArrayElicitationPropertySchema():
            choices = _array_choices(prop)
            if choices is None:
                return None
            values = [value for value, _ in choices]
            hint = _menu(choices) + " (several: separate by commas)"
            return (hint, lambda line: _many(line, values))
        case _:
            return None


def _array_choices(prop: ArrayElicitationPropertySchema) -> list[tuple[str, str]] | None:
    items = prop.items
    if isinstance(items, StringMultiSelectItems):
        return [(value, value) for value in items.enum]
    if isinstance(items, TitledMultiSelectItems):
        return [(option.const, option.title) for option in items.any_of]
    return None


def _menu(choices: list[tuple[str, str]]) -> str:
    lines = [f"  {number}. {printable(label)}" for number, (_, label) in enumerate(choices, 1)]
    return "\n" + "\n".join(lines) + "\n  choose"


def _pick(line: str, values: list[str]) -> tuple[Any, str | None]:
    if line.isdigit() and 1 <= int(line) <= len(values):
        return values[int(line) - 1], None
    return line, None  # checked against the choices by value_problem


def _many(line: str, values: list[str]) -> tuple[Any, str | None]:
    picked: list[str] = []
    for part in (piece.strip() for piece in line.split(",")):
        if not part:
            continue
        value, _ = _pick(part, values)
        picked.append(value)
    return picked, None


def _integer(line: str) -> tuple[Any, str | None]:
    try:
        return int(line), None
    except ValueError:
        return None, "must be a whole number"


def _number(line: str) -> tuple[Any, str | None]:
    try:
        value = float(line)
    except ValueError:
        return None, "must be a number"
    return (int(value) if value.is_integer() and "." not in line else value), None


def _boolean(line: str) -> tuple[Any, str | None]:
    answer = line.lower()
    if answer in _YES:
        return True, None
    if answer in _NO:
        return False, None
    return None, "answer y or n"


def _default(prop: ElicitationPropertySchema) -> ElicitationContentValue | None:
    default: Any = getattr(prop, "default", None)
    if default is None or value_problem(prop, default) is not None:
        return None  # a default that does not fit its own field is not offered
    if isinstance(default, list):
        return [str(item) for item in default]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return default


def _show(value: ElicitationContentValue) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(printable(item) for item in value)
    return printable(str(value))

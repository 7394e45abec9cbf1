"""Slash commands: advertised to the editor, handled before the model is called.

An editor shows :data:`COMMANDS` (sent as ``available_commands_update``) and the user types,
say, ``/mode ask``: the prompt arrives as text starting with ``/``. :func:`parse_command`
recognises a known command at the start of the prompt's first text block (anything else, an
unknown ``/word`` included, goes to the model as usual) and :func:`decide` says what to do,
without doing it, so the decisions are testable on their own; the session carries them out:

``/help``
    Lists the commands and modes.
``/mode <ask|code|auto>``
    Switches the session's mode (``current_mode_update``), exactly as the editor's mode
    picker would; without an argument, says which mode is current.
``/clear``
    Starts a fresh conversation: the model forgets every earlier message (the transcript in
    the editor stays, and so does the system prompt). Saved at once, so it holds after a
    restart.
``/compact [instruction]``
    Replaces the older turns, in what the model sees, by a summary the model writes (the
    instruction says what it must keep); the transcript stays whole. Said as a compaction
    (``compaction_update``), or an ordinary marker message for editors without it.

This module imports nothing of pydantic-ai.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ..schema import AvailableCommand, ContentBlock, TextContentBlock, UnstructuredCommandInput
from ._modes import MODES, mode_spec

__all__ = ("COMMANDS", "Command", "CommandAction", "decide", "parse_command")

COMMANDS: Final = (
    AvailableCommand(name="help", description="List the commands and modes"),
    AvailableCommand(
        name="mode",
        description="Switch mode: ask (read-only), code (asks before edits), auto (never asks)",
        input=UnstructuredCommandInput(hint="ask | code | auto"),
    ),
    AvailableCommand(
        name="clear",
        description="Start a fresh conversation (the model forgets what was said so far)",
    ),
    AvailableCommand(
        name="compact",
        description="Summarise the earlier turns for the model (the transcript stays whole)",
        input=UnstructuredCommandInput(hint="what the summary must keep (optional)"),
    ),
)
"""The commands offered to the editor."""

_NAMES: Final = frozenset(command.name for command in COMMANDS)


@dataclass(frozen=True, slots=True)
class Command:
    """A slash command typed by the user: its name and the text after it."""

    name: str
    argument: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandAction:
    """What a command does.

    Attributes:
        reply: Shown to the user as the agent's reply (none when empty).
        switch_mode: The mode to switch to, if any.
        clear: Forget the conversation.
        compact: Compact the conversation, with this instruction (``None``: do not).
    """

    reply: str
    switch_mode: str | None = None
    clear: bool = False
    compact: str | None = None


def parse_command(prompt: Sequence[ContentBlock]) -> Command | None:
    """The command the prompt starts with, or ``None`` if it is an ordinary prompt."""
    if not prompt or not isinstance(prompt[0], TextContentBlock):
        return None
    text = prompt[0].text.strip()
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    if name not in _NAMES:
        return None
    return Command(name, argument.strip())


def _help(current_mode: str | None) -> str:
    lines = ["Commands:"]
    lines += [f"  /{c.name} — {c.description}" for c in COMMANDS]
    lines.append("Modes:")
    current = mode_spec(current_mode).id
    for mode in MODES.values():
        marker = " (current)" if mode.id == current else ""
        lines.append(f"  {mode.id}{marker} — {mode.description}")
    return "\n".join(lines)


def decide(command: Command, current_mode: str | None) -> CommandAction:
    """What ``command`` does in a session currently in mode ``current_mode``."""
    if command.name == "mode":
        wanted = command.argument.lower()
        current = mode_spec(current_mode).id
        if not wanted:
            return CommandAction(reply=f"The mode is {current}. Modes: {', '.join(MODES)}.")
        if wanted not in MODES:
            return CommandAction(
                reply=f"Unknown mode {command.argument!r}. Modes: {', '.join(MODES)}."
            )
        if wanted == current:
            return CommandAction(reply=f"Already in {wanted} mode.")
        return CommandAction(
            reply=f"Switched to {wanted} mode: {MODES[wanted].description}.", switch_mode=wanted
        )
    if command.name == "compact":
        return CommandAction(reply="", compact=command.argument)
    if command.name == "clear":
        return CommandAction(
            reply="Started a fresh conversation: earlier messages are forgotten.", clear=True
        )
    return CommandAction(reply=_help(current_mode))

"""``accord run`` signs in when the agent asks it to, on a terminal: the agent's auth methods.

When ``session/new`` answers -32000 (authentication required) and stdin and stderr are
terminals, ``accord run`` lists the agent's ``type: "agent"`` auth methods and, for an agent
started from a command line (``--agent``), its ``type: "terminal"`` ones, numbered, and reads
the choice. An agent method is sent as ``authenticate`` and ``session/new`` is tried again. A
terminal method runs the agent's command with the method's arguments, in this terminal, for
the user to complete (a sign-in, ``accord serve --configure``); when it exits 0, ``accord run``
connects again and goes on with the prompt. Without a terminal, or for the built-in agent
(whose setup is ``--model``), nothing is offered: the error names every method and
``--auth METHOD``.

Below: :mod:`accord.client` (``run_terminal_auth``). Above: :mod:`._run`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from ..client import AgentSpec, ConnectedAgent, run_terminal_auth
from ..schema import AuthMethodAgent, TerminalAuthMethod
from ._elicit import Ask, printable

__all__ = ("SignedIn", "can_sign_in", "offer_sign_in", "on_a_terminal")


class SignedIn(Exception):
    """A terminal auth method succeeded: connect again."""


def can_sign_in(spec: AgentSpec) -> bool:
    """Whether terminal auth can be offered for this agent (a command line, a terminal)."""
    return isinstance(spec, Sequence) and not isinstance(spec, str) and sys.stdin.isatty()


def on_a_terminal() -> bool:
    """Whether ``accord run`` may ask the user (stdin and stderr are terminals)."""
    return sys.stdin.isatty() and sys.stderr.isatty()


async def offer_sign_in(
    conn: ConnectedAgent, spec: AgentSpec, cwd: str | os.PathLike[str], ask: Ask
) -> AuthMethodAgent | None:
    """List the agent's auth methods on the terminal, numbered, and read the user's choice.

    Offered: the ``agent`` methods (``authenticate`` on this connection) and, for an agent
    started from a command line, the ``terminal`` methods, which run at once in this terminal.

    Returns:
        The ``agent`` method chosen (the caller authenticates with it), or None: not on a
        terminal, nothing to offer, or the user said no.

    Raises:
        SignedIn: a terminal method ran and exited 0: connect again.
        TerminalAuthFailed: a terminal method ran and exited with another status than 0.
    """
    if not on_a_terminal():
        return None
    terminal = can_sign_in(spec)
    methods = [m for m in conn.auth_methods if isinstance(m, AuthMethodAgent) or terminal]
    if not methods:
        return None
    sys.stderr.write("\nThe agent needs you to sign in or set it up first:\n")
    for number, method in enumerate(methods, 1):
        about = f": {printable(method.description)}" if method.description else ""
        how = "runs in this terminal" if isinstance(method, TerminalAuthMethod) else "agent"
        sys.stderr.write(f"  {number}. {printable(method.name)}{about} ({how})\n")
    answer = (await ask("Sign in with one now? (number, Enter = 1, n = no): ")).lower()
    if answer in ("n", "no"):
        return None
    index = int(answer) - 1 if answer.isdigit() and 1 <= int(answer) <= len(methods) else 0
    chosen = methods[index]
    if isinstance(chosen, AuthMethodAgent):
        return chosen
    assert isinstance(spec, Sequence)
    await run_terminal_auth(list(spec), chosen, cwd=cwd)
    sys.stderr.write("accord: signed in; connecting again\n")
    raise SignedIn

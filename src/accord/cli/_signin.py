"""``accord run`` signs in when the agent asks it to: terminal auth methods on the terminal.

When ``session/new`` answers -32000 (authentication required) and the agent, started from a
command line (``--agent``), offers a ``type: "terminal"`` auth method, ``accord run`` offers to
run it: the agent's command with the method's arguments, in this terminal, for the user to
complete (a sign-in, ``accord serve --configure``). When it exits 0, ``accord run`` connects
again and goes on with the prompt. Without a terminal, or for the built-in agent (whose setup
is ``--model``), nothing is offered and the error is reported as before.

Below: :mod:`accord.client` (``run_terminal_auth``). Above: :mod:`._run`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from ..client import AgentSpec, ConnectedAgent, run_terminal_auth, terminal_auth_methods
from ._elicit import Ask, printable

__all__ = ("SignedIn", "offer_terminal_auth")


class SignedIn(Exception):
    """A terminal auth method succeeded: connect again."""


def can_sign_in(spec: AgentSpec) -> bool:
    """Whether terminal auth can be offered for this agent (a command line, a terminal)."""
    return isinstance(spec, Sequence) and not isinstance(spec, str) and sys.stdin.isatty()


async def offer_terminal_auth(
    conn: ConnectedAgent, spec: AgentSpec, cwd: str | os.PathLike[str], ask: Ask
) -> bool:
    """Offer the agent's terminal auth method and run it; whether it succeeded.

    Raises:
        TerminalAuthFailed: the method ran and exited with another status than 0.
    """
    if not can_sign_in(spec):
        return False
    methods = terminal_auth_methods(conn.auth_methods)
    if not methods:
        return False
    assert isinstance(spec, Sequence)
    sys.stderr.write("\nThe agent needs you to sign in or set it up first:\n")
    for number, method in enumerate(methods, 1):
        about = f": {printable(method.description)}" if method.description else ""
        sys.stderr.write(f"  {number}. {printable(method.name)}{about}\n")
    answer = (await ask("Run one now in this terminal? (number, Enter = 1, n = no): ")).lower()
    if answer in ("n", "no"):
        return False
    index = int(answer) - 1 if answer.isdigit() and 1 <= int(answer) <= len(methods) else 0
    await run_terminal_auth(list(spec), methods[index], cwd=cwd)
    sys.stderr.write("accord: signed in; connecting again\n")
    return True

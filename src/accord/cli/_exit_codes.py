"""The exit codes of the ``accord`` command, part of its interface (documented in docs/cli.md).

Every subcommand module returns one of these; ``_main.py`` (parsing and dispatch) sits above
them and imports them from here, so no command module imports the dispatcher.
"""

from __future__ import annotations

import enum

__all__ = ("ExitCode",)


class ExitCode(enum.IntEnum):
    """Exit codes of the ``accord`` command."""

    OK = 0
    """The turn ended normally (``end_turn``, ``max_tokens``, ``max_turn_requests``)."""
    ERROR = 1
    """A local error: bad arguments, an unreadable file, an unexpected failure."""
    USAGE = 2
    """The command line could not be parsed (argparse's convention)."""
    AGENT_FAILED = 3
    """The agent crashed, exited, broke the protocol or answered a request with an error."""
    PERMISSION_REFUSED = 4
    """A permission request was refused and the agent could not finish the task."""
    REFUSED = 5
    """The agent refused the prompt (``stopReason: refusal``)."""
    CANCELLED = 130
    """Interrupted with Ctrl-C: ``session/cancel`` was sent first (128 + SIGINT)."""

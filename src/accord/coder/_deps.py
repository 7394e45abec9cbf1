"""What the coder's tools get at run time (pydantic-ai ``deps``): one object per session.

The session builds one :class:`CoderDeps` when it opens and keeps it current: the mode when it
changes, the running turn while one runs (a delegated sub-agent asks for permission and is
cancelled through it), and the running turn's map from pydantic-ai's tool call ids to the ACP
ones (a tool that asks the user names its call). Tools read it as ``ctx.deps``.

This module imports nothing of pydantic-ai.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..engines import TerminalService, TurnContext
from ._files import Workspace

__all__ = ("CoderDeps",)


@dataclass(kw_only=True, eq=False)
class CoderDeps:
    """One session's run-time context for its tools.

    Attributes:
        session_id: The ACP session id.
        workspace: The session's files (roots; the client's file services when offered).
        terminals: The client's terminals, when offered (else commands run locally).
        mode_id: The session's current mode.
        turn: The running turn, while one runs.
        acp_tool_call_id: The ACP id of the running turn's call pydantic-ai names so
            (``None`` when it is not known), set by each turn's translator.
    """

    session_id: str
    workspace: Workspace
    terminals: TerminalService | None = None
    mode_id: str | None = None
    turn: TurnContext | None = None
    acp_tool_call_id: Callable[[str], str | None] = lambda _call_id: None

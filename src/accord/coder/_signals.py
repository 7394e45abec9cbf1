"""What a running tool tells the client: pydantic-ai custom events the translator maps.

A tool runs inside pydantic-ai, far from the turn's event stream. pydantic-ai lets it emit
*custom events* (``await ctx.emit(event)``) that reach the stream as they happen, while the
tool is still running; the coder's translator (:mod:`._translator`) turns these into accord
events for the tool call that emitted them:

:class:`TerminalAttached`
    The command now runs in the client's terminal ``terminal_id``: embedded in the tool call
    at once (the editor shows the output live) and kept when the call ends.
:class:`ResultContent`
    What the call shows when it completes (an edit's diff of the whole file, and the file's
    first changed line as its location), instead of the result text.
:class:`PlanSignal`
    The agent's plan (``plan`` update).
:class:`SubAgentBegan` / :class:`SubAgentOutput` / :class:`SubAgentEnded`
    A delegated sub-task: the sub-agent's start (attached to the delegating call), each of its
    events (published under its own ``agent_id``), and its end.

This module sits on pydantic-ai and accord's events; tools emit, the translator maps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic_ai import CustomEvent

from ..engines import SubAgentEvent
from ..schema import PlanEntry, ToolCallContent, ToolCallLocation

__all__ = (
    "PlanSignal",
    "ResultContent",
    "SubAgentBegan",
    "SubAgentEnded",
    "SubAgentOutput",
    "TerminalAttached",
)


@dataclass(kw_only=True, repr=False)
class TerminalAttached(CustomEvent, name="accord_terminal_attached", ui=False):
    """The calling tool runs a command in the client's terminal ``terminal_id``."""

    terminal_id: str = ""


@dataclass(kw_only=True, repr=False)
class ResultContent(CustomEvent, name="accord_result_content", ui=False):
    """The content (and locations, if any) the calling tool call shows when it completes
    successfully."""

    content: tuple[ToolCallContent, ...] = field(default=())
    locations: tuple[ToolCallLocation, ...] = field(default=())


@dataclass(kw_only=True, repr=False)
class PlanSignal(CustomEvent, name="accord_plan_changed", ui=False):
    """The agent's whole plan, as it is now."""

    entries: tuple[PlanEntry, ...] = field(default=())


@dataclass(kw_only=True, repr=False)
class SubAgentBegan(CustomEvent, name="accord_sub_agent_began", ui=False):
    """The calling tool started sub-agent ``sub_agent_id`` (named ``agent_name``)."""

    sub_agent_id: str = ""
    agent_name: str = ""


@dataclass(kw_only=True, repr=False)
class SubAgentOutput(CustomEvent, name="accord_sub_agent_output", ui=False):
    """One event of a sub-agent, already attributed to it."""

    output: SubAgentEvent | None = None


@dataclass(kw_only=True, repr=False)
class SubAgentEnded(CustomEvent, name="accord_sub_agent_ended", ui=False):
    """Sub-agent ``sub_agent_id`` finished."""

    sub_agent_id: str = ""
    outcome: Literal["completed", "failed", "cancelled"] = "completed"

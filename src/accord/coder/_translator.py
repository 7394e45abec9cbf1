"""The coder's event translator: the pydantic-ai adapter's, plus what running tools report.

:class:`CoderTranslator` extends :class:`~accord.engines.pydantic_ai.EventTranslator` with the
custom events of :mod:`._signals`. Those carry pydantic-ai's tool call id (pydantic-ai stamps
it on every event a tool emits); the translator remembers the accord id it gave each call when
the call was announced, and attributes the event to it:

* a terminal is embedded in the call as soon as the command starts (``tool_call_update`` with
  terminal content) and stays in the call's content when it ends, before the result text;
* an edit's whole-file diff becomes the completed call's content (instead of the diff built
  from the arguments alone), its first changed line the call's location;
* plan changes become ``plan`` updates;
* a sub-agent's start and end are observe events naming the delegating call, and its own
  events pass through attributed to it (standard clients see only the delegating call).

This module sits on the pydantic-ai adapter and :mod:`._signals`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

from pydantic_ai.messages import AgentStreamEvent, FunctionToolCallEvent, FunctionToolResultEvent

from ..engines import (
    Event,
    PlanChanged,
    SubAgentStarted,
    SubAgentStopped,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
)
from ..engines.pydantic_ai import EventTranslator
from ..schema import TerminalToolCallContent, ToolCallContent, ToolCallLocation
from ._signals import (
    PlanSignal,
    ResultContent,
    SubAgentBegan,
    SubAgentEnded,
    SubAgentOutput,
    TerminalAttached,
)

__all__ = ("CoderTranslator",)


class CoderTranslator(EventTranslator):
    """Maps a coder turn's events, tool reports included (module docstring).

    Takes the arguments of :class:`~accord.engines.pydantic_ai.EventTranslator`.
    """

    def __init__(self, **kwargs: Any) -> None:
        """Start a turn with no calls known."""
        super().__init__(**kwargs)
        self._acp_ids: dict[str, str] = {}
        self._terminals: dict[str, TerminalToolCallContent] = {}
        self._results: dict[str, ResultContent] = {}

    def on_tool_call(self, event: FunctionToolCallEvent) -> Sequence[Event]:
        """Announce the call as usual, remembering its accord id."""
        produced = super().on_tool_call(event)
        for output in produced:
            if isinstance(output, ToolCallStarted | ToolCallProgress):
                self._acp_ids[event.part.tool_call_id] = output.tool_call_id
                break
        return produced

    def on_tool_result(self, event: FunctionToolResultEvent) -> Sequence[Event]:
        """End the call as usual, keeping its terminal and showing its reported content."""
        produced = super().on_tool_result(event)
        call_id = event.part.tool_call_id
        self._acp_ids.pop(call_id, None)
        terminal = self._terminals.pop(call_id, None)
        result = self._results.pop(call_id, None)
        if not produced or (terminal is None and result is None):
            return produced
        ended = produced[-1]
        if not isinstance(ended, ToolCallEnded):  # pragma: lax no cover
            return produced
        content: tuple[ToolCallContent, ...] = tuple(ended.content or ())
        locations: tuple[ToolCallLocation, ...] | None = ended.locations
        if ended.status == "completed" and result is not None:
            content = result.content
            locations = result.locations or locations
        if terminal is not None:
            content = (terminal, *content)
        return (*produced[:-1], dataclasses.replace(ended, content=content, locations=locations))

    def on_other(self, event: AgentStreamEvent) -> Sequence[Event]:
        """Map the coder's custom events; anything else as the base class does."""
        match event:
            case TerminalAttached():
                return self._terminal(event)
            case ResultContent():
                if event.tool_call_id is not None:
                    self._results[event.tool_call_id] = event
                return ()
            case PlanSignal():
                return (PlanChanged(entries=event.entries),)
            case SubAgentBegan():
                parent = self._acp_ids.get(event.tool_call_id or "")
                return (
                    SubAgentStarted(
                        sub_agent_id=event.sub_agent_id,
                        name=event.agent_name,
                        parent_tool_call_id=parent,
                    ),
                )
            case SubAgentOutput(output=output) if output is not None:
                # A sub-agent's event is a turn output like any other, though the translator's
                # hooks are typed for the root agent's events; the session yields it unchanged.
                return cast(Sequence[Event], (output,))
            case SubAgentEnded():
                return (SubAgentStopped(sub_agent_id=event.sub_agent_id, outcome=event.outcome),)
            case _:
                return super().on_other(event)

    def _terminal(self, event: TerminalAttached) -> Sequence[Event]:
        call_id = event.tool_call_id
        acp_id = self._acp_ids.get(call_id or "")
        if call_id is None or acp_id is None:
            return ()
        content = TerminalToolCallContent(terminal_id=event.terminal_id)
        self._terminals[call_id] = content
        return (ToolCallProgress(tool_call_id=acp_id, content=(content,)),)

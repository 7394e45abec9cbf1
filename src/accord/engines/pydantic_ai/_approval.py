"""The turn's pydantic-ai capability: mode tool filtering and tool approval over ACP.

pydantic-ai lets a capability take part in a run through hooks; the session adds one
:class:`TurnCapability` to every run (``agent.iter(capabilities=[...])``):

``prepare_tools``
    Before every model request: records the function tools on offer (their metadata gives
    tool kinds) and applies the engine's ``tool_filter`` for the session's *current* mode, so
    a mode's tool set holds on every request, also after a mode switch in the middle of a
    turn. A filtered-out tool is neither offered to the model nor callable.
``before_tool_execute``
    Right before a tool function runs: if the engine's ``needs_approval`` hook says ``True``
    for this call in the current mode, raises ``ApprovalRequired`` so the call is deferred.
``handle_deferred_tool_calls``
    pydantic-ai's inline resolution of deferred calls (tools declared with
    ``requires_approval=True``, or deferred by the hook above): for each call that waits for
    approval it asks the client (``TurnContext.request_permission``, which becomes
    ``session/request_permission``, after the call's preview went out, see
    :meth:`EventTranslator.preview`) and answers ``ToolApproved`` (the tool runs) or
    ``ToolDenied`` (it never runs; the model is told, and the turn goes on). A hook answer of
    ``False`` approves without asking. Externally executed calls are left unresolved (accord
    has no way to run them).
``wrap_run_event_stream``
    Hands the run's event stream back untouched. pydantic-ai's own default wraps it in a
    pass-through async generator, one more frame for every event and every task switch of
    the hot path (text deltas); the session streams every node itself, so pydantic-ai's
    "drain the node if a capability wraps its stream" is a no-op for it.

This module sits on pydantic-ai, the engine protocol and the translator; the session builds
one capability per turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

import anyio
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.messages import AgentStreamEvent, ToolCallPart
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
)

from ...schema import PermissionOption
from .. import TurnContext
from ._pipe import Pipe
from ._stream import EventTranslator

__all__ = (
    "DENIED_MESSAGE",
    "TURN_CANCELLED_MESSAGE",
    "ApprovalHook",
    "ToolFilter",
    "TurnCapability",
    "TurnState",
    "waits_for_approval",
)

ApprovalHook: TypeAlias = Callable[[str, Mapping[str, Any], str | None], bool | None]
"""``needs_approval(tool_name, args, mode_id)``: ``True`` asks the user before the call runs,
``False`` runs it without asking (even a tool declared ``requires_approval=True``), ``None``
leaves it to the tool's own declaration."""

ToolFilter: TypeAlias = Callable[[str, str | None], bool]
"""``tool_filter(tool_name, mode_id)``: whether the tool is offered in that mode."""

DENIED_MESSAGE: Final = "The user rejected this tool call."
"""What the model is told when the user rejects a call."""

TURN_CANCELLED_MESSAGE: Final = "The tool call was cancelled."
"""What the model is told about a call whose approval the cancelled turn never got."""


def waits_for_approval(
    hook: ApprovalHook | None,
    mode_id: str | None,
    name: str,
    args: Mapping[str, Any],
    definition: ToolDefinition | None,
) -> bool:
    """Whether a call of tool ``name`` will ask the user before it runs."""
    decision = None if hook is None else hook(name, args, mode_id)
    if decision is not None:
        return decision
    return definition is not None and definition.kind == "unapproved"


class TurnState:
    """What the capability shares with the session and the run: mode, permission requests."""

    __slots__ = ("_permission_done", "mode_id", "permission_pending")

    def __init__(self, mode_id: str | None) -> None:
        """Start with the turn's mode and no permission request."""
        self.mode_id = mode_id
        """The session's current mode (a mode switch during the turn updates it)."""
        self.permission_pending = False
        self._permission_done: anyio.Event | None = None

    async def wait_no_permission(self) -> None:
        """Wait until no permission request is pending (it ends by itself on cancellation)."""
        while self.permission_pending:
            self._permission_done = done = anyio.Event()
            await done.wait()

    def _permission_ended(self) -> None:
        self.permission_pending = False
        if self._permission_done is not None:
            self._permission_done.set()
            self._permission_done = None


@dataclass(kw_only=True)
class TurnCapability(AbstractCapability[Any]):
    """The session's hooks into one pydantic-ai run; see the module docstring."""

    turn: TurnContext = field(repr=False)
    state: TurnState = field(repr=False)
    translator: EventTranslator = field(repr=False)
    pipe: Pipe = field(repr=False)
    needs_approval: ApprovalHook | None = field(default=None, repr=False)
    tool_filter: ToolFilter | None = field(default=None, repr=False)
    permission_options: Sequence[PermissionOption] = ()

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Never part of an agent spec: it lives for one run."""
        return None

    def wrap_run_event_stream(
        self, ctx: RunContext[Any], *, stream: AsyncIterable[AgentStreamEvent]
    ) -> AsyncIterable[AgentStreamEvent]:
        """The stream itself, not wrapped (see the module docstring)."""
        return stream

    async def prepare_tools(
        self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        """Record the tools on offer and keep those the current mode allows."""
        self.translator.tool_defs.update((d.name, d) for d in tool_defs)
        if self.tool_filter is None:
            return tool_defs
        mode_id = self.state.mode_id
        return [d for d in tool_defs if self.tool_filter(d.name, mode_id)]

    async def prepare_output_tools(
        self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        """Record the output tools, whose calls are not shown as tool calls."""
        self.translator.output_tools.update(d.name for d in tool_defs)
        return tool_defs

    async def before_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
    ) -> dict[str, Any]:
        """Defer the call for approval when the hook asks for it (and it was not approved)."""
        if ctx.tool_call_approved or self.needs_approval is None:
            return args
        if self.needs_approval(call.tool_name, args, self.state.mode_id) is True:
            raise ApprovalRequired
        return args

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[Any], *, requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        """Ask the client about every call waiting for approval; leave external calls be."""
        if not requests.approvals:
            return None
        results = DeferredToolResults()
        for call in requests.approvals:
            results.approvals[call.tool_call_id] = await self._decide(ctx, call)
        if self.turn.cancelled:
            ctx.cancel()  # lands at the run's next await: no tool runs, no model request starts
        return results

    async def _decide(self, ctx: RunContext[Any], call: ToolCallPart) -> ToolApproved | ToolDenied:
        hook = self.needs_approval
        mode_id = self.state.mode_id
        if hook is not None and hook(call.tool_name, call.args_as_dict(), mode_id) is False:
            await self._approved(call)
            return ToolApproved()
        if self.turn.cancelled:
            return ToolDenied(TURN_CANCELLED_MESSAGE)
        for event in await self.translator.preview(call, ctx):
            await self.pipe.put(event)
        request = self.translator.permission_request(call)
        await self.pipe.wait_handled()  # the client must know the call before it is asked
        self.state.permission_pending = True
        try:
            decision = await self.turn.request_permission(request, self.permission_options)
        finally:
            self.state._permission_ended()
        if decision.allowed:
            await self._approved(call)
            return ToolApproved()
        if decision.outcome == "cancelled":
            return ToolDenied(TURN_CANCELLED_MESSAGE)
        return ToolDenied(DENIED_MESSAGE)

    async def _approved(self, call: ToolCallPart) -> None:
        for event in self.translator.approved(call):
            await self.pipe.put(event)

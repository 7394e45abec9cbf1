"""An agent that plays one coding step and says how its permission question was answered.

Each prompt turn:

1. a plan: ``Read config.toml`` (in progress), ``Update config.toml`` (pending);
2. the text ``Looking at config.toml.``;
3. a tool call ``edit-1`` (kind ``edit``, title ``Update config.toml``, pending);
4. ``session/request_permission`` for it, offering ``Allow once`` (allow_once),
   ``Always allow`` (allow_always) and ``Reject`` (reject_once);
5. allowed: the tool call completes with a diff of ``<session cwd>/config.toml``
   (``debug = false`` -> ``debug = true``), the plan is 2/2 done, and the text says
   ``Permission granted: config.toml updated.``; refused (or cancelled): the tool call fails
   and the text says ``Permission refused (OUTCOME): nothing changed.``, OUTCOME being the
   selected option id or ``cancelled``;
6. ``stopReason``: ``end_turn`` (``cancelled`` if the client cancelled the turn).

With ``--twice`` a second tool call (``run-1``, kind ``execute``, ``Run the tests``) asks
permission too, before the text.
"""

from __future__ import annotations

import sys

from accord.roles import Agent, run_agent_stdio
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    CancelNotification,
    DiffToolCallContent,
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    PlanEntry,
    PlanEntryStatus,
    PlanSessionUpdate,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    SelectedRequestPermissionOutcome,
    SessionNotification,
    SessionUpdate,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    ToolCallUpdateSessionUpdate,
    ToolKind,
)

OPTIONS = [
    PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]


class WorkflowAgent(Agent):
    def __init__(self, *, twice: bool) -> None:
        self._twice = twice
        self._cwd: dict[str, str] = {}
        self._cancelled: set[str] = set()

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        session_id = f"workflow-{len(self._cwd) + 1}"
        self._cwd[session_id] = request.cwd
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, notification: CancelNotification) -> None:
        self._cancelled.add(notification.session_id)

    async def _send(self, session_id: str, update: SessionUpdate) -> None:
        await self.client.session_update(SessionNotification(session_id=session_id, update=update))

    async def _plan(self, session_id: str, first: PlanEntryStatus, second: PlanEntryStatus) -> None:
        entries = [
            PlanEntry(content="Read config.toml", priority="high", status=first),
            PlanEntry(content="Update config.toml", priority="medium", status=second),
        ]
        await self._send(session_id, PlanSessionUpdate(entries=entries))

    async def _say(self, session_id: str, text: str) -> None:
        await self._send(
            session_id, AgentMessageChunkSessionUpdate(content=TextContentBlock(text=text))
        )

    async def _ask(self, session_id: str, call_id: str, kind: ToolKind, title: str) -> str:
        """Start a tool call and ask permission for it; the selected option id or cancelled."""
        await self._send(
            session_id,
            ToolCallSessionUpdate(tool_call_id=call_id, title=title, kind=kind, status="pending"),
        )
        response = await self.client.request_permission(
            RequestPermissionRequest(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id=call_id, kind=kind, title=title),
                options=OPTIONS,
            )
        )
        outcome = response.outcome
        if isinstance(outcome, SelectedRequestPermissionOutcome):
            return outcome.option_id
        return "cancelled"

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        session_id = request.session_id
        self._cancelled.discard(session_id)
        await self._plan(session_id, "in_progress", "pending")
        await self._say(session_id, "Looking at config.toml.")
        outcomes = [await self._ask(session_id, "edit-1", "edit", "Update config.toml")]
        if self._twice:
            outcomes.append(await self._ask(session_id, "run-1", "execute", "Run the tests"))
        refused = next((o for o in outcomes if o not in ("allow", "always")), None)
        if refused is None:
            diff = DiffToolCallContent(
                path=f"{self._cwd[session_id]}/config.toml",
                old_text="debug = false\n",
                new_text="debug = true\n",
            )
            await self._send(
                session_id,
                ToolCallUpdateSessionUpdate(
                    tool_call_id="edit-1", status="completed", content=[diff]
                ),
            )
            await self._plan(session_id, "completed", "completed")
            await self._say(session_id, "Permission granted: config.toml updated.")
        else:
            await self._send(
                session_id, ToolCallUpdateSessionUpdate(tool_call_id="edit-1", status="failed")
            )
            await self._say(session_id, f"Permission refused ({refused}): nothing changed.")
        cancelled = session_id in self._cancelled
        return PromptResponse(stop_reason="cancelled" if cancelled else "end_turn")


if __name__ == "__main__":
    run_agent_stdio(WorkflowAgent(twice="--twice" in sys.argv[1:]))

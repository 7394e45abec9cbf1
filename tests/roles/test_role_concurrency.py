"""Requests in both directions at once: a prompt turn that calls back into the client.

While ``session/prompt`` is in flight the agent streams updates, asks the client for
permission (a request in the other direction), and the client may call the agent again from
inside its handler. Nothing may deadlock, and the client must see every update the agent sent
before the prompt's answer.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _roles_support import MinimalAgent, MinimalClient, connect
from helpers.timeouts import TIMEOUT

from accord.roles import ClientSideConnection
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    CancelNotification,
    PermissionOption,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SessionNotification,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    ToolCallUpdateSessionUpdate,
)

SID = "session-1"


class AskingAgent(MinimalAgent):
    """Streams, asks permission mid-turn, reports the outcome, then ends the turn."""

    def __init__(self) -> None:
        self.outcomes: list[str] = []

    async def _say(self, session_id: str, text: str) -> None:
        await self.client.session_update(
            SessionNotification(
                session_id=session_id,
                update=AgentMessageChunkSessionUpdate(content=TextContentBlock(text=text)),
            )
        )

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        sid = request.session_id
        await self._say(sid, "Let me edit that.")
        await self.client.session_update(
            SessionNotification(
                session_id=sid,
                update=ToolCallSessionUpdate(tool_call_id="call-1", title="Edit", kind="edit"),
            )
        )
        answer = await self.client.request_permission(
            RequestPermissionRequest(
                session_id=sid,
                tool_call=ToolCallUpdate(tool_call_id="call-1"),
                options=[
                    PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
                    PermissionOption(option_id="no", name="No", kind="reject_once"),
                ],
            )
        )
        outcome = answer.outcome
        chosen = outcome.option_id if isinstance(outcome, SelectedRequestPermissionOutcome) else "-"
        self.outcomes.append(chosen)
        await self.client.session_update(
            SessionNotification(
                session_id=sid,
                update=ToolCallUpdateSessionUpdate(tool_call_id="call-1", status="completed"),
            )
        )
        await self._say(sid, f"Done ({chosen}).")
        return PromptResponse(stop_reason="end_turn")

    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        return {"busy": True}


def _kinds(client: MinimalClient) -> list[str]:
    return [n.update.session_update for n in client.updates]


@pytest.mark.anyio
async def test_permission_request_while_the_prompt_is_in_flight() -> None:
    agent, client = AskingAgent(), MinimalClient()
    async with connect(agent, client) as pair:
        with anyio.fail_after(TIMEOUT):
            response = await pair.client.prompt(
                PromptRequest(session_id=SID, prompt=[TextContentBlock(text="edit it")])
            )
        assert response.stop_reason == "end_turn"
        assert agent.outcomes == ["yes"]
        # Every update sent before the answer was handled before the answer was returned.
        assert _kinds(client) == [
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ]
        last = client.updates[-1].update
        assert isinstance(last, AgentMessageChunkSessionUpdate)
        assert isinstance(last.content, TextContentBlock)
        assert last.content.text == "Done (yes)."


@pytest.mark.anyio
async def test_client_calls_the_agent_from_inside_a_permission_handler() -> None:
    """A nested request (client -> agent) while the agent waits on the client."""

    class CallingBackClient(MinimalClient):
        def __init__(self) -> None:
            super().__init__()
            self.agent: ClientSideConnection | None = None

        async def request_permission(
            self, request: RequestPermissionRequest
        ) -> RequestPermissionResponse:
            assert self.agent is not None
            status = await self.agent.ext_request("_example.com/status")
            assert status == {"busy": True}
            return RequestPermissionResponse(
                outcome=SelectedRequestPermissionOutcome(option_id="no")
            )

    agent, client = AskingAgent(), CallingBackClient()
    async with connect(agent, client) as pair:
        client.agent = pair.client
        with anyio.fail_after(TIMEOUT):
            response = await pair.client.prompt(PromptRequest(session_id=SID, prompt=[]))
    assert response.stop_reason == "end_turn"
    assert agent.outcomes == ["no"]


@pytest.mark.anyio
async def test_cancel_reaches_the_agent_while_its_prompt_waits() -> None:
    """``session/cancel`` is handled while ``session/prompt`` runs, not after it."""

    class WaitingAgent(MinimalAgent):
        def __init__(self) -> None:
            self.started = anyio.Event()
            self.cancelled = anyio.Event()

        async def prompt(self, request: PromptRequest) -> PromptResponse:
            self.started.set()
            await self.cancelled.wait()
            return PromptResponse(stop_reason="cancelled")

        async def cancel(self, notification: CancelNotification) -> None:
            self.cancelled.set()

    agent = WaitingAgent()
    async with connect(agent, MinimalClient()) as pair:
        results: list[PromptResponse] = []

        async def run_prompt() -> None:
            results.append(await pair.client.prompt(PromptRequest(session_id=SID, prompt=[])))

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:
                group.start_soon(run_prompt)
                await agent.started.wait()
                await pair.client.cancel(CancelNotification(session_id=SID))
        assert [r.stop_reason for r in results] == ["cancelled"]


@pytest.mark.anyio
async def test_prompts_in_two_sessions_run_concurrently() -> None:
    """Two turns in flight at once, each asking permission, answered out of order."""

    class GatedClient(MinimalClient):
        def __init__(self) -> None:
            super().__init__()
            self.asked: dict[str, anyio.Event] = {"a": anyio.Event(), "b": anyio.Event()}
            self.release: dict[str, anyio.Event] = {"a": anyio.Event(), "b": anyio.Event()}

        async def request_permission(
            self, request: RequestPermissionRequest
        ) -> RequestPermissionResponse:
            self.asked[request.session_id].set()
            await self.release[request.session_id].wait()
            return RequestPermissionResponse(
                outcome=SelectedRequestPermissionOutcome(option_id=request.session_id)
            )

    agent, client = AskingAgent(), GatedClient()
    async with connect(agent, client) as pair:
        finished: list[str] = []
        done = {"a": anyio.Event(), "b": anyio.Event()}

        async def run_prompt(session_id: str) -> None:
            await pair.client.prompt(PromptRequest(session_id=session_id, prompt=[]))
            finished.append(session_id)
            done[session_id].set()

        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:
                group.start_soon(run_prompt, "a")
                group.start_soon(run_prompt, "b")
                await client.asked["a"].wait()
                await client.asked["b"].wait()
                client.release["b"].set()
                await done["b"].wait()
                client.release["a"].set()
        assert finished == ["b", "a"]
        assert sorted(agent.outcomes) == ["a", "b"]

"""An agent that answers every prompt with the ``cwd`` its session was created with.

The reply is one line, ``session cwd: <cwd from session/new>``.
"""

from __future__ import annotations

from accord.roles import Agent, run_agent_stdio
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    TextContentBlock,
)


class CwdAgent(Agent):
    def __init__(self) -> None:
        self._cwd: dict[str, str] = {}

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        session_id = f"cwd-{len(self._cwd) + 1}"
        self._cwd[session_id] = request.cwd
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        text = f"session cwd: {self._cwd[request.session_id]}"
        await self.client.session_update(
            SessionNotification(
                session_id=request.session_id,
                update=AgentMessageChunkSessionUpdate(content=TextContentBlock(text=text)),
            )
        )
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent_stdio(CwdAgent())

"""An agent that declines every prompt: one line of text, then ``stopReason: refusal``."""

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


class RefusalAgent(Agent):
    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="refusing")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.client.session_update(
            SessionNotification(
                session_id=request.session_id,
                update=AgentMessageChunkSessionUpdate(
                    content=TextContentBlock(text="I cannot help with that.")
                ),
            )
        )
        return PromptResponse(stop_reason="refusal")


if __name__ == "__main__":
    run_agent_stdio(RefusalAgent())

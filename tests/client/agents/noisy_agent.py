"""An agent that floods stderr (``NOISE_MB`` megabytes, default 16) while it works.

The flood is written with blocking writes, so the agent stalls unless the client drains its
stderr; then it answers every prompt with ``quiet now``.
"""

from __future__ import annotations

import os

from accord.roles import Agent, run_agent_stdio
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    TextContentBlock,
)

LINE = b"debug: " + b"x" * 1016 + b"\n"  # 1 KiB


def flood(megabytes: int) -> None:
    for _ in range(megabytes * 1024):
        os.write(2, LINE)


class NoisyAgent(Agent):
    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        flood(int(os.environ.get("NOISE_MB", "16")) // 2)
        return await super().initialize(request)

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="noisy")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        flood(int(os.environ.get("NOISE_MB", "16")) // 2)
        await self.client.session_update(
            SessionNotification(
                session_id=request.session_id,
                update=AgentMessageChunkSessionUpdate(content=TextContentBlock(text="quiet now")),
            )
        )
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent_stdio(NoisyAgent())

"""An agent that dies in the middle of a prompt turn: one chunk, a stderr message, exit 3.

With ``CRASH_AT=start`` it dies before answering ``initialize`` (exit 2).
"""

from __future__ import annotations

import os
import sys

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


class CrashingAgent(Agent):
    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="doomed")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.client.session_update(
            SessionNotification(
                session_id=request.session_id,
                update=AgentMessageChunkSessionUpdate(content=TextContentBlock(text="partial")),
            )
        )
        sys.stderr.write("Traceback (most recent call last):\nRuntimeError: model exploded\n")
        sys.stderr.flush()
        os._exit(3)


if __name__ == "__main__":
    if os.environ.get("CRASH_AT") == "start":
        sys.stderr.write("usage: crash_agent [--acp]: unknown flag\n")
        sys.stderr.flush()
        sys.exit(2)
    run_agent_stdio(CrashingAgent())

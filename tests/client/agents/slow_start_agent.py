"""An echo agent with a slow ``initialize``: it says so on stderr and takes ``SLOW_START``
seconds (default 2) to answer, like an agent that downloads or compiles first.

It stops waiting when the client goes away, so the process exits promptly when a client
gives up on it.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # said before the slow imports, for a client that gives up early
    sys.stderr.write("loading the model...\n")
    sys.stderr.flush()

import anyio

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

#: How often the slow start looks whether the client is still there.
POLL_SECONDS = 0.05


class SlowStartAgent(Agent):
    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        with anyio.move_on_after(float(os.environ.get("SLOW_START", "2"))):
            # Polled: the connection offers no event for "the peer hung up" while a handler
            # (this one) still runs.
            while not self.client.closed:  # noqa: ASYNC110
                await anyio.sleep(POLL_SECONDS)
        return await super().initialize(request)

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="slow")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        text = "".join(b.text for b in request.prompt if isinstance(b, TextContentBlock))
        await self.client.session_update(
            SessionNotification(
                session_id=request.session_id,
                update=AgentMessageChunkSessionUpdate(content=TextContentBlock(text=text)),
            )
        )
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent_stdio(SlowStartAgent())

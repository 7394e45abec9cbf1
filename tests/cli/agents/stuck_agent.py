"""An agent that never finishes: it hangs in ``initialize`` or in a prompt turn until killed.

``stuck_agent.py FIFO [--in initialize|prompt]``: on reaching the place where it hangs it
opens the named pipe FIFO, writes ``ready PID`` and keeps the pipe open for the rest of its
life, so the test knows when to interrupt the client and, from the end of file, that the
process is gone. In ``prompt`` (the default) it first streams the text ``working``, and it
ignores ``session/cancel``: only the client giving up ends the turn.
"""

from __future__ import annotations

import os
import sys

import anyio

from accord.roles import Agent, run_agent_stdio
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    CancelNotification,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    TextContentBlock,
)


def announce(fifo: str) -> None:
    """Say ``ready PID`` on the pipe, keeping it open until the process ends."""
    pipe = open(fifo, "w")  # noqa: SIM115 - deliberately open for the process's lifetime
    pipe.write(f"ready {os.getpid()}\n")
    pipe.flush()
    announce.pipe = pipe  # type: ignore[attr-defined]


class StuckAgent(Agent):
    def __init__(self, fifo: str, stuck_in: str) -> None:
        self._fifo = fifo
        self._stuck_in = stuck_in

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        if self._stuck_in == "initialize":
            announce(self._fifo)
            await anyio.sleep_forever()
        return await super().initialize(request)

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="stuck")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.client.session_update(
            SessionNotification(
                session_id=request.session_id,
                update=AgentMessageChunkSessionUpdate(content=TextContentBlock(text="working")),
            )
        )
        announce(self._fifo)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def cancel(self, notification: CancelNotification) -> None:
        """Ignored: this agent does not stop."""


if __name__ == "__main__":
    args = sys.argv[1:]
    where = args[args.index("--in") + 1] if "--in" in args else "prompt"
    run_agent_stdio(StuckAgent(args[0], where))

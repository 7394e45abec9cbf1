"""An agent that fails in the middle of a prompt turn, after one chunk of text (``partial``).

``--exit CODE`` (the default, code 3): it writes a traceback-like message to stderr and the
process exits with CODE, leaving the prompt unanswered. ``--error``: it stays alive and
answers the prompt with a JSON-RPC error (-32603, ``model exploded``). With ``CRASH_AT=start``
in its environment it dies before answering ``initialize`` (a usage message, exit 2), as an
agent started with the wrong flags does.

The one crashing agent of the suite: the command-line, client and TUI tests all run it.
"""

from __future__ import annotations

import os
import sys

from accord.errors import InternalError
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
    def __init__(self, args: list[str]) -> None:
        self._answer_error = "--error" in args
        self._code = int(args[args.index("--exit") + 1]) if "--exit" in args else 3

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="doomed")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.client.session_update(
            SessionNotification(
                session_id=request.session_id,
                update=AgentMessageChunkSessionUpdate(content=TextContentBlock(text="partial")),
            )
        )
        if self._answer_error:
            raise InternalError("model exploded")
        sys.stderr.write("Traceback (most recent call last):\nRuntimeError: model exploded\n")
        sys.stderr.flush()
        os._exit(self._code)


if __name__ == "__main__":
    if os.environ.get("CRASH_AT") == "start":
        sys.stderr.write("usage: crash_agent [--acp]: unknown flag\n")
        sys.stderr.flush()
        sys.exit(2)
    run_agent_stdio(CrashingAgent(sys.argv[1:]))

"""An agent that reports what a turn cost: ``usage_update`` (context used of the window) and
token counts in ``PromptResponse.usage`` (unstable ACP). With ``--no-usage`` it reports
neither. The reply is ``counted.``.
"""

from __future__ import annotations

import sys

from accord.roles import Agent, run_agent_stdio
from accord.schema import (
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    Usage,
    UsageUpdateSessionUpdate,
)


class UsageAgent(Agent):
    def __init__(self, *, report: bool) -> None:
        self._report = report

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="usage-1")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.client.send_chunk(request.session_id, "counted.")
        if not self._report:
            return PromptResponse(stop_reason="end_turn")
        await self.client.session_update(
            SessionNotification(
                session_id=request.session_id,
                update=UsageUpdateSessionUpdate(used=12_345, size=200_000),
            )
        )
        usage = Usage(total_tokens=1_534, input_tokens=1_200, output_tokens=334, thought_tokens=50)
        return PromptResponse(stop_reason="end_turn", usage=usage)


if __name__ == "__main__":
    run_agent_stdio(UsageAgent(report="--no-usage" not in sys.argv))

"""A minimal ACP agent over stdio: it streams each prompt's text back, word by word.

Run it under any ACP client, e.g. ``python examples/client.py python examples/echo_agent.py``.
It uses only accord's public API: the typed ``Agent`` base, the wire types, and
``run_agent_stdio``. A ``session/cancel`` stops the echo promptly and the prompt answers
``stopReason: "cancelled"``.
"""

from __future__ import annotations

import os
import uuid

import anyio

from accord.errors import ResourceNotFound
from accord.roles import Agent, run_agent_stdio
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    CancelNotification,
    Implementation,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    TextContentBlock,
)

#: Seconds between echoed words, so that cancellation has something to interrupt
#: (``ECHO_DELAY`` in the environment overrides it).
WORD_DELAY = float(os.environ.get("ECHO_DELAY", "0"))


class EchoAgent(Agent):
    """Echoes every prompt back as a stream of ``agent_message_chunk`` updates."""

    agent_info = Implementation(name="echo-agent", title="Echo agent", version="1.0")

    def __init__(self) -> None:
        self._sessions: dict[str, anyio.CancelScope | None] = {}

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        session_id = str(uuid.uuid4())
        self._sessions[session_id] = None
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        if request.session_id not in self._sessions:
            raise ResourceNotFound(f"unknown session {request.session_id}")
        text = " ".join(b.text for b in request.prompt if isinstance(b, TextContentBlock))
        message_id = str(uuid.uuid4())
        with anyio.CancelScope() as scope:
            self._sessions[request.session_id] = scope
            for index, word in enumerate(text.split(" ")):
                chunk = word if index == 0 else " " + word
                # The typed call. ``self.client.send_chunk(request.session_id, chunk,
                # message_id=message_id)`` sends the same message without building the models.
                await self.client.session_update(
                    SessionNotification(
                        session_id=request.session_id,
                        update=AgentMessageChunkSessionUpdate(
                            content=TextContentBlock(text=chunk), message_id=message_id
                        ),
                    )
                )
                if WORD_DELAY:
                    await anyio.sleep(WORD_DELAY)
        self._sessions[request.session_id] = None
        return PromptResponse(stop_reason="cancelled" if scope.cancelled_caught else "end_turn")

    async def cancel(self, notification: CancelNotification) -> None:
        scope = self._sessions.get(notification.session_id)
        if scope is not None:
            scope.cancel()


if __name__ == "__main__":
    run_agent_stdio(EchoAgent())

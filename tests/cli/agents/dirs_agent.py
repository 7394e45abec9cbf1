"""An agent that uses the client's file system where the prompt tells it to.

It accepts ``additionalDirectories``. The prompt is a JSON object of paths: ``read`` (read
and quoted back), ``write`` (written with ``written by the agent``), and ``outside_read`` /
``outside_write`` (tried the same way; each is expected to be refused). The reply has one
line per attempt: ``<op> <path>: ok <text>`` or ``<op> <path>: refused <error>``, and first
the directories ``session/new`` carried.
"""

from __future__ import annotations

import json

from accord.errors import RequestError
from accord.roles import Agent, run_agent_stdio
from accord.schema import (
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    ReadTextFileRequest,
    TextContentBlock,
    WriteTextFileRequest,
)


class DirsAgent(Agent):
    additional_directories = True

    def __init__(self) -> None:
        self._dirs: dict[str, list[str]] = {}

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        session_id = f"dirs-{len(self._dirs) + 1}"
        self._dirs[session_id] = [request.cwd, *(request.additional_directories or [])]
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        block = request.prompt[0]
        assert isinstance(block, TextContentBlock)
        paths: dict[str, str] = json.loads(block.text)
        lines = [f"roots: {' '.join(self._dirs[request.session_id])}"]
        for op, path in paths.items():
            try:
                if op.endswith("read"):
                    read = await self.client.read_text_file(
                        ReadTextFileRequest(session_id=request.session_id, path=path)
                    )
                    lines.append(f"{op} {path}: ok {read.content.strip()}")
                else:
                    await self.client.write_text_file(
                        WriteTextFileRequest(
                            session_id=request.session_id,
                            path=path,
                            content="written by the agent\n",
                        )
                    )
                    lines.append(f"{op} {path}: ok")
            except RequestError as error:
                lines.append(f"{op} {path}: refused {error.message}")
        await self.client.send_chunk(request.session_id, "\n".join(lines) + "\n")
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent_stdio(DirsAgent())

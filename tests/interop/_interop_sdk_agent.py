"""An ACP agent built on the official Python SDK (``agent-client-protocol``), run over stdio.

The interop tests spawn it and drive it with accord's ``ClientSideConnection``. It is written
the way the SDK's own examples are (subclass ``acp.Agent``, keep the connection from
``on_connect``, serve with ``acp.run_agent``) and uses only the SDK's public API.

Each prompt turn:

1. streams ``agent_message_chunk``s: ``Hello``, `` from``, `` the SDK``;
2. starts a tool call ``call-1`` (kind ``read``, status ``pending``, one location);
3. asks the client for permission to run it (``allow`` / ``reject`` options);
4. finishes the tool call (``completed`` with content if allowed, else ``failed``);
5. sends a ``agent_thought_chunk`` and a last message chunk naming the outcome;
6. answers ``stopReason: end_turn``.

It also answers the extension request ``_sdk/echo`` with its params.
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallLocation,
    ToolCallUpdate,
)

#: What the agent streams before the tool call.
GREETING = ("Hello", " from", " the SDK")
TOOL_CALL_ID = "call-1"
READ_PATH = "/tmp/sdk-agent/notes.txt"


class SdkAgent(acp.Agent):
    """A scripted agent on the official SDK."""

    def __init__(self) -> None:
        self._conn: acp.Client | None = None
        self._sessions = 0

    def on_connect(self, conn: acp.Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="sdk-agent", title="SDK agent", version="0.12.1"),
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Any = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        self._sessions += 1
        return NewSessionResponse(session_id=f"sdk-session-{self._sessions}")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        conn = self._conn
        assert conn is not None
        for text in GREETING:
            await conn.session_update(session_id, acp.update_agent_message_text(text))
        await conn.session_update(
            session_id,
            acp.start_tool_call(
                TOOL_CALL_ID,
                "Read notes.txt",
                kind="read",
                status="pending",
                locations=[ToolCallLocation(path=READ_PATH, line=3)],
                raw_input={"path": READ_PATH},
            ),
        )
        permission = await conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id=TOOL_CALL_ID, title="Read notes.txt"),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = permission.outcome
        allowed = isinstance(outcome, AllowedOutcome) and outcome.option_id == "allow"
        if allowed:
            update = acp.update_tool_call(
                TOOL_CALL_ID,
                status="completed",
                content=[acp.tool_content(acp.text_block("file contents"))],
                raw_output={"bytes": 13},
            )
        else:
            update = acp.update_tool_call(TOOL_CALL_ID, status="failed")
        await conn.session_update(session_id, update)
        await conn.session_update(session_id, acp.update_agent_thought_text("thinking done"))
        verdict = "allowed" if allowed else "refused"
        await conn.session_update(session_id, acp.update_agent_message_text(f" ({verdict})"))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "sdk/echo":
            return {"echoed": params}
        raise acp.RequestError.method_not_found(f"_{method}")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(SdkAgent()))

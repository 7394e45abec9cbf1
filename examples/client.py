"""Spawn any ACP agent, send it one prompt, and print what it streams back.

Usage: ``python examples/client.py AGENT_COMMAND [ARGS...] [--prompt TEXT]``, e.g.
``python examples/client.py python examples/echo_agent.py --prompt "hello there"``.
It uses only accord's public API: ``spawn_agent``, the typed ``Client`` base and
``ClientSideConnection``.
"""

from __future__ import annotations

import os
import sys

import anyio

from accord.roles import Client, ClientSideConnection
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    CancelledRequestPermissionOutcome,
    NewSessionRequest,
    PromptRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdateSessionUpdate,
)
from accord.transports import spawn_agent


class PrintingClient(Client):
    """Prints each update as a readable line; refuses every permission request."""

    async def session_update(self, notification: SessionNotification) -> None:
        update = notification.update
        if isinstance(update, AgentMessageChunkSessionUpdate | AgentThoughtChunkSessionUpdate):
            content = update.content
            text = content.text if isinstance(content, TextContentBlock) else f"[{content.type}]"
            prefix = "" if isinstance(update, AgentMessageChunkSessionUpdate) else "(thinking) "
            print(prefix + text, end="", flush=True)
        elif isinstance(update, ToolCallSessionUpdate):
            print(f"\n[tool] {update.title} ({update.status or 'pending'})", flush=True)
        elif isinstance(update, ToolCallUpdateSessionUpdate):
            print(f"\n[tool {update.tool_call_id}] {update.status or 'updated'}", flush=True)
        else:
            print(f"\n[{update.session_update}]", flush=True)

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        print(f"\n[permission refused] {request.tool_call.title or request.tool_call.tool_call_id}")
        return RequestPermissionResponse(outcome=CancelledRequestPermissionOutcome())


async def main(command: list[str], prompt: str) -> None:
    async with (
        spawn_agent(command) as transport,
        ClientSideConnection(PrintingClient(), transport) as agent,
    ):
        await agent.initialize()
        session = await agent.new_session(NewSessionRequest(cwd=os.getcwd(), mcp_servers=[]))
        response = await agent.prompt(
            PromptRequest(session_id=session.session_id, prompt=[TextContentBlock(text=prompt)])
        )
        print(f"\n[stop reason] {response.stop_reason}")


if __name__ == "__main__":
    args = sys.argv[1:]
    text = "Hello from accord"
    if "--prompt" in args:
        at = args.index("--prompt")
        text = args[at + 1]
        args = args[:at] + args[at + 2 :]
    if not args:
        sys.exit("usage: client.py AGENT_COMMAND [ARGS...] [--prompt TEXT]")
    anyio.run(main, args, text)

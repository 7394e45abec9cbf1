"""Run in a subprocess by test_tracing.py: a traced prompt turn without OpenTelemetry loaded.

A prompt carrying ``_meta.traceparent`` runs a tool call that asks permission; the script
checks that the permission request carried the trace context on, and that no
``opentelemetry`` module was imported along the way. Prints ``ok``. Run as
``python _agent_untraced_turn.py SECONDS``: the bound on the turn (the suite's ``TIMEOUT``; a child
process cannot import ``helpers``).
"""

from __future__ import annotations

import sys

import anyio

from accord.agent import AgentRuntime
from accord.engines import EngineCapabilities
from accord.roles import Client, ClientSideConnection
from accord.schema import (
    InitializeRequest,
    NewSessionRequest,
    PromptRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SessionNotification,
    TextContentBlock,
)
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine, UseTool
from accord.transports import memory_transport_pair

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class _Client(Client):
    def __init__(self) -> None:
        self.metas: list[object] = []

    async def session_update(self, notification: SessionNotification) -> None:
        return None

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        self.metas.append(request.meta)
        return RequestPermissionResponse(
            outcome=SelectedRequestPermissionOutcome(option_id="allow_once")
        )


async def main(bound: float) -> None:
    engine = ScriptedEngine(
        [[UseTool(title="Edit a.py", kind="edit", ask=True)]], capabilities=EngineCapabilities()
    )
    runtime = AgentRuntime(engine, store=MemorySessionStore())
    client = _Client()
    agent_end, client_end = memory_transport_pair()
    with anyio.fail_after(bound):
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.serve, agent_end)
            async with ClientSideConnection(client, client_end) as conn:
                await conn.initialize(InitializeRequest(protocol_version=1))
                new = await conn.new_session(NewSessionRequest(cwd="/tmp", mcp_servers=[]))
                await conn.prompt(
                    PromptRequest(
                        session_id=new.session_id,
                        prompt=[TextContentBlock(text="go")],
                        meta={"traceparent": TRACEPARENT},
                    )
                )
            tg.cancel_scope.cancel()
    assert client.metas == [{"traceparent": TRACEPARENT}], client.metas
    loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
    assert not loaded, loaded
    print("ok")


if __name__ == "__main__":
    anyio.run(main, float(sys.argv[1]))

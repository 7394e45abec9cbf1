"""The examples run as users run them: real processes talking over pipes.

``examples/client.py`` spawns ``examples/echo_agent.py`` (and, for interop, an agent built on
the official SDK) and prints what streams back; the echo agent's cancellation is driven by
accord's own client, on asyncio and trio.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.errors import ResourceNotFound
from accord.roles import Client, ClientSideConnection
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    CancelNotification,
    NewSessionRequest,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    TextContentBlock,
)
from accord.transports import spawn_agent

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "examples" / "client.py"
ECHO_AGENT = ROOT / "examples" / "echo_agent.py"
SDK_AGENT = ROOT / "tests" / "interop" / "_interop_sdk_agent.py"


def run_client(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CLIENT), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=ROOT,
        check=False,
    )


def test_client_example_prints_the_echo() -> None:
    done = run_client(sys.executable, str(ECHO_AGENT), "--prompt", "hello there, echo agent")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello there, echo agent\n[stop reason] end_turn\n"


def test_client_example_default_prompt() -> None:
    done = run_client(sys.executable, str(ECHO_AGENT))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from accord\n[stop reason] end_turn\n"


def test_client_example_without_an_agent_prints_usage() -> None:
    done = run_client("--prompt", "nobody to ask")
    assert done.returncode != 0
    assert "usage: client.py AGENT_COMMAND" in done.stderr
    assert done.stdout == ""


@pytest.mark.interop
def test_client_example_drives_an_sdk_agent() -> None:
    """Any ACP agent: one built on the official SDK streams, calls a tool, asks permission."""
    done = run_client(sys.executable, str(SDK_AGENT), "--prompt", "read my notes")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "Hello from the SDK\n"
        "[tool] Read notes.txt (pending)\n"
        "\n"
        "[permission refused] Read notes.txt\n"
        "\n"
        "[tool call-1] failed\n"
        "(thinking) thinking done (refused)\n"
        "[stop reason] end_turn\n"
    )


class ChunkClient(Client):
    """Collects message chunks and signals the first one."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.first_chunk = anyio.Event()

    async def session_update(self, notification: SessionNotification) -> None:
        update = notification.update
        if isinstance(update, AgentMessageChunkSessionUpdate):
            assert isinstance(update.content, TextContentBlock)
            self.texts.append(update.content.text)
            self.first_chunk.set()

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        raise AssertionError("the echo agent never asks for permission")


@pytest.mark.anyio
async def test_echo_agent_honours_session_cancel() -> None:
    client = ChunkClient()
    results: list[PromptResponse] = []
    with anyio.fail_after(TIMEOUT):
        async with (
            # 60 s between words: only the cancellation can end this turn in time.
            spawn_agent([sys.executable, str(ECHO_AGENT)], env={"ECHO_DELAY": "60"}) as transport,
            ClientSideConnection(client, transport) as agent,
        ):
            await agent.initialize()
            session = await agent.new_session(NewSessionRequest(cwd=str(ROOT), mcp_servers=[]))

            async def run_prompt() -> None:
                prompt = [TextContentBlock(text="one two three")]
                request = PromptRequest(session_id=session.session_id, prompt=prompt)
                results.append(await agent.prompt(request))

            async with anyio.create_task_group() as group:
                group.start_soon(run_prompt)
                await client.first_chunk.wait()
                await agent.cancel(CancelNotification(session_id=session.session_id))

            # The agent still serves the connection; an unknown session is -32002.
            with pytest.raises(ResourceNotFound):
                await agent.prompt(PromptRequest(session_id="no-such-session", prompt=[]))

    assert [r.stop_reason for r in results] == ["cancelled"]
    assert client.texts == ["one"]

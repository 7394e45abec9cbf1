"""The runtime around the session methods: serving, shutting down, the client's services."""

from __future__ import annotations

import anyio
import pytest
from _agent_support import CWD, RecordingClient, serve
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.errors import ConnectionClosed
from accord.roles import ClientSideConnection
from accord.schema import (
    CreateTerminalRequest,
    CreateTerminalResponse,
    KillTerminalRequest,
    KillTerminalResponse,
    NewSessionRequest,
    PromptRequest,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    TerminalOutputRequest,
    TerminalOutputResponse,
    TextContentBlock,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, WaitForCancel
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio


class HostingClient(RecordingClient):
    """A client that hosts files (in a dict) and one fake terminal."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, str] = {"/work/project/a.py": "one\ntwo\nthree\n"}
        self.calls: list[str] = []

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        lines = self.files[request.path].splitlines(keepends=True)
        start = (request.line or 1) - 1
        end = None if request.limit is None else start + request.limit
        return ReadTextFileResponse(content="".join(lines[start:end]))

    async def write_text_file(self, request: WriteTextFileRequest) -> WriteTextFileResponse:
        self.files[request.path] = request.content
        return WriteTextFileResponse()

    async def create_terminal(self, request: CreateTerminalRequest) -> CreateTerminalResponse:
        self.calls.append(f"create {request.command} {' '.join(request.args)}")
        return CreateTerminalResponse(terminal_id="term-1")

    async def terminal_output(self, request: TerminalOutputRequest) -> TerminalOutputResponse:
        self.calls.append(f"output {request.terminal_id}")
        return TerminalOutputResponse(output="ok\n", truncated=False)

    async def wait_for_terminal_exit(
        self, request: WaitForTerminalExitRequest
    ) -> WaitForTerminalExitResponse:
        self.calls.append(f"wait {request.terminal_id}")
        return WaitForTerminalExitResponse(exit_code=0)

    async def kill_terminal(self, request: KillTerminalRequest) -> KillTerminalResponse:
        self.calls.append(f"kill {request.terminal_id}")
        return KillTerminalResponse()

    async def release_terminal(self, request: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        self.calls.append(f"release {request.terminal_id}")
        return ReleaseTerminalResponse()


async def test_engines_reach_the_clients_files_and_terminals() -> None:
    client = HostingClient()
    engine = ScriptedEngine()
    async with serve(engine, client=client) as h:
        session_id = await h.new_session()
        context = engine.session(session_id).context
        assert context.file_reader is not None and context.file_writer is not None
        assert context.terminals is not None
        with anyio.fail_after(TIMEOUT):
            assert await context.file_reader.read_text_file("/work/project/a.py") == (
                "one\ntwo\nthree\n"
            )
            assert await context.file_reader.read_text_file(
                "/work/project/a.py", line=2, limit=1
            ) == ("two\n")
            await context.file_writer.write_text_file("/work/project/b.py", "new\n")
            terminal = await context.terminals.create_terminal("make", args=["test"])
            assert terminal.terminal_id == "term-1"
            assert (await terminal.output()).output == "ok\n"
            assert (await terminal.wait_for_exit()).exit_code == 0
            await terminal.kill()
            await terminal.release()
        assert client.files["/work/project/b.py"] == "new\n"
        assert client.calls == [
            "create make test",
            "output term-1",
            "wait term-1",
            "kill term-1",
            "release term-1",
        ]


async def test_clients_without_services_give_engines_none() -> None:
    engine = ScriptedEngine()
    async with serve(engine) as h:
        session_id = await h.new_session()
        context = engine.session(session_id).context
        assert context.file_reader is None
        assert context.file_writer is None
        assert context.terminals is None


async def test_serve_closes_every_session_when_the_client_leaves() -> None:
    store = MemorySessionStore()
    engine = ScriptedEngine([[Say("working"), WaitForCancel()]])
    runtime = AgentRuntime(engine, store=store)
    client = RecordingClient()
    agent_end, client_end = memory_transport_pair()
    ids: list[str] = []
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.serve, agent_end)
            async with ClientSideConnection(client, client_end) as conn:
                await conn.initialize()
                for _ in range(2):
                    opened = await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
                    ids.append(opened.session_id)

                async def prompt() -> None:
                    with pytest.raises(ConnectionClosed):  # the connection goes away under it
                        await conn.prompt(
                            PromptRequest(session_id=ids[1], prompt=[TextContentBlock(text="x")])
                        )

                tg.start_soon(prompt)
                await client.wait_until(lambda: "agent_message_chunk" in client.kinds())
        # serve() returned: the turn was cancelled and both sessions closed
    assert runtime.statistics().live_sessions == 0
    idle, busy = ids
    assert engine.session(idle).closed and engine.session(busy).closed
    assert engine.session(busy).cancelled_turns == 1
    assert [e.kind for e in await store.read_events(busy)][-1] == "turn_completed"

"""The host services wired into connect(): files and terminals, confined to each session's
directories; terminals killed when their session or the connection closes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from _client_agents import FullAgent, ScriptedAgent
from helpers.timeouts import TIMEOUT

from accord.client import FileSystemHost, TerminalHost, connect
from accord.errors import InvalidParams, ResourceNotFound
from accord.schema import (
    CreateTerminalRequest,
    ReadTextFileRequest,
    ReleaseTerminalRequest,
    TerminalOutputRequest,
    WaitForTerminalExitRequest,
    WriteTextFileRequest,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory.resolve()


async def test_files_inside_the_session_roots(project: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "notes.txt").write_text("one\ntwo\n")
    (tmp_path / "secret.txt").write_text("secret")
    agent = FullAgent()
    async with connect(agent, fs=True) as conn:
        session = await conn.new_session(project, additional_directories=[extra])
        sid = session.session_id
        client = agent.client
        with anyio.fail_after(TIMEOUT):
            await client.write_text_file(
                WriteTextFileRequest(session_id=sid, path=str(project / "a.txt"), content="hi")
            )
            read = await client.read_text_file(
                ReadTextFileRequest(session_id=sid, path=str(project / "a.txt"))
            )
            assert read.content == "hi"
            line = await client.read_text_file(
                ReadTextFileRequest(session_id=sid, path=str(extra / "notes.txt"), line=2)
            )
            assert line.content == "two\n"
            with pytest.raises(InvalidParams, match="outside the session's directories"):
                await client.read_text_file(
                    ReadTextFileRequest(session_id=sid, path=str(tmp_path / "secret.txt"))
                )
            with pytest.raises(InvalidParams, match="outside"):
                await client.write_text_file(
                    WriteTextFileRequest(
                        session_id=sid, path=str(tmp_path / "new.txt"), content="x"
                    )
                )
            with pytest.raises(ResourceNotFound, match="no session"):
                await client.read_text_file(
                    ReadTextFileRequest(session_id="unknown", path=str(project / "a.txt"))
                )
    assert (project / "a.txt").read_text() == "hi"
    assert not (tmp_path / "new.txt").exists()


async def test_each_session_has_its_own_roots(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "b.txt").write_text("b")
    agent = ScriptedAgent()
    async with connect(agent, fs=True) as conn:
        one = await conn.new_session(first)
        two = await conn.new_session(second)
        request = ReadTextFileRequest(session_id=two.session_id, path=str(second / "b.txt"))
        assert (await agent.client.read_text_file(request)).content == "b"
        request = ReadTextFileRequest(session_id=one.session_id, path=str(second / "b.txt"))
        with pytest.raises(InvalidParams):
            await agent.client.read_text_file(request)


async def test_a_given_file_system_host_is_used(project: Path) -> None:
    (project / "a.py").write_text("on disk")
    host = FileSystemHost(open_buffer=lambda path: "unsaved" if path.name == "a.py" else None)
    agent = ScriptedAgent()
    async with connect(agent, fs=host) as conn:
        session = await conn.new_session(project)
        request = ReadTextFileRequest(session_id=session.session_id, path=str(project / "a.py"))
        assert (await agent.client.read_text_file(request)).content == "unsaved"


# --- terminals -------------------------------------------------------------------------------


async def read_fifo(path: Path) -> str:
    """Wait for a writer to open, write and close the FIFO (no polling)."""
    with anyio.fail_after(TIMEOUT):
        return await anyio.to_thread.run_sync(path.read_text, abandon_on_cancel=True)


def is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def start_sleeper(agent: ScriptedAgent, session_id: str, fifo: Path) -> tuple[str, int]:
    """A terminal whose shell reports its pid through ``fifo`` and then sleeps."""
    created = await agent.client.create_terminal(
        CreateTerminalRequest(session_id=session_id, command=f"echo $$ > {fifo}; exec sleep 60")
    )
    return created.terminal_id, int(await read_fifo(fifo))


@pytest.mark.subprocess
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
async def test_terminals_run_in_the_session_cwd(project: Path) -> None:
    agent = ScriptedAgent()
    async with connect(agent, terminals=True) as conn:
        session = await conn.new_session(project)
        sid = session.session_id
        client = agent.client
        with anyio.fail_after(TIMEOUT):
            created = await client.create_terminal(
                CreateTerminalRequest(session_id=sid, command="pwd")
            )
            tid = created.terminal_id
            exited = await client.wait_for_terminal_exit(
                WaitForTerminalExitRequest(session_id=sid, terminal_id=tid)
            )
            output = await client.terminal_output(
                TerminalOutputRequest(session_id=sid, terminal_id=tid)
            )
            await client.release_terminal(ReleaseTerminalRequest(session_id=sid, terminal_id=tid))
            with pytest.raises(InvalidParams, match="outside"):
                await client.create_terminal(
                    CreateTerminalRequest(session_id=sid, command="pwd", cwd="/")
                )
            with pytest.raises(ResourceNotFound):
                await client.create_terminal(
                    CreateTerminalRequest(session_id="nope", command="pwd")
                )
            with pytest.raises(ResourceNotFound):
                await client.terminal_output(
                    TerminalOutputRequest(session_id="nope", terminal_id=tid)
                )
    assert exited.exit_code == 0
    assert output.output == f"{project}\n"


@pytest.mark.subprocess
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
async def test_closing_the_session_kills_its_terminals(project: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    agent = FullAgent()
    async with connect(agent, terminals=True) as conn:
        session = await conn.new_session(project)
        tid, pid = await start_sleeper(agent, session.session_id, fifo)
        assert not is_gone(pid)
        with anyio.fail_after(TIMEOUT):
            await session.close()
        assert is_gone(pid)
        with pytest.raises(ResourceNotFound):
            await agent.client.terminal_output(
                TerminalOutputRequest(session_id=session.session_id, terminal_id=tid)
            )
    assert agent.closed == [session.session_id]


@pytest.mark.subprocess
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
async def test_closing_the_connection_kills_terminals(project: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    agent = ScriptedAgent()
    with anyio.fail_after(TIMEOUT):
        async with connect(agent, terminals=True) as conn:
            session = await conn.new_session(project)
            _, pid = await start_sleeper(agent, session.session_id, fifo)
    assert is_gone(pid)


@pytest.mark.subprocess
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
async def test_a_host_you_own_outlives_the_connection_but_not_its_sessions(
    project: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    async with TerminalHost() as host:
        agent = ScriptedAgent()
        with anyio.fail_after(TIMEOUT):
            async with connect(agent, terminals=host) as conn:
                session = await conn.new_session(project)
                _, pid = await start_sleeper(agent, session.session_id, fifo)
        assert is_gone(pid)
        assert host.statistics().terminals == 0

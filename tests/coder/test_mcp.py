"""MCP servers named in session/new: connected, their tools offered (per mode), called."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from _coder_support import Turn, engine_on, opened, root, run_turn, tool_names
from helpers.timeouts import TIMEOUT

from accord.coder._mcp import (
    CONNECT_TIMEOUT_ENV,
    CONNECT_TIMEOUT_SECONDS,
    McpServers,
    connect_timeout,
    tool_prefix,
)
from accord.engines import ToolCallEnded
from accord.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

SERVER = str(Path(__file__).with_name("_coder_mcp_server.py"))


def stdio_server(name: str = "demo tools") -> McpServerStdio:
    return McpServerStdio(
        name=name, command=sys.executable, args=[SERVER], env=[EnvVariable(name="X", value="1")]
    )


@pytest.fixture
def http_server() -> Iterator[str]:
    """The demo server over streamable HTTP; yields its URL."""
    process = subprocess.Popen(
        [sys.executable, SERVER, "http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(TIMEOUT)


def shout_call(name: str) -> list[ScriptedReply]:
    return [
        ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments={"text": "hi"})]),
        ScriptedReply(text=["done"]),
    ]


async def test_stdio_server_tools_are_offered_and_ask_permission_in_code_mode(
    project: Path,
) -> None:
    with FakeOpenAIServer(shout_call("demo_tools_shout")) as server:
        engine = engine_on(server)
        async with opened(engine, str(project), mcp_servers=(stdio_server(),)) as session:
            turn = Turn(answers=["allow_once"])
            outputs = await run_turn(session, "shout", turn)
        assert "demo_tools_shout" in tool_names(server.requests[0])
        assert server.requests[1].messages[-1]["content"] == "HI"
    assert len(turn.permissions.requests) == 1
    (ended,) = root(outputs, ToolCallEnded)
    assert ended.status == "completed"


async def test_external_tools_are_hidden_in_ask_mode(project: Path) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["ok"])]) as server:
        async with opened(
            engine_on(server), str(project), mode_id="ask", mcp_servers=(stdio_server(),)
        ) as session:
            await run_turn(session, "hi", Turn(mode_id="ask"))
        assert not any(name.startswith("demo") for name in tool_names(server.requests[0]))


async def test_http_servers_are_connected(project: Path, http_server: str) -> None:
    remote = HttpMcpServer(
        name="remote", url=http_server, headers=[HttpHeader(name="X-Token", value="t")]
    )
    with FakeOpenAIServer(shout_call("remote_shout")) as server:
        async with opened(
            engine_on(server), str(project), mode_id="auto", mcp_servers=(remote,)
        ) as session:
            await run_turn(session, "shout", Turn(mode_id="auto"))
        assert server.requests[1].messages[-1]["content"] == "HI"


async def test_servers_that_fail_are_skipped(project: Path) -> None:
    broken = McpServerStdio(name="broken", command="/nonexistent/mcp", args=[], env=[])
    sse = SseMcpServer(name="old", url="http://127.0.0.1:9/sse", headers=[])
    servers = McpServers([broken, sse, stdio_server("ok")], str(project))
    with anyio.fail_after(TIMEOUT):
        await servers.open()
    try:
        assert set(servers.failed) == {"broken", "old"}
        assert len(servers.toolsets) == 1
    finally:
        await servers.aclose()


def test_tool_prefixes_are_safe_and_unique() -> None:
    taken: set[str] = set()
    assert tool_prefix("my server!", taken) == "my_server"
    assert tool_prefix("my server?", taken) == "my_server_2"
    assert tool_prefix("***", taken) == "mcp"


def test_the_connect_timeout_comes_from_the_environment() -> None:
    assert connect_timeout({}) == CONNECT_TIMEOUT_SECONDS == 30.0
    assert connect_timeout({CONNECT_TIMEOUT_ENV: " 90 "}) == 90.0
    for bad in ("0", "-1", "soon", "inf", "nan"):
        with pytest.raises(ValueError, match=CONNECT_TIMEOUT_ENV):
            connect_timeout({CONNECT_TIMEOUT_ENV: bad})


async def test_a_server_slower_to_start_than_pydantic_ais_default_is_connected(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound reaches pydantic-ai's ``init_timeout`` (its own default is 5 s: a server
    started on a machine under load missed it, though accord's bound was 30 s)."""
    monkeypatch.setenv(CONNECT_TIMEOUT_ENV, str(TIMEOUT))
    slow = McpServerStdio(
        name="slow",
        command=sys.executable,
        args=[
            "-c",
            f"import runpy, sys, time; time.sleep(6); sys.argv = [{SERVER!r}]; "
            f"runpy.run_path({SERVER!r}, run_name='__main__')",
        ],
        env=[],
    )
    servers = McpServers([slow], str(project))
    assert servers.connect_timeout == TIMEOUT
    with anyio.fail_after(TIMEOUT + 10):
        await servers.open()
    try:
        assert servers.failed == {}
        assert len(servers.toolsets) == 1
    finally:
        await servers.aclose()

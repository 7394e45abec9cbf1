"""MCP over ACP (issue 23): what a tool call costs through the ACP connection.

One MCP server of the ``mcp`` package (``MCPServer`` with an ``echo`` tool) and one FastMCP
client (what pydantic-ai's ``MCPToolset`` uses, so what the coder uses) making sequential
``tools/call`` requests, three ways:

* ``direct``: the client on FastMCP's in-memory transport to the server (no ACP at all: the
  cost of the MCP call itself);
* ``acp``: the way of this issue: the agent runtime (a scripted engine declaring ``mcp_acp``)
  and accord's client (``connect(mcp_servers=[server])``) over the in-memory ACP pair; the
  FastMCP client on the coder's transport (``accord.coder._acp_mcp``), each call an
  ``mcp/message`` request answered by the client's host (``accord.client._mcp_host``);
* ``stdio``: the server in its own process on stdio (what a client must start today to offer
  its tools to an agent without MCP over ACP).

Measured per round and way: the wall time of each call (p50, p90) and, for the two in-process
ways, this process's CPU seconds per call (agent, client and server all run in it; the stdio
server's CPU is in its own process and is not counted). Rounds interleave the ways; reported:
the median over the rounds and the spread (min-max). ``--hog`` runs two busy processes beside
it (load >= 2 on this machine's 2 cores).

Run: ``python benchmarks/bench_mcp_acp.py [--calls 300] [--rounds 5] [--hog]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

WAYS = ("direct", "acp", "stdio")

SERVER_SOURCE = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


if __name__ == "__main__":
    server.run("stdio")
'''


def _server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return server


@asynccontextmanager
async def _direct(_: Path) -> AsyncIterator[Any]:
    from fastmcp import Client
    from fastmcp.client.transports import FastMCPTransport

    async with Client(FastMCPTransport(_server())) as client:
        yield client


@asynccontextmanager
async def _acp(_: Path) -> AsyncIterator[Any]:
    from fastmcp import Client

    from accord.agent import AgentRuntime
    from accord.client import connect
    from accord.coder._acp_mcp import AcpMcpTransport
    from accord.engines import EngineCapabilities
    from accord.store import MemorySessionStore
    from accord.testing import ScriptedEngine

    engine = ScriptedEngine(capabilities=EngineCapabilities(mcp_acp=True))
    runtime = AgentRuntime(engine, store=MemorySessionStore())
    try:
        async with connect(runtime, mcp_servers=[_server()]) as connection:
            await connection.new_session("/tmp")
            context = engine.sessions[0].context
            (server,) = context.mcp_servers
            assert context.mcp_over_acp is not None
            transport = AcpMcpTransport(context.mcp_over_acp, server.server_id, server.name)
            async with Client(transport) as client:
                yield client
    finally:
        await runtime.aclose()


@asynccontextmanager
async def _stdio(directory: Path) -> AsyncIterator[Any]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    script = directory / "bench_server.py"
    script.write_text(SERVER_SOURCE)
    async with Client(StdioTransport(sys.executable, [str(script)])) as client:
        yield client


OPENERS: dict[str, Callable[[Path], AbstractAsyncContextManager[Any]]] = {
    "direct": _direct,
    "acp": _acp,
    "stdio": _stdio,
}


async def _round(way: str, calls: int, directory: Path) -> dict[str, float]:
    async with OPENERS[way](directory) as client:
        for _ in range(20):  # warm up (imports, caches, the tool listing)
            await client.call_tool("echo", {"text": "warm"})
        times: list[float] = []
        cpu = time.process_time()
        for index in range(calls):
            started = time.perf_counter()
            result = await client.call_tool("echo", {"text": f"call {index}"})
            times.append(time.perf_counter() - started)
            assert result.structured_content == {"result": f"call {index}"}
        cpu = time.process_time() - cpu
    times.sort()
    return {
        "p50_us": times[len(times) // 2] * 1e6,
        "p90_us": times[int(len(times) * 0.9)] * 1e6,
        "cpu_us": cpu / calls * 1e6,
    }


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):8.0f}  ({min(values):.0f}-{max(values):.0f})"


async def _main(calls: int, rounds: int) -> dict[str, list[dict[str, float]]]:
    results: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(rounds):
            for way in WAYS:
                results[way].append(await _round(way, calls, Path(directory)))
    return results


def main() -> None:
    """Run the rounds and print the figures (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per round and way")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hog", action="store_true", help="two busy processes beside it")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = parser.parse_args()
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        for _ in range(2 if args.hog else 0)
    ]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            results = anyio.run(_main, args.calls, args.rounds)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    if args.json:
        print(json.dumps(results))
        return
    print(f"{args.rounds} rounds x {args.calls} sequential tools/call per way; load {load}")
    print(f"{'way':8} {'p50 us':>22} {'p90 us':>22} {'CPU us/call':>22}")
    for way in WAYS:
        rows = results[way]
        cpu = "     (server elsewhere)" if way == "stdio" else _spread([r["cpu_us"] for r in rows])
        p50 = _spread([r["p50_us"] for r in rows])
        p90 = _spread([r["p90_us"] for r in rows])
        print(f"{way:8} {p50:>22} {p90:>22} {cpu:>22}")


if __name__ == "__main__":
    main()

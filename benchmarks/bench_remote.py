"""Remote ACP: streaming over WebSocket (and Streamable HTTP) against stdio, and the memory of
idle connections.

1. Throughput: the same agent (``_remote_agent.py``: accord's runtime, a scripted engine
   streaming N chunks, in-memory store) as a subprocess over stdio and over the network on
   loopback; accord's client in this process runs one turn of N chunks per round, transports
   interleaved round by round; reported: chunks per wall second (median of the rounds), the
   WebSocket / stdio ratio (target >= 70%), and CPU microseconds per chunk on each side (this
   process's ``process_time``; the agent process's utime + stime from ``/proc``), which the
   machine's load moves far less than the wall-clock rate.
2. Idle connections: the agent listening; this process opens C WebSocket connections, each
   initialized with one session (``session/new``), then reads the agent's resident memory
   (``VmRSS``) and reports the cost per connection.

Run: ``python benchmarks/bench_remote.py [--chunks 5000] [--rounds 5] [--connections 1000]``.
Figures depend on the machine's load: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import anyio

from accord.client import connect
from accord.remote import open_remote

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "_remote_agent.py")]
TOKEN = "bench-token-0123456789abcdef"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _cpu_seconds(pid: int) -> float:
    """The process's user + system CPU seconds (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children() -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


async def _turn(agent: object, chunks: int, server: int) -> tuple[float, float, float]:
    """One measured turn: (chunks per second, client and agent CPU microseconds per chunk)."""
    async with connect(agent, token=TOKEN, reconnect=False) as conn:  # type: ignore[arg-type]
        session = await conn.new_session()
        await session.prompt("1")  # warm the path
        (pid,) = _children() - {server} or {server}
        agent_cpu = _cpu_seconds(pid)
        client_cpu = time.process_time()
        started = anyio.current_time()
        result = await session.prompt(str(chunks))
        elapsed = anyio.current_time() - started
        client_cpu = time.process_time() - client_cpu
        agent_cpu = _cpu_seconds(pid) - agent_cpu
    assert result.text.count("chunk") == chunks, "chunks lost"
    return chunks / elapsed, client_cpu / chunks * 1e6, agent_cpu / chunks * 1e6


async def _listening(process: anyio.abc.Process) -> int:
    assert process.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        line += await process.stdout.receive(1)
    return int(line.split()[1])


async def throughput(chunks: int, rounds: int) -> None:
    env = {**os.environ, "ACCORD_TOKEN": TOKEN}
    runs: dict[str, list[tuple[float, float, float]]] = {"stdio": [], "ws": [], "http": []}
    print(f"streaming {chunks} chunks per turn, {rounds} rounds interleaved (load {_load()})")
    async with await anyio.open_process([*AGENT, "listen"], env=env) as server:
        port = await _listening(server)
        agents = {
            "stdio": [*AGENT, "stdio"],
            "ws": f"ws://127.0.0.1:{port}/acp",
            "http": f"http://127.0.0.1:{port}/acp",
        }
        for _ in range(rounds):
            for name, agent in agents.items():
                runs[name].append(await _turn(agent, chunks, server.pid))
        server.terminate()
    median = {
        name: tuple(statistics.median(run[i] for run in values) for i in range(3))
        for name, values in runs.items()
    }
    stdio_rate, stdio_client, stdio_agent = median["stdio"]
    for name, (rate, client, agent) in median.items():
        print(
            f"  {name:5} {rate:10,.0f} chunks/s ({rate / stdio_rate:4.0%} of stdio)"
            f"  CPU per chunk: client {client:5.1f} us ({client / stdio_client:4.0%}),"
            f" agent {agent:5.1f} us ({agent / stdio_agent:4.0%})"
        )
    print(f"  (load {_load()})")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def idle_connections(count: int) -> None:
    env = {**os.environ, "ACCORD_TOKEN": TOKEN}
    async with await anyio.open_process([*AGENT, "listen"], env=env) as server:
        port = await _listening(server)
        url = f"ws://127.0.0.1:{port}/acp"
        opened = anyio.Event()
        done = anyio.Event()
        ready = 0

        async def hold(index: int) -> None:
            nonlocal ready
            async with open_remote(url, token=TOKEN, heartbeat_interval=3600) as transport:
                init = {"protocolVersion": 1, "clientCapabilities": {}}
                await transport.send(
                    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
                )
                await transport.receive()
                new = {"cwd": "/", "mcpServers": []}
                await transport.send(
                    {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new}
                )
                while "result" not in (await transport.receive()):
                    pass
                ready += 1
                if ready == count:
                    opened.set()
                await done.wait()

        before = _rss_kib(server.pid)
        async with anyio.create_task_group() as tg:
            for index in range(count):
                tg.start_soon(hold, index)
            await opened.wait()
            after = _rss_kib(server.pid)
            done.set()
        server.terminate()
    per = (after - before) / count
    print(f"{count} idle WebSocket connections, each with one session (load {_load()})")
    print(f"  agent RSS {before / 1024:.1f} MiB -> {after / 1024:.1f} MiB: {per:.1f} KiB each")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=1000, help="0 skips the idle test")
    args = parser.parse_args()
    anyio.run(throughput, args.chunks, args.rounds)
    if args.connections:
        anyio.run(idle_connections, args.connections)


if __name__ == "__main__":
    main()

"""The served agent under a flood of unauthenticated sockets (issue 24): what it holds, what it
costs, and how long an authenticated client then waits.

The agent is ``_remote_agent.py listen`` (accord's runtime, a scripted engine, default
:class:`~accord.remote.ServerLimits` for the unauthenticated bounds: 32 per address, 512 in
all). Each round, interleaved: an authenticated client over WebSocket connects, opens a
session and streams a turn of ``--chunks`` chunks, first with no flood ("quiet"), then while
``accord.testing.hold_connections`` holds ``--flood`` sockets (half idle, half trickling a
request head a byte every 0.2 s) from ``--sources`` loopback addresses ("flood"). Reported:
the wall time of each client's connect + session + turn (median and min-max over the rounds),
the sockets the server still held at the end of each flood (the rest it evicted), and the
agent's RSS growth per held socket.

Run ``python benchmarks/bench_flood.py`` (``--hog`` adds two busy-looping processes for the
run, for a load of 2 or more on top of the machine's own).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
import anyio.abc

from accord.client import connect
from accord.testing import HttpTarget, hold_connections

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "_remote_agent.py"), "listen"]
TOKEN = "bench-flood-token-0123456789abcdef"


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def _listening(process: anyio.abc.Process) -> int:
    assert process.stdout is not None
    buffer = b""
    while b"\n" not in buffer:
        buffer += await process.stdout.receive()
    return int(buffer.split(b"\n", 1)[0].split()[1])


async def _client_turn(port: int, chunks: int) -> float:
    started = time.perf_counter()
    async with connect(f"ws://127.0.0.1:{port}/acp", token=TOKEN, reconnect=False) as conn:
        result = await (await conn.new_session()).prompt(str(chunks))
    assert result.stop_reason == "end_turn", result.stop_reason
    return time.perf_counter() - started


async def run(chunks: int, rounds: int, flood: int, sources: int) -> None:
    env = {**os.environ, "ACCORD_TOKEN": TOKEN}
    hosts = [f"127.0.0.{i}" for i in range(2, 2 + sources)]
    quiet: list[float] = []
    flooded: list[float] = []
    held: list[int] = []
    per_socket: list[float] = []
    async with await anyio.open_process(AGENT, env=env) as server:
        port = await _listening(server)
        target = HttpTarget("127.0.0.1", port, TOKEN)
        await _client_turn(port, chunks)  # warm up
        for _ in range(rounds):
            quiet.append(await _client_turn(port, chunks))
            before = _rss_kib(server.pid)
            async with (
                hold_connections(target, flood // 2, local_hosts=hosts) as idle,
                hold_connections(
                    target, flood - flood // 2, trickle=True, interval=0.2, local_hosts=hosts
                ) as trickling,
            ):
                await anyio.sleep(1.0)  # the evictions settle
                flooded.append(await _client_turn(port, chunks))
                during = _rss_kib(server.pid)
                still = idle.held + trickling.held
            held.append(still)
            per_socket.append((during - before) / max(still, 1))
        server.terminate()

    def spread(values: list[float]) -> str:
        return (
            f"{statistics.median(values) * 1000:7.1f} ms"
            f" ({min(values) * 1000:.1f}-{max(values) * 1000:.1f})"
        )

    print(
        f"{rounds} rounds, {chunks} chunks per turn, flood {flood} sockets"
        f" ({flood // 2} idle, {flood - flood // 2} trickling) from {sources} addresses"
    )
    print(f"  authenticated client, quiet:  {spread(quiet)}")
    print(f"  authenticated client, flood:  {spread(flooded)}")
    print(f"  sockets held by the server at the end of each flood: {held}")
    print(
        f"  agent RSS per held socket: {statistics.median(per_socket):.1f} KiB"
        f" ({min(per_socket):.1f}-{max(per_socket):.1f})"
    )
    print(f"  (load {_load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--flood", type=int, default=1000)
    parser.add_argument("--sources", type=int, default=20)
    parser.add_argument("--hog", action="store_true", help="two busy loops beside the run")
    args = parser.parse_args()
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        for _ in range(2 if args.hog else 0)
    ]
    try:
        anyio.run(run, args.chunks, args.rounds, args.flood, args.sources)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


if __name__ == "__main__":
    main()

"""Request round trip over stdio, side by side and interleaved: accord tree(s) vs the official SDKs.

Each *way* is one client process driving one agent process over real pipes with ``--pings``
sequential ``_bench/ping`` requests (answered ``{}`` at once) after 200 that are not counted.
Ways: ``ts-sdk`` (the official TypeScript SDK, ``@agentclientprotocol/sdk`` from
``.interop/acp-sdk-2``, on both sides: ``_ts_sdk_ping.mjs``; the reference the ratios are
taken to), ``sdk`` (the official Python SDK, ``agent-client-protocol``, on both sides:
``_agents.py``) and one accord way per ``--tree`` (the client and the agent import accord from
that tree's ``src``: e.g. main at an older commit unpacked with ``git archive``, and this
checkout). The ways run in turn, ``--rounds`` times, the order rotated every round, so a
change of the machine's load hits every way alike. Without node or the installed TypeScript
SDK (``scripts/fetch_interop_agents.sh``) its way is left out and the ratios are to the
Python SDK.

Per run: round trip p50 and p99 (wall clock), and CPU microseconds per round trip of the
client and of the agent (user + system, from ``/proc``): the CPU figures move much less with
the load than wall-clock ones. Printed per run with the load average, then the medians over
the rounds, and each way's p50 and CPU over the reference's (medians of the per-round ratios).

Run: ``python benchmarks/bench_round_trip.py [--pings 2000] [--rounds 5] [--tree DIR ...]
[--no-python-sdk] [--hog]`` (default tree: this checkout; ``--hog`` runs two busy-looping
processes beside the rounds, for the figures at load >= 2). One run is ``python
benchmarks/bench_round_trip.py --one accord|sdk|ts-sdk``, which prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
AGENTS = [sys.executable, str(HERE / "_agents.py")]
WARM_UP = 200
TS_SDK_MODULES = ROOT / ".interop" / "acp-sdk-2" / "node_modules"
TS_SDK_PROGRAM = HERE / "_ts_sdk_ping.mjs"


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _summary(rtts: list[float], client_cpu: float, agent_cpu: float) -> dict[str, float]:
    rtts.sort()
    count = len(rtts)
    return {
        "p50_ms": rtts[count // 2] * 1e3,
        "p99_ms": rtts[min(count - 1, int(count * 0.99))] * 1e3,
        "client_us": client_cpu / count * 1e6,
        "agent_us": agent_cpu / count * 1e6,
    }


async def _one_accord(pings: int) -> dict[str, float]:
    from accord.roles import Client, ClientSideConnection
    from accord.transports import spawn_agent

    async with (
        spawn_agent([*AGENTS, "accord"]) as transport,
        ClientSideConnection(Client(), transport) as conn,
    ):
        await conn.initialize()
        for _ in range(WARM_UP):
            await conn.ext_request("_bench/ping", {})
        rtts: list[float] = []
        agent0, client0 = _cpu(transport.pid), time.process_time()
        for _ in range(pings):
            started = time.perf_counter()
            await conn.ext_request("_bench/ping", {})
            rtts.append(time.perf_counter() - started)
        client = time.process_time() - client0
        agent = _cpu(transport.pid) - agent0
    return _summary(rtts, client, agent)


async def _one_sdk(pings: int) -> dict[str, float]:
    import acp

    class Quiet:
        async def session_update(self, *args: Any, **kwargs: Any) -> None:
            pass

        async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        def on_connect(self, conn: Any) -> None:
            pass

    async with acp.spawn_agent_process(Quiet(), *AGENTS, "sdk") as (conn, process):
        await conn.initialize(protocol_version=1)
        for _ in range(WARM_UP):
            await conn.ext_method("_bench/ping", {})
        rtts: list[float] = []
        agent0, client0 = _cpu(process.pid), time.process_time()
        for _ in range(pings):
            started = time.perf_counter()
            await conn.ext_method("_bench/ping", {})
            rtts.append(time.perf_counter() - started)
        client = time.process_time() - client0
        agent = _cpu(process.pid) - agent0
    return _summary(rtts, client, agent)


def _run_one(way: str, pings: int) -> None:
    if way == "sdk":
        import asyncio

        result = asyncio.run(_one_sdk(pings))
    else:
        import anyio

        result = anyio.run(_one_accord, pings)
    print(json.dumps(result))


def _ts_sdk_available() -> bool:
    return shutil.which("node") is not None and (TS_SDK_MODULES / "@agentclientprotocol").is_dir()


def _spawn_ts_sdk(pings: int) -> dict[str, float]:
    """One run of the TypeScript SDK's client and agent (``_ts_sdk_ping.mjs``)."""
    node = shutil.which("node")
    assert node is not None
    with tempfile.TemporaryDirectory(prefix="accord-ts-sdk-") as scratch:
        (Path(scratch) / "node_modules").symlink_to(TS_SDK_MODULES)
        program = Path(scratch) / TS_SDK_PROGRAM.name
        program.write_text(TS_SDK_PROGRAM.read_text())
        out = subprocess.run(
            [node, str(program), "client", str(pings)],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _spawn_one(way: str, tree: Path | None, pings: int) -> dict[str, float]:
    if way == "ts-sdk":
        return _spawn_ts_sdk(pings)
    env = dict(os.environ)
    if tree is not None:  # the client here and the agent it spawns both import this tree
        env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--one", way, "--pings", str(pings)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    """Run the ways in turn and print the per-run figures and the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pings", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", action="append", type=Path, help="an accord checkout")
    parser.add_argument(
        "--no-python-sdk", action="store_true", help="leave out the official Python SDK"
    )
    parser.add_argument("--hog", action="store_true", help="two busy processes beside it")
    parser.add_argument("--one", choices=("accord", "sdk", "ts-sdk"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one == "ts-sdk":
        print(json.dumps(_spawn_ts_sdk(args.pings)))
        return
    if args.one:
        _run_one(args.one, args.pings)
        return
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        for _ in range(2 if args.hog else 0)
    ]
    try:
        _rounds(args)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _rounds(args: argparse.Namespace) -> None:
    """Run the ways in turn, ``args.rounds`` times, and print the figures."""
    trees: list[Path] = [tree.resolve() for tree in args.tree or [ROOT]]
    ways: list[tuple[str, str, Path | None]] = [(f"accord {t}", "accord", t) for t in trees]
    if not args.no_python_sdk:
        ways.append(("official Python SDK", "sdk", None))
    if _ts_sdk_available():
        ways.append(("official TypeScript SDK", "ts-sdk", None))
    else:
        print("the TypeScript SDK is not installed (scripts/fetch_interop_agents.sh): left out")
    reference = ways[-1][0]
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in ways}
    print(f"{args.pings:,} pings per run, {args.rounds} rounds, order rotated per round")
    for round_ in range(args.rounds):
        shift = round_ % len(ways)
        for name, way, tree in ways[shift:] + ways[:shift]:
            load = Path("/proc/loadavg").read_text().split()[0]
            result = _spawn_one(way, tree, args.pings)
            results[name].append(result)
            print(
                f"round {round_ + 1} {name:50s} p50 {result['p50_ms']:.3f} ms  p99 "
                f"{result['p99_ms']:.3f} ms  CPU/rt client {result['client_us']:.0f} us agent "
                f"{result['agent_us']:.0f} us  (load {load})",
                flush=True,
            )
    sdk = results[reference]
    print(f"\nmedians over the rounds; ratios are medians of the per-round ratios to {reference}")
    for name, runs in results.items():

        def median(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(run[key] for run in runs)

        def ratio(key: str, runs: list[dict[str, float]] = runs) -> float:
            pairs = zip(runs, sdk, strict=True)
            return statistics.median(mine[key] / theirs[key] for mine, theirs in pairs)

        print(
            f"{name:50s} p50 {median('p50_ms'):.3f} ms ({ratio('p50_ms'):.2f}x)  p99 "
            f"{median('p99_ms'):.3f} ms  CPU/rt client {median('client_us'):.0f} us "
            f"({ratio('client_us'):.2f}x) agent {median('agent_us'):.0f} us "
            f"({ratio('agent_us'):.2f}x)"
        )
    print(f"load average at the end: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()

"""Protocol benchmark: accord against the official Python SDK, over real OS pipes.

Each side runs as in production: the client in this process, the agent as a child process
speaking newline-delimited JSON on its stdin/stdout. Measured, for each implementation
(accord client + accord agent, SDK client + SDK agent), in one run:

(a) one prompt streaming N ``agent_message_chunk`` notifications of ~40 bytes: messages/s,
    and CPU microseconds per message on the client and on the agent (the median of several
    such prompts on one connection, the first one not counted: it builds the validators);
    accord's agent streams them both ways, in turn: with the typed call, building a model per
    chunk as the SDK's agent does, and with ``send_chunk``, which builds none;
(b) request round-trip latency (an extension request answered at once): p50 and p99;
(c) cold start: from spawn to the ``initialize`` answer (median of several spawns);
(d) the agent process's peak RSS.

Run: ``python benchmarks/bench_protocol.py [--messages 20000] [--rounds 5] [--pings 2000]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
AGENTS = [sys.executable, str(HERE / "_agents.py")]
sys.path.insert(0, str(HERE))

from _timing import compile_accord  # noqa: E402


@dataclass
class Result:
    name: str
    msgs_per_s: float
    msgs_per_s_range: tuple[float, float]
    client_us_per_msg: float
    agent_us_per_msg: float
    rtt_p50_ms: float
    rtt_p99_ms: float
    cold_start_s: float
    agent_peak_rss_mb: float


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Turns:
    """Per-prompt samples: wall seconds, client and agent CPU seconds."""

    messages: int
    wall: list[float]
    cpu: list[float]
    agent_cpu: list[float]

    def rate(self) -> tuple[float, tuple[float, float]]:
        rates = [self.messages / wall for wall in self.wall]
        return statistics.median(rates), (min(rates), max(rates))

    def us_per_msg(self, samples: list[float]) -> float:
        return statistics.median(samples) / self.messages * 1e6


def _result(
    name: str, turns: Turns, rtts: list[float], cold: list[float], meta: dict[str, Any]
) -> Result:
    """One implementation's figures: medians of its turns, round trips, starts; the agent's
    peak RSS as it reported it last."""
    rate, rate_range = turns.rate()
    return Result(
        name,
        rate,
        rate_range,
        turns.us_per_msg(turns.cpu),
        turns.us_per_msg(turns.agent_cpu),
        _percentile(rtts, 0.5) * 1e3,
        _percentile(rtts, 0.99) * 1e3,
        statistics.median(cold),
        meta["peak_rss_kb"] / 1024,
    )


async def bench_accord(messages: int, rounds: int, pings: int, starts: int) -> list[Result]:
    """accord both ways: the typed call (a model per chunk) and ``send_chunk``, interleaved."""
    from accord.roles import Client, ClientSideConnection
    from accord.schema import (
        NewSessionRequest,
        PromptRequest,
        SessionNotification,
        TextContentBlock,
    )
    from accord.transports import spawn_agent

    class CountingClient(Client):
        count = 0

        async def session_update(self, notification: SessionNotification) -> None:
            self.count += 1

    cold: list[float] = []
    for _ in range(starts):
        started = time.perf_counter()
        async with (
            spawn_agent([*AGENTS, "accord"]) as transport,
            ClientSideConnection(CountingClient(), transport) as conn,
        ):
            await conn.initialize()
            cold.append(time.perf_counter() - started)

    client = CountingClient()
    async with (
        spawn_agent([*AGENTS, "accord"]) as transport,
        ClientSideConnection(client, transport) as conn,
    ):
        await conn.initialize()
        session = await conn.new_session(NewSessionRequest(cwd=os.getcwd(), mcp_servers=[]))
        modes = {
            "accord, typed models": (str(messages), Turns(messages, [], [], [])),
            "accord, send_chunk": (f"fast:{messages}", Turns(messages, [], [], [])),
        }
        meta: dict[str, Any] = {}
        for round_ in range(rounds + 1):
            for text, turns in modes.values():
                request = PromptRequest(
                    session_id=session.session_id, prompt=[TextContentBlock(text=text)]
                )
                client.count = 0
                cpu0, wall0 = time.process_time(), time.perf_counter()
                response = await conn.prompt(request)
                wall = time.perf_counter() - wall0
                cpu = time.process_time() - cpu0
                assert client.count == messages, (client.count, messages)
                meta = response.meta or {}
                if round_:  # the first turn builds the validators: not counted
                    turns.wall.append(wall)
                    turns.cpu.append(cpu)
                    turns.agent_cpu.append(meta["cpu"])
        rtts: list[float] = []
        for _ in range(pings):
            t0 = time.perf_counter()
            await conn.ext_request("_bench/ping", {})
            rtts.append(time.perf_counter() - t0)
    return [_result(name, turns, rtts, cold, meta) for name, (_, turns) in modes.items()]


async def bench_sdk(messages: int, rounds: int, pings: int, starts: int) -> Result:
    import acp
    from acp import schema

    class CountingClient:
        count = 0

        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            self.count += 1

        async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        def on_connect(self, conn: Any) -> None:
            pass

    cold: list[float] = []
    for _ in range(starts):
        started = time.perf_counter()
        async with acp.spawn_agent_process(CountingClient(), *AGENTS, "sdk") as (conn, _):
            await conn.initialize(protocol_version=1)
            cold.append(time.perf_counter() - started)

    client = CountingClient()
    async with acp.spawn_agent_process(client, *AGENTS, "sdk") as (conn, _):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        turns = Turns(messages, [], [], [])
        received: list[int] = []
        for round_ in range(rounds + 1):
            client.count = 0
            cpu0, wall0 = time.process_time(), time.perf_counter()
            response = await conn.prompt(
                prompt=[schema.TextContentBlock(type="text", text=str(messages))],
                session_id=session.session_id,
            )
            wall = time.perf_counter() - wall0
            cpu = time.process_time() - cpu0
            received.append(client.count)
            meta: dict[str, Any] = response.field_meta or {}
            if round_:
                turns.wall.append(wall)
                turns.cpu.append(cpu)
                turns.agent_cpu.append(meta["cpu"])
        rtts: list[float] = []
        for _ in range(pings):
            t0 = time.perf_counter()
            await conn.ext_method("_bench/ping", {})
            rtts.append(time.perf_counter() - t0)
    if min(received) != messages:
        print(
            f"note: the SDK client had received as few as {min(received)} of {messages} "
            "updates when the prompt answered",
            file=sys.stderr,
        )
    return _result("official SDK 0.12.1", turns, rtts, cold, meta)


def _table(accords: list[Result], sdk: Result) -> str:
    rows = [
        ("(a) messages/s (median)", "msgs_per_s", "{:,.0f}", True),
        ("(a) client CPU us/msg", "client_us_per_msg", "{:.1f}", False),
        ("(a) agent CPU us/msg", "agent_us_per_msg", "{:.1f}", False),
        ("(b) round trip p50 ms", "rtt_p50_ms", "{:.3f}", False),
        ("(b) round trip p99 ms", "rtt_p99_ms", "{:.3f}", False),
        ("(c) cold start s", "cold_start_s", "{:.3f}", False),
        ("(d) agent peak RSS MB", "agent_peak_rss_mb", "{:.1f}", False),
    ]
    columns = [*accords, sdk]
    lines = [
        "| measure | "
        + " | ".join(r.name for r in columns)
        + " | "
        + " | ".join(f"advantage, {a.name.removeprefix('accord, ')}" for a in accords)
        + " |",
        "| --- |" + " ---: |" * (len(columns) + len(accords)),
    ]
    for label, field, fmt, higher_is_better in rows:
        values = [fmt.format(getattr(r, field)) for r in columns]
        s = getattr(sdk, field)
        ratios = [
            f"{(getattr(a, field) / s) if higher_is_better else (s / getattr(a, field)):.1f}x"
            for a in accords
        ]
        lines.append(f"| {label} | " + " | ".join(values + ratios) + " |")
        if field == "msgs_per_s":
            spreads = [f"{lo:,.0f}-{hi:,.0f}" for lo, hi in (r.msgs_per_s_range for r in columns)]
            blank = [""] * len(accords)
            lines.append("| (a) messages/s (min-max) | " + " | ".join(spreads + blank) + " |")
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    compile_accord()
    load_before = os.getloadavg()[0]
    accords = await bench_accord(args.messages, args.rounds, args.pings, args.starts)
    sdk = await bench_sdk(args.messages, args.rounds, args.pings, args.starts)
    print(
        f"{args.messages:,} chunks x {args.rounds} prompts (median), {args.pings:,} pings, "
        f"{args.starts} cold starts; Python {sys.version.split()[0]}, {os.cpu_count()} cores; "
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    print(_table(accords, sdk))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pings", type=int, default=2_000)
    parser.add_argument("--starts", type=int, default=5)
    anyio.run(main, parser.parse_args())

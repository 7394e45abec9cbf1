"""Protocol benchmark: accord against the official Python SDK, over real OS pipes.

Each side runs as in production: the client in this process, the agent as a child process
speaking newline-delimited JSON on its stdin/stdout. Measured, for each implementation
(accord client + accord agent, SDK client + SDK agent), in one run:

(a) one prompt streaming N ``agent_message_chunk`` notifications of ~40 bytes: messages/s,
    and CPU microseconds per message on the client and on the agent;
(b) request round-trip latency (an extension request answered at once): p50 and p99;
(c) cold start: from spawn to the ``initialize`` answer (median of several spawns);
(d) the agent process's peak RSS.

Run: ``python benchmarks/bench_protocol.py [--messages 20000] [--pings 2000]``.
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


@dataclass
class Result:
    name: str
    msgs_per_s: float
    client_us_per_msg: float
    agent_us_per_msg: float
    rtt_p50_ms: float
    rtt_p99_ms: float
    cold_start_s: float
    agent_peak_rss_mb: float


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench_accord(messages: int, pings: int, starts: int) -> Result:
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
        request = PromptRequest(
            session_id=session.session_id, prompt=[TextContentBlock(text=str(messages))]
        )
        cpu0, wall0 = time.process_time(), time.perf_counter()
        response = await conn.prompt(request)
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        assert client.count == messages, (client.count, messages)
        meta: dict[str, Any] = response.meta or {}
        rtts: list[float] = []
        for _ in range(pings):
            t0 = time.perf_counter()
            await conn.ext_request("_bench/ping", {})
            rtts.append(time.perf_counter() - t0)
    return Result(
        "accord",
        messages / wall,
        cpu / messages * 1e6,
        meta["cpu"] / messages * 1e6,
        _percentile(rtts, 0.5) * 1e3,
        _percentile(rtts, 0.99) * 1e3,
        statistics.median(cold),
        meta["peak_rss_kb"] / 1024,
    )


async def bench_sdk(messages: int, pings: int, starts: int) -> Result:
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
        cpu0, wall0 = time.process_time(), time.perf_counter()
        response = await conn.prompt(
            prompt=[schema.TextContentBlock(type="text", text=str(messages))],
            session_id=session.session_id,
        )
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        received = client.count
        meta: dict[str, Any] = response.field_meta or {}
        rtts: list[float] = []
        for _ in range(pings):
            t0 = time.perf_counter()
            await conn.ext_method("_bench/ping", {})
            rtts.append(time.perf_counter() - t0)
    if received != messages:
        print(
            f"note: the SDK client had received {received} of {messages} updates "
            "when the prompt answered",
            file=sys.stderr,
        )
    return Result(
        "official SDK 0.12.1",
        messages / wall,
        cpu / messages * 1e6,
        meta["cpu"] / messages * 1e6,
        _percentile(rtts, 0.5) * 1e3,
        _percentile(rtts, 0.99) * 1e3,
        statistics.median(cold),
        meta["peak_rss_kb"] / 1024,
    )


def _table(results: list[Result]) -> str:
    accord, sdk = results
    rows = [
        ("(a) messages/s", "msgs_per_s", "{:,.0f}", True),
        ("(a) client CPU us/msg", "client_us_per_msg", "{:.1f}", False),
        ("(a) agent CPU us/msg", "agent_us_per_msg", "{:.1f}", False),
        ("(b) round trip p50 ms", "rtt_p50_ms", "{:.3f}", False),
        ("(b) round trip p99 ms", "rtt_p99_ms", "{:.3f}", False),
        ("(c) cold start s", "cold_start_s", "{:.3f}", False),
        ("(d) agent peak RSS MB", "agent_peak_rss_mb", "{:.1f}", False),
    ]
    lines = [
        f"| measure | {accord.name} | {sdk.name} | accord advantage |",
        "| --- | ---: | ---: | ---: |",
    ]
    for label, field, fmt, higher_is_better in rows:
        a, s = getattr(accord, field), getattr(sdk, field)
        ratio = (a / s) if higher_is_better else (s / a)
        lines.append(f"| {label} | {fmt.format(a)} | {fmt.format(s)} | {ratio:.1f}x |")
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    accord = await bench_accord(args.messages, args.pings, args.starts)
    sdk = await bench_sdk(args.messages, args.pings, args.starts)
    print(
        f"{args.messages:,} chunks, {args.pings:,} pings, {args.starts} cold starts; "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} cores"
    )
    print(_table([accord, sdk]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--pings", type=int, default=2_000)
    parser.add_argument("--starts", type=int, default=5)
    anyio.run(main, parser.parse_args())

"""Several clients on one session: the turn's cost per extra attached client, and resuming a
10,000-update gap from a cursor.

1. Fan-out: one runtime (scripted engine streaming N chunks, in-memory store), K clients
   connected over the in-memory pair, all attached to one session; one of them prompts a turn
   of N chunks; the round ends when every client has received all N. Measured: this
   process's CPU seconds per round (agent and clients run in it), for K = 1, 2, 5, 10, rounds
   interleaved; reported: the median per K and the slope (CPU per extra client).
2. Resume: a session holding a turn of G chunks (default 10,000); a new client resumes it
   with the cursor of the turn's first chunk, so the other G - 1 chunks arrive before the
   answer (the prompt is not echoed back to the client that sent it). Measured: wall and
   CPU seconds of ``session/resume`` (median of the rounds).

Run: ``python benchmarks/bench_attach.py [--chunks 2000] [--gap 10000] [--rounds 5]``.
Figures depend on the machine's load: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import AsyncExitStack
from typing import Any

import anyio

from accord.agent import AgentRuntime
from accord.errors import CURSOR_META_KEY
from accord.roles import AgentSideConnection, Client, ClientSideConnection
from accord.schema import (
    InitializeRequest,
    NewSessionRequest,
    PromptRequest,
    ResumeSessionRequest,
    SessionNotification,
    TextContentBlock,
)
from accord.store import MemorySessionStore
from accord.testing._scripted_engine import ScriptedEngine
from accord.testing._scripted_steps import Stream
from accord.transports import memory_transport_pair

CWD = "/tmp"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Counter(Client):
    """Counts message chunks; remembers the cursor of the turn's first chunk."""

    def __init__(self) -> None:
        self.chunks = 0
        self.target = 0
        self.done = anyio.Event()
        self.first_cursor: str | None = None

    async def session_update(self, notification: SessionNotification) -> None:
        update = notification.update.to_wire()
        kind = update["sessionUpdate"]
        if kind == "agent_message_chunk":
            if self.first_cursor is None:
                self.first_cursor = (notification.meta or {}).get(CURSOR_META_KEY)
            self.chunks += 1
            if self.chunks >= self.target:
                self.done.set()


async def _connect(stack: AsyncExitStack, runtime: AgentRuntime, client: Counter) -> Any:
    agent_end, client_end = memory_transport_pair()
    await stack.enter_async_context(AgentSideConnection(runtime, agent_end))
    conn = await stack.enter_async_context(ClientSideConnection(client, client_end))
    await conn.initialize(InitializeRequest(protocol_version=1))
    return conn


async def fan_out_round(clients: int, chunks: int) -> float:
    runtime = AgentRuntime(ScriptedEngine([[Stream(count=chunks)]]), store=MemorySessionStore())
    async with AsyncExitStack() as stack:
        counters = [Counter() for _ in range(clients)]
        conns = [await _connect(stack, runtime, c) for c in counters]
        session_id = (
            await conns[0].new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
        ).session_id
        for conn in conns[1:]:
            await conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        for counter in counters:
            counter.target = chunks
        start = time.process_time()
        await conns[0].prompt(
            PromptRequest(session_id=session_id, prompt=[TextContentBlock(text="go")])
        )
        for counter in counters:
            await counter.done.wait()
        return time.process_time() - start


async def resume_round(gap: int) -> tuple[float, float]:
    runtime = AgentRuntime(ScriptedEngine([[Stream(count=gap)]]), store=MemorySessionStore())
    async with AsyncExitStack() as stack:
        first = Counter()
        first.target = gap
        conn = await _connect(stack, runtime, first)
        session_id = (await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))).session_id
        await conn.prompt(
            PromptRequest(session_id=session_id, prompt=[TextContentBlock(text="go")])
        )
        await first.done.wait()
        assert first.first_cursor is not None
        back = Counter()
        back.target = gap - 1
        other = await _connect(stack, runtime, back)
        wall, cpu = time.perf_counter(), time.process_time()
        await other.resume_session(
            ResumeSessionRequest(
                session_id=session_id, cwd=CWD, meta={CURSOR_META_KEY: first.first_cursor}
            )
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert back.chunks == gap - 1, (back.chunks, gap - 1)
        return wall, cpu


async def main(chunks: int, gap: int, rounds: int) -> None:
    sizes = (1, 2, 5, 10)
    cpu: dict[int, list[float]] = {k: [] for k in sizes}
    for _ in range(rounds):
        for k in sizes:
            cpu[k].append(await fan_out_round(k, chunks))
    medians = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"fan-out: a turn of {chunks} chunks, {rounds} rounds, load {_load()}")
    for k in sizes:
        print(f"  {k:2d} clients: {medians[k]:.3f} CPU s per turn")
    slope = (medians[10] - medians[1]) / 9
    print(
        f"  per extra attached client: {slope:.3f} CPU s per turn "
        f"({slope / medians[1] * 100:.0f}% of a one-client turn)"
    )
    walls, cpus = [], []
    for _ in range(rounds):
        wall, used = await resume_round(gap)
        walls.append(wall)
        cpus.append(used)
    print(
        f"resume of a {gap}-update gap: {statistics.median(walls):.3f} s wall, "
        f"{statistics.median(cpus):.3f} CPU s (median of {rounds}), load {_load()}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--gap", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    anyio.run(main, args.chunks, args.gap, args.rounds)

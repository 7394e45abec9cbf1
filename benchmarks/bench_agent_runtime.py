"""Agent-runtime benchmarks: idle-session memory, replay from SQLite, durable appends.

Run ``python benchmarks/bench_agent_runtime.py [--backend asyncio|trio]``. The runtime
(``AgentRuntime`` around a ``ScriptedEngine``, SQLite store on a temporary file) is served over
the in-memory transport pair to a ``ClientSideConnection`` whose client only counts the updates
it gets. Prints one table; rates are per wall-clock second and per CPU second (every thread):

* memory per idle session: ``tracemalloc`` growth of the whole process (runtime, engine,
  store, client and both connections) over 1,000 ``session/new`` calls, divided by 1,000,
  and again after one short prompt turn in each session;
* replay: a 10,000-event session (ten turns of streamed text, thoughts and tool calls) is
  loaded by a fresh runtime on the same file; ``session/load`` is timed from request to
  response, i.e. until the client holds the whole transcript; the rate counts events read
  from the store (the client receives fewer, compacted updates, same end state);
* durable appends: one prompt turn streaming 50,000 message chunks, timed from request to
  response; every event was committed (group commit) and then delivered to the client.

Targets (issue 3): <= 50 KB per idle session, replay >= 50,000 events/s, appends >=
20,000 events/s.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import sqlite3
import sys
import tempfile
import tracemalloc
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from _timing import Rate, Timer

if importlib.util.find_spec("accord") is None:  # a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from accord.agent import AgentRuntime
from accord.engines import EngineCapabilities
from accord.roles import AgentSideConnection, Client, ClientSideConnection
from accord.schema import (
    AvailableCommand,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SelectSessionConfigOption,
    SessionConfigSelectOption,
    SessionMode,
    SessionNotification,
    TextContentBlock,
)
from accord.store import SqliteSessionStore
from accord.testing._scripted_engine import (
    ScriptedEngine,
    ScriptStep,
    Stream,
    Think,
    UseTool,
)
from accord.transports import memory_transport_pair

MEMORY_TARGET = 50 * 1024
REPLAY_TARGET = 50_000
APPEND_TARGET = 20_000
#: The sessions' working directory: a real one (the runtime refuses a missing ``cwd``).
CWD = tempfile.gettempdir()

CAPABILITIES = EngineCapabilities(
    modes=(SessionMode(id="ask", name="Ask"), SessionMode(id="code", name="Code")),
    config_options=(
        SelectSessionConfigOption(
            id="model",
            name="Model",
            category="model",
            current_value="fast",
            options=[
                SessionConfigSelectOption(value="fast", name="Fast"),
                SessionConfigSelectOption(value="smart", name="Smart"),
            ],
        ),
    ),
    commands=(AvailableCommand(name="test", description="Run the tests"),),
)


class CountingClient(Client):
    """Counts updates; allows every permission request."""

    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, notification: SessionNotification) -> None:
        self.updates += 1

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        return RequestPermissionResponse(
            outcome=SelectedRequestPermissionOutcome(option_id=request.options[0].option_id)
        )


@asynccontextmanager
async def connected(
    engine: ScriptedEngine, path: Path
) -> AsyncGenerator[tuple[ClientSideConnection, CountingClient, AgentRuntime]]:
    client = CountingClient()
    agent_end, client_end = memory_transport_pair()
    async with SqliteSessionStore(path) as store:
        runtime = AgentRuntime(engine, store=store)
        async with (
            AgentSideConnection(runtime, agent_end),
            ClientSideConnection(client, client_end) as conn,
        ):
            await conn.initialize()
            yield conn, client, runtime


def _prompt(session_id: str, text: str) -> PromptRequest:
    return PromptRequest(session_id=session_id, prompt=[TextContentBlock(text=text)])


async def bench_memory(directory: Path, sessions: int) -> tuple[float, float]:
    """Bytes per idle session: fresh, then after one short turn each."""
    engine = ScriptedEngine(capabilities=CAPABILITIES)
    async with connected(engine, directory / "memory.db") as (conn, _client, runtime):
        request = NewSessionRequest(cwd=CWD, mcp_servers=[])
        for _ in range(20):  # warm up caches, pools and lazily built tables
            await conn.new_session(request)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        ids = [(await conn.new_session(request)).session_id for _ in range(sessions)]
        gc.collect()
        fresh = tracemalloc.take_snapshot()
        for session_id in ids:
            await conn.prompt(_prompt(session_id, "hi"))
        gc.collect()
        after_turn = tracemalloc.take_snapshot()
        tracemalloc.stop()
        assert runtime.statistics().live_sessions == sessions + 20

    def grown(snapshot: tracemalloc.Snapshot) -> float:
        stats = snapshot.compare_to(before, "filename")
        return sum(stat.size_diff for stat in stats) / sessions

    return grown(fresh), grown(after_turn)


def _replay_turn(index: int) -> list[ScriptStep]:
    return [
        Think(pieces=tuple(f"thought {k} " for k in range(40))),
        Stream(count=471, prefix=f"t{index}-"),
        UseTool(title=f"Read file {index}", kind="read", tool_call_id=f"call-{index}-a"),
        UseTool(title=f"Edit file {index}", kind="edit", tool_call_id=f"call-{index}-b"),
        Stream(count=480, prefix=f"u{index}-"),
    ]


async def bench_replay(directory: Path, repeats: int = 3) -> tuple[Rate, int, int]:
    """Load a ~10,000-event session into a fresh runtime; median of ``repeats``."""
    path = directory / "replay.db"
    engine = ScriptedEngine([_replay_turn(i) for i in range(10)], capabilities=CAPABILITIES)
    async with connected(engine, path) as (conn, _client, _runtime):
        session_id = (await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))).session_id
        for index in range(10):
            await conn.prompt(_prompt(session_id, f"turn {index}"))
    async with SqliteSessionStore(path) as store:
        stored = (await store.get_session(session_id)).last_seq  # type: ignore[union-attr]
    rates: list[tuple[Rate, int]] = []
    for _ in range(repeats):
        engine = ScriptedEngine(capabilities=CAPABILITIES)
        async with connected(engine, path) as (conn, client, _runtime):
            request = LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            with Timer() as timer:
                await conn.load_session(request)
            rates.append((Rate(stored, timer.wall, timer.cpu), client.updates))
    rate, updates = sorted(rates, key=lambda item: item[0].wall)[len(rates) // 2]
    return rate, stored, updates


async def bench_appends(directory: Path, count: int) -> tuple[Rate, int]:
    """One turn streaming ``count`` chunks; every event durable before delivered."""
    engine = ScriptedEngine([[Stream(count=count)]], capabilities=CAPABILITIES)
    path = directory / "appends.db"
    async with connected(engine, path) as (conn, client, _runtime):
        session_id = (await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))).session_id
        before = client.updates
        with Timer() as timer:
            await conn.prompt(_prompt(session_id, "go"))
        delivered = client.updates - before
    async with SqliteSessionStore(path) as store:
        stored = (await store.get_session(session_id)).last_seq  # type: ignore[union-attr]
    return Rate(stored, timer.wall, timer.cpu), delivered


async def main(backend: str, sessions: int, appends: int) -> None:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="accord-bench-") as tmp:
        directory = Path(tmp)
        fresh, after_turn = await bench_memory(directory, sessions)
        replay, replay_events, replay_updates = await bench_replay(directory)
        append, delivered = await bench_appends(directory, appends)
    load_after = os.getloadavg()[0]

    def verdict_at_least(value: float, target: int) -> str:
        return f">= {target:,}/s: {'ok' if value >= target else 'MISSED'}"

    def verdict_memory(value: float) -> str:
        return f"<= {MEMORY_TARGET // 1024} KB: {'ok' if value <= MEMORY_TARGET else 'MISSED'}"

    rows = [
        (
            f"memory per idle session ({sessions:,} new sessions)",
            f"{fresh / 1024:.1f} KB",
            "",
            "tracemalloc, whole process",
            verdict_memory(fresh),
        ),
        (
            "memory per idle session (after one turn each)",
            f"{after_turn / 1024:.1f} KB",
            "",
            "history stays in SQLite",
            verdict_memory(after_turn),
        ),
        (
            f"replay from SQLite ({replay_events:,} events, session/load)",
            f"{replay.per_wall_second:,.0f}/s",
            f"{replay.per_cpu_second:,.0f}/s",
            f"{replay_updates:,} updates sent (compacted), median of 3",
            verdict_at_least(replay.per_wall_second, REPLAY_TARGET),
        ),
        (
            f"durable appends through the runtime ({append.events:,} events)",
            f"{append.per_wall_second:,.0f}/s",
            f"{append.per_cpu_second:,.0f}/s",
            f"{delivered:,} updates delivered after commit",
            verdict_at_least(append.per_wall_second, APPEND_TARGET),
        ),
    ]
    header = ("measure", "value / wall", "per CPU s", "detail", "target")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    print(
        f"accord.agent runtime benchmark: {backend}, SQLite {sqlite3.sqlite_version},"
        f" Python {'.'.join(map(str, sys.version_info[:3]))}, {os.cpu_count()} CPUs,"
        f" load average {load_before:.1f} -> {load_after:.1f}"
    )
    print(line(header))
    print("-+-".join("-" * width for width in widths))
    for row in rows:
        print(line(row))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--sessions", type=int, default=1_000, help="idle sessions to measure")
    parser.add_argument("--events", type=int, default=50_000, help="chunks in the append turn")
    args = parser.parse_args()
    anyio.run(main, args.backend, args.sessions, args.events, backend=args.backend)

"""Memory per live session of the real coder, through the agent runtime (issue 12).

``--sessions`` coder sessions are opened in one process over an in-memory ACP connection
(``connect(CoderRuntime(...))``, the fake OpenAI-compatible server on loopback as the model),
then each runs one short turn. Printed: the growth of the process's resident memory per
session, after ``session/new`` and after the turn, and the Python-heap part of it (the
``tracemalloc`` growth, which misses what C and Rust extensions allocate: pydantic-core
validators, TLS contexts), with the files that allocated the most.

Run: ``python benchmarks/bench_coder_sessions.py [--sessions 50]``. Linux (reads ``/proc``).
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import tracemalloc
from pathlib import Path

import anyio

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply


def rss() -> int:
    """This process's resident memory in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def measure(count: int) -> None:
    project = Path(tempfile.mkdtemp())
    with FakeOpenAIServer(lambda body: ScriptedReply(text=["hi"])) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                for _ in range(3):  # warm up: imports, first validators, the model client
                    await (await connection.new_session(project)).prompt("x")
                gc.collect()
                tracemalloc.start()
                heap_before, rss_before = tracemalloc.get_traced_memory()[0], rss()
                snapshot = tracemalloc.take_snapshot()
                sessions = [await connection.new_session(project) for _ in range(count)]
                gc.collect()
                rss_new = rss()
                for session in sessions:
                    await session.prompt("x")
                gc.collect()
                heap_after, rss_after = tracemalloc.get_traced_memory()[0], rss()
                top = tracemalloc.take_snapshot().compare_to(snapshot, "filename")[:8]
        finally:
            await runtime.aclose()
    kib = 1024 * count
    print(f"sessions: {count}")
    print(f"RSS per session after session/new: {(rss_new - rss_before) / kib:.0f} KiB")
    print(f"RSS per session after one turn each: {(rss_after - rss_before) / kib:.0f} KiB")
    print(f"Python heap per session (tracemalloc): {(heap_after - heap_before) / kib:.0f} KiB")
    for stat in top:
        print(f"  {stat.size_diff / kib:7.1f} KiB  {stat.traceback[0].filename}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50, help="sessions to open")
    anyio.run(measure, parser.parse_args().sessions)


if __name__ == "__main__":
    main()

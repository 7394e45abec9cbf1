"""Run ``accord serve`` with measurements inside it, for ``bench_soak.py --probe DIR``.

A diagnostic wrapper, not part of accord: ``python benchmarks/soak_probe.py serve ...`` runs
the CLI as ``python -m accord.cli`` would, after patching in cheap counters, and on every
``SIGUSR1`` (the soak sends one per RSS sample) writes ``DIR/stats-N.json`` covering the
interval since the previous one:

* event-loop iterations: count, duration p50 / p99 / max, the ready queue's length (how long
  a request waits in line is a few iterations of this);
* garbage-collector pauses per generation (count, longest) and their total;
* ``session/list`` as the runtime serves it: service time p50 / p99, the loop iterations it
  spanned, the SQLite store's part of it and the query alone;
* objects tracked by the collector and frozen out of it, and ``VmRSS``.

With ``SOAK_PROBE_TRACEMALLOC=1`` the first signal also starts :mod:`tracemalloc` and every
later one dumps a snapshot (``DIR/snap-N.pickle``) to diff, e.g. ``Snapshot.load(b)
.compare_to(Snapshot.load(a), "lineno")``: what the process kept between two samples.
Tracing slows the agent several times over; use it for where memory goes, never for timings.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import json
import os
import runpy
import signal
import sys
import time
import tracemalloc
from collections import deque
from typing import Any

OUT = os.environ["SOAK_PROBE_DIR"]
TRACE = os.environ.get("SOAK_PROBE_TRACEMALLOC") == "1"

iterations: deque[tuple[float, int]] = deque(maxlen=500_000)
pauses: list[tuple[int, float]] = []
service: list[float] = []
spans: list[int] = []
store_calls: list[float] = []
queries: list[float] = []
loop_turns = [0]
gc_started = [0.0]
dumps = [0]

_run_once: Any = asyncio.BaseEventLoop._run_once  # type: ignore[attr-defined]


def run_once(self: Any) -> None:
    began, ready = time.perf_counter(), len(self._ready)
    _run_once(self)
    loop_turns[0] += 1
    iterations.append((time.perf_counter() - began, ready))


asyncio.BaseEventLoop._run_once = run_once  # type: ignore[attr-defined]


def on_gc(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        gc_started[0] = time.perf_counter()
    else:
        pauses.append((info["generation"], time.perf_counter() - gc_started[0]))


gc.callbacks.append(on_gc)

import accord.agent._runtime as runtime_module  # noqa: E402
import accord.store._sqlite as sqlite_module  # noqa: E402

_list_sessions = runtime_module.AgentRuntime.list_sessions
_store_list = sqlite_module.SqliteSessionStore.list_sessions
_list_page = sqlite_module.ops.list_page


async def list_sessions(self: Any, request: Any) -> Any:
    began, turn = time.perf_counter(), loop_turns[0]
    try:
        return await _list_sessions(self, request)
    finally:
        service.append(time.perf_counter() - began)
        spans.append(loop_turns[0] - turn)


async def store_list(self: Any, **kwargs: Any) -> Any:
    began = time.perf_counter()
    try:
        return await _store_list(self, **kwargs)
    finally:
        store_calls.append(time.perf_counter() - began)


def list_page(*args: Any) -> Any:
    began = time.perf_counter()
    try:
        return _list_page(*args)
    finally:
        queries.append(time.perf_counter() - began)


runtime_module.AgentRuntime.list_sessions = list_sessions  # type: ignore[method-assign]
sqlite_module.SqliteSessionStore.list_sessions = store_list  # type: ignore[method-assign]
sqlite_module.ops.list_page = list_page


def ms(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000, 2)


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def native_memory() -> dict[str, Any]:
    """What tracemalloc cannot see: glibc's heap (in use and free), SQLite's own allocations,
    and the process's anonymous memory by mapping (the ``[heap]`` and the rest)."""
    found: dict[str, Any] = {}
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        found["malloc_mb"] = {
            "arena": round(info.arena / 1e6, 1),
            "in_use": round(info.uordblks / 1e6, 1),
            "free": round(info.fordblks / 1e6, 1),
            "mmapped": round(info.hblkhd / 1e6, 1),
            "top_releasable": round(info.keepcost / 1e6, 1),
        }
    except (OSError, AttributeError):
        pass
    try:
        sqlite = ctypes.CDLL("libsqlite3.so.0")
        sqlite.sqlite3_memory_used.restype = ctypes.c_int64
        found["sqlite_memory_mb"] = round(sqlite.sqlite3_memory_used() / 1e6, 2)
    except OSError:
        pass
    anon: dict[str, int] = {}
    name = ""
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            first = line.split(maxsplit=6)
            if "-" in first[0] and len(first) >= 5:
                name = first[5].strip() if len(first) > 5 else "[anon]"
                name = name if name.startswith("[") else ("[file]" if name else "[anon]")
            elif first[0] == "Rss:":
                anon[name] = anon.get(name, 0) + int(first[1])
    found["rss_by_mapping_mb"] = {key: round(kb / 1024, 1) for key, kb in sorted(anon.items())}
    return found


def dump(signum: int, frame: object) -> None:
    dumps[0] += 1
    its = list(iterations)
    iterations.clear()
    stats = {
        "loop_iterations": len(its),
        "iteration_ms_p50_p99_max": [ms([d for d, _ in its], q) for q in (0.5, 0.99, 1.0)],
        "ready_max": max((r for _, r in its), default=None),
        "gc_pauses_count_longest_ms": {
            gen: [sum(1 for g, _ in pauses if g == gen), ms([t for g, t in pauses if g == gen], 1)]
            for gen in (0, 1, 2)
        },
        "gc_total_s": round(sum(t for _, t in pauses), 3),
        "list_service_ms_p50_p99": [ms(service, 0.5), ms(service, 0.99)],
        "list_loop_iterations_p50_max": [
            sorted(spans)[len(spans) // 2] if spans else None,
            max(spans, default=None),
        ],
        "list_store_ms_p50_p99": [ms(store_calls, 0.5), ms(store_calls, 0.99)],
        "list_query_ms_p50_p99": [ms(queries, 0.5), ms(queries, 0.99)],
        "gc_tracked": len(gc.get_objects()),
        "gc_frozen": gc.get_freeze_count(),
        "vm_rss_kb": next(
            int(line.split()[1])
            for line in open("/proc/self/status")  # noqa: SIM115
            if line.startswith("VmRSS:")
        ),
    }
    stats.update(native_memory())
    for values in (pauses, service, spans, store_calls, queries):
        values.clear()
    with open(f"{OUT}/stats-{dumps[0]}.json", "w") as out:
        json.dump(stats, out)
    if TRACE:
        if not tracemalloc.is_tracing():
            tracemalloc.start(6)
        else:
            tracemalloc.take_snapshot().dump(f"{OUT}/snap-{dumps[0]}.pickle")


signal.signal(signal.SIGUSR1, dump)
sys.argv = ["accord", *sys.argv[1:]]
runpy.run_module("accord.cli", run_name="__main__", alter_sys=True)

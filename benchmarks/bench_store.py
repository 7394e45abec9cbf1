"""Session-store benchmarks: durable appends, bulk reads, and file size.

Run ``python benchmarks/bench_store.py [--backend asyncio|trio] [--events N]``. Prints one
table; each rate is given per second of wall-clock time and per second of CPU time (all
threads of the process), the second being the one to trust on a loaded machine:

* durable appends/s through ``GroupCommitWriter`` into SQLite, a producer appending as fast
  as it can, timed until ``flush()`` returns (every event committed and delivered): with the
  events prebuilt (the store's cost) and built one by one while appending (the runtime's
  pipeline, orjson and clock included); with ``synchronous=normal`` (the default) and
  ``full``; and, for contrast, one transaction per event without the writer;
* bulk read events/s of a 10,000-event session (``iter_events`` on a reopened store), the
  store's share of a ``session/load`` replay;
* the file size after two 5,000-event turns of ~150-byte message deltas.

Targets (issue 3): appends >= 20,000 events/s, reads >= 50,000 events/s.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sqlite3
import sys
import tempfile
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import anyio
import orjson
from _timing import Rate, Timer

if importlib.util.find_spec("accord") is None:  # a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from accord.store import (
    GroupCommitWriter,
    SessionRecord,
    SqliteSessionStore,
    StoredEvent,
    iter_events,
)

APPEND_TARGET = 20_000
READ_TARGET = 50_000
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "streaming",
    "tokens",
]


def _payload(message_id: str, seq: int) -> bytes:
    """A ~150-byte message delta, shaped like the runtime's serialized events."""
    text = " ".join(WORDS[(seq + k) % len(WORDS)] for k in range(3)) + " "
    return orjson.dumps(
        {
            "kind": "text_chunk",
            "message_id": message_id,
            "content": {"type": "text", "text": text},
            "index": seq,
        }
    )


class Turn:
    """Builds the events of one streamed turn."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.turn_id = str(uuid.uuid4())
        self.message_id = str(uuid.uuid4())

    def event(self, seq: int) -> StoredEvent:
        return StoredEvent(
            session_id=self.session_id,
            seq=seq,
            epoch=0,
            turn_id=self.turn_id,
            agent_id="root",
            kind="text_chunk",
            layer="transcript",
            payload=_payload(self.message_id, seq),
            created_at=datetime.now(UTC),
        )


async def _new_session(store: SqliteSessionStore) -> str:
    session_id = str(uuid.uuid4())
    now = datetime.now(UTC)
    await store.create_session(
        SessionRecord(session_id=session_id, cwd="/work/project", created_at=now, updated_at=now)
    )
    return session_id


async def _stream(
    store: SqliteSessionStore, count: int, events: Callable[[int], StoredEvent]
) -> int:
    """Append ``events(i)`` for i in 0..count-1 through a writer; return the transactions."""
    delivered = 0

    async def deliver(batch: Sequence[StoredEvent]) -> None:
        nonlocal delivered
        delivered += len(batch)

    async with GroupCommitWriter(store, deliver) as writer:
        for index in range(count):
            await writer.append(events(index))
        await writer.flush()
        batches = writer.statistics().committed_batches
    assert delivered == count
    return batches


async def bench_writer(
    directory: Path, synchronous: Literal["normal", "full"], count: int, *, prebuilt: bool
) -> tuple[Rate, int]:
    path = directory / f"w-{synchronous}-{prebuilt}.db"
    async with SqliteSessionStore(path, synchronous=synchronous) as store:
        turn = Turn(await _new_session(store))
        if prebuilt:
            ready = [turn.event(seq) for seq in range(1, count + 1)]
            with Timer() as timer:
                batches = await _stream(store, count, ready.__getitem__)
        else:
            with Timer() as timer:
                batches = await _stream(store, count, lambda index: turn.event(index + 1))
    return Rate(count, timer.wall, timer.cpu), batches


async def bench_one_per_transaction(directory: Path, count: int) -> Rate:
    async with SqliteSessionStore(directory / "single.db") as store:
        turn = Turn(await _new_session(store))
        ready = [turn.event(seq) for seq in range(1, count + 1)]
        with Timer() as timer:
            for event in ready:
                await store.append_events([event])
    return Rate(count, timer.wall, timer.cpu)


async def bench_read(directory: Path, count: int, repeats: int = 5) -> Rate:
    path = directory / "read.db"
    async with SqliteSessionStore(path) as store:
        turn = Turn(await _new_session(store))
        await _stream(store, count, lambda index: turn.event(index + 1))
    rates: list[Rate] = []
    for _ in range(repeats):
        async with SqliteSessionStore(path) as store:
            read = 0
            with Timer() as timer:
                async for batch in iter_events(store, turn.session_id):
                    read += len(batch)
        assert read == count
        rates.append(Rate(count, timer.wall, timer.cpu))
    return sorted(rates, key=lambda rate: rate.wall)[len(rates) // 2]


def _size_on_disk(directory: Path, pattern: str) -> int:
    return sum(path.stat().st_size for path in directory.glob(pattern))


async def bench_size(directory: Path, per_turn: int) -> tuple[int, int]:
    path = directory / "size.db"
    async with SqliteSessionStore(path) as store:
        session_id = await _new_session(store)
        for first in (1, per_turn + 1):
            turn = Turn(session_id)
            await _stream(store, per_turn, lambda index, t=turn, f=first: t.event(f + index))
        payload_bytes = 0
        async for batch in iter_events(store, session_id):
            payload_bytes += sum(len(event.payload) for event in batch)
    return _size_on_disk(directory, "size.db*"), payload_bytes


def _verdict(rate: float, target: int) -> str:
    return f">= {target:,}: {'ok' if rate >= target else 'MISSED'}"


async def main(count: int, backend: str) -> None:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="accord-bench-") as tmp:
        directory = Path(tmp)
        normal, normal_batches = await bench_writer(directory, "normal", count, prebuilt=True)
        full, full_batches = await bench_writer(directory, "full", count, prebuilt=True)
        built, built_batches = await bench_writer(directory, "normal", count, prebuilt=False)
        single = await bench_one_per_transaction(directory, 2_000)
        read = await bench_read(directory, 10_000)
        size, payload_bytes = await bench_size(directory, 5_000)
    load_after = os.getloadavg()[0]

    def rate_cells(rate: Rate) -> tuple[str, str]:
        return f"{rate.per_wall_second:,.0f}/s", f"{rate.per_cpu_second:,.0f}/s"

    rows = [
        (
            f"appends via writer, normal, prebuilt ({count:,})",
            *rate_cells(normal),
            f"{normal_batches:,} transactions",
            _verdict(normal.per_wall_second, APPEND_TARGET),
        ),
        (
            f"appends via writer, full (fsync), prebuilt ({count:,})",
            *rate_cells(full),
            f"{full_batches:,} transactions",
            "survives power loss too",
        ),
        (
            f"appends via writer, normal, built while appending ({count:,})",
            *rate_cells(built),
            f"{built_batches:,} transactions",
            _verdict(built.per_wall_second, APPEND_TARGET),
        ),
        (
            "one transaction per event, no writer (2,000)",
            *rate_cells(single),
            "2,000 transactions",
            "what group commit saves",
        ),
        (
            "bulk read of a 10,000-event session",
            *rate_cells(read),
            "iter_events, 1,000/batch, median of 5",
            _verdict(read.per_wall_second, READ_TARGET),
        ),
        (
            "file size after two 5,000-event turns",
            f"{size / 1e6:.2f} MB",
            "",
            f"payloads {payload_bytes / 1e6:.2f} MB ({payload_bytes / 10_000:.0f} B each)",
            "JSON-file store: 2.7 MB",
        ),
    ]
    header = ("measure", "wall", "per CPU s", "detail", "target")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    print(
        f"accord.store benchmark: {backend}, SQLite {sqlite3.sqlite_version},"
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
    parser.add_argument("--events", type=int, default=50_000, help="events per append run")
    args = parser.parse_args()
    anyio.run(main, args.events, args.backend, backend=args.backend)

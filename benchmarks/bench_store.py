"""Session-store benchmarks: durable appends, bulk reads, and file size.

Run ``python benchmarks/bench_store.py [--backend asyncio|trio]``. Prints one table:

* durable appends/s through ``GroupCommitWriter`` into SQLite (``synchronous=normal``, the
  default, and ``full``), a producer appending as fast as it can, timed until ``flush()``
  returns, i.e. until every event is committed and delivered; for contrast, one transaction
  per event without the writer;
* bulk read events/s of a 10,000-event session (``iter_events``, reopened store), the store's
  share of a ``session/load`` replay;
* the file size after two 5,000-event turns of ~150-byte message deltas.

Targets (issue 3): appends >= 20,000 events/s, reads >= 50,000 events/s.
"""

from __future__ import annotations

import argparse
import importlib.util
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import anyio
import orjson

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


async def _stream(store: SqliteSessionStore, session_id: str, first: int, count: int) -> int:
    """Append ``count`` events through a writer; return the number of transactions."""
    turn = Turn(session_id)
    delivered = 0

    async def deliver(batch: Sequence[StoredEvent]) -> None:
        nonlocal delivered
        delivered += len(batch)

    async with GroupCommitWriter(store, deliver) as writer:
        for seq in range(first, first + count):
            await writer.append(turn.event(seq))
        await writer.flush()
        batches = writer.statistics().committed_batches
    assert delivered == count
    return batches


async def bench_writer(
    directory: Path, synchronous: Literal["normal", "full"], count: int
) -> tuple[float, int]:
    async with SqliteSessionStore(directory / f"w-{synchronous}.db", synchronous=synchronous) as s:
        session_id = await _new_session(s)
        start = time.perf_counter()
        batches = await _stream(s, session_id, 1, count)
        elapsed = time.perf_counter() - start
    return count / elapsed, batches


async def bench_one_per_transaction(directory: Path, count: int) -> float:
    async with SqliteSessionStore(directory / "single.db") as store:
        session_id = await _new_session(store)
        turn = Turn(session_id)
        start = time.perf_counter()
        for seq in range(1, count + 1):
            await store.append_events([turn.event(seq)])
        elapsed = time.perf_counter() - start
    return count / elapsed


async def bench_read(directory: Path, count: int, repeats: int = 5) -> float:
    path = directory / "read.db"
    async with SqliteSessionStore(path) as store:
        session_id = await _new_session(store)
        await _stream(store, session_id, 1, count)
    rates: list[float] = []
    for _ in range(repeats):
        async with SqliteSessionStore(path) as store:
            start = time.perf_counter()
            read = 0
            async for batch in iter_events(store, session_id):
                read += len(batch)
            elapsed = time.perf_counter() - start
        assert read == count
        rates.append(count / elapsed)
    return statistics.median(rates)


def _size_on_disk(directory: Path, pattern: str) -> int:
    return sum(path.stat().st_size for path in directory.glob(pattern))


async def bench_size(directory: Path, per_turn: int) -> tuple[int, int, float]:
    path = directory / "size.db"
    async with SqliteSessionStore(path) as store:
        session_id = await _new_session(store)
        await _stream(store, session_id, 1, per_turn)
        await _stream(store, session_id, per_turn + 1, per_turn)
        payload_bytes = 0
        async for batch in iter_events(store, session_id):
            payload_bytes += sum(len(event.payload) for event in batch)
    return _size_on_disk(directory, "size.db*"), payload_bytes, payload_bytes / (2 * per_turn)


async def main(events: int, backend: str) -> None:
    with tempfile.TemporaryDirectory(prefix="accord-bench-") as tmp:
        directory = Path(tmp)
        normal, normal_batches = await bench_writer(directory, "normal", events)
        full, full_batches = await bench_writer(directory, "full", events)
        single = await bench_one_per_transaction(directory, 2_000)
        read = await bench_read(directory, 10_000)
        size, payload_bytes, mean_payload = await bench_size(directory, 5_000)

    rows = [
        (
            f"durable appends via writer, synchronous=normal ({events:,} events)",
            f"{normal:,.0f} events/s",
            f"{normal_batches} transactions",
            f">= {APPEND_TARGET:,}: {'ok' if normal >= APPEND_TARGET else 'MISSED'}",
        ),
        (
            f"durable appends via writer, synchronous=full ({events:,} events)",
            f"{full:,.0f} events/s",
            f"{full_batches} transactions",
            "(also survives power loss)",
        ),
        (
            "one transaction per event, no writer (2,000 events)",
            f"{single:,.0f} events/s",
            "2,000 transactions",
            "(what group commit saves)",
        ),
        (
            "bulk read of a 10,000-event session (median of 5)",
            f"{read:,.0f} events/s",
            "iter_events, 1,000/batch",
            f">= {READ_TARGET:,}: {'ok' if read >= READ_TARGET else 'MISSED'}",
        ),
        (
            "file size after two 5,000-event turns",
            f"{size / 1e6:.2f} MB",
            f"payloads {payload_bytes / 1e6:.2f} MB ({mean_payload:.0f} B mean)",
            "JSON-file store: 2.7 MB",
        ),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    header = ("measure", "result", "detail", "target")
    widths = [max(w, len(h)) for w, h in zip(widths, header, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))

    print(
        f"accord.store benchmark ({backend}, SQLite {sqlite3.sqlite_version},"
        f" Python {'.'.join(map(str, sys.version_info[:3]))})"
    )
    print(line(header))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--events", type=int, default=50_000, help="events per append run")
    args = parser.parse_args()
    anyio.run(main, args.events, args.backend, backend=args.backend)

"""The fault test: kill -9 a process in the middle of a streaming turn, then reopen the file.

Everything the child reported as committed must be in the file, the file must open cleanly
and pass SQLite's integrity check, and a new process must be able to carry on the session.
"""

from __future__ import annotations

import signal
import sqlite3
import sys
from pathlib import Path

import anyio
import orjson
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from helpers.processes import child_env
from helpers.timeouts import TIMEOUT

from accord.store import SqliteSessionStore, iter_events

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.subprocess,
    pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL"),
]

_CHILD = Path(__file__).with_name("_store_crash_child.py")
#: Committed seqs to see from the child before killing it: a few hundred, mid-stream.
_SEEN_BEFORE_KILL = 300


async def _run_and_kill(path: Path, backend: str) -> list[int]:
    """Run the child until it has reported enough seqs, SIGKILL it, return every seq it
    reported (including those still in the pipe when it died)."""
    reported: list[int] = []
    process = await anyio.open_process(
        [sys.executable, str(_CHILD), str(path), "s-crash", backend],
        env=child_env(_CHILD),
        stderr=None,
    )
    async with process:
        assert process.stdout is not None
        lines = BufferedByteReceiveStream(process.stdout)
        while len(reported) < _SEEN_BEFORE_KILL:
            reported.append(int(await lines.receive_until(b"\n", 32)))
        process.send_signal(signal.SIGKILL)
        while True:
            try:
                reported.append(int(await lines.receive_until(b"\n", 32)))
            except (anyio.EndOfStream, anyio.IncompleteRead):
                break  # a line cut short by the kill was never complete: ignore it
        assert await process.wait() == -signal.SIGKILL
    return reported


def _integrity(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        db.close()


async def test_kill_9_during_a_streaming_turn_loses_nothing_committed(
    tmp_path: Path, anyio_backend: str
) -> None:
    path = tmp_path / "crash.sqlite3"
    reported: list[int] = []
    with anyio.fail_after(TIMEOUT):
        for _ in range(2):  # the second run resumes the session the first one left behind
            reported += await _run_and_kill(path, anyio_backend)

            async with SqliteSessionStore(path) as store:
                session = await store.get_session("s-crash")
                assert session is not None
                stored = [e async for batch in iter_events(store, "s-crash") for e in batch]
            seqs = [event.seq for event in stored]
            assert seqs == list(range(1, session.last_seq + 1))
            assert set(reported) <= set(seqs)
            assert max(reported) <= session.last_seq
            for event in stored:
                assert orjson.loads(event.payload)["content"]["text"].endswith(str(event.seq))
            assert _integrity(path) == "ok"

    assert reported == sorted(set(reported))  # reported in order, each once, across both runs

"""Several processes race to claim the same sessions at the same instant: exactly one of them
wins each session, and every process is told the same winner (SQLite file and PostgreSQL)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from _store_support import record
from helpers.postgres import fresh_schema
from helpers.processes import child_env
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.store import PostgresSessionStore, SessionStore, SqliteSessionStore

pytestmark = [
    pytest.mark.anyio,
    # The children do the racing; the parent only prepares the store (once is enough).
    pytest.mark.asyncio_only("one backend is enough for the parent"),
    pytest.mark.subprocess,
]

_CHILD = Path(__file__).with_name("_store_claim_child.py")
_PROCESSES = 6
_SESSIONS = [f"race-{n}" for n in range(8)]


@contextmanager
def _database(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "postgres":
        with fresh_schema() as url:
            yield url
    else:
        yield str(tmp_path / "sessions.sqlite3")


def _open(kind: str, database: str) -> SessionStore:
    return PostgresSessionStore(database) if kind == "postgres" else SqliteSessionStore(database)


def _race(database: str, kind: str) -> list[dict[str, str]]:
    """Start the children, let them all open the store, say go to all at once; return what
    each was told, session -> holder."""
    children = [
        subprocess.Popen(
            [sys.executable, str(_CHILD), kind, database, f"owner-{n}", *_SESSIONS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(_CHILD),
        )
        for n in range(_PROCESSES)
    ]
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        told: list[dict[str, str]] = []
        for child in children:
            out, _ = child.communicate(
                timeout=SCENARIO_TIMEOUT
            )  # children race on a loaded machine
            assert child.returncode == 0
            told.append(dict(line.split(" ", 1) for line in out.splitlines()))
        return told
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=TIMEOUT)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_processes_racing_for_a_session_agree_on_one_winner(
    kind: str, tmp_path: Path
) -> None:
    with _database(kind, tmp_path) as database:
        async with _open(kind, database) as store:
            for session_id in _SESSIONS:
                await store.create_session(record(session_id))
        told = await anyio.to_thread.run_sync(_race, database, kind)
        async with _open(kind, database) as store:
            for session_id in _SESSIONS:
                holders = {answers[session_id] for answers in told}
                assert len(holders) == 1, f"{session_id}: processes disagree: {holders}"
                (winner,) = holders
                assert winner in {f"owner-{n}" for n in range(_PROCESSES)}
                # The store says so too: the winner renews, anyone else is refused.
                loser = next(f"owner-{n}" for n in range(_PROCESSES) if f"owner-{n}" != winner)
                assert not (await store.claim_session(session_id, loser, lease_seconds=5)).held_by(
                    loser
                )
                assert (await store.claim_session(session_id, winner, lease_seconds=5)).held_by(
                    winner
                )

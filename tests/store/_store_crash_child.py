"""Child process of the kill -9 test: streams events into a session until it is killed.

Usage: ``python _store_crash_child.py DATABASE SESSION_ID BACKEND``. Opens (or resumes) the session,
then appends message deltas as fast as it can through a ``GroupCommitWriter`` and prints each
seq on its own line once it is committed, which is what the runtime does before showing an
event to a client. It never exits by itself.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime

import anyio
from _store_support import delta_payload

from accord.store import GroupCommitWriter, SessionRecord, SqliteSessionStore, StoredEvent


async def main(path: str, session_id: str) -> None:
    async with SqliteSessionStore(path) as store:
        existing = await store.get_session(session_id)
        if existing is None:
            now = datetime.now(UTC)
            await store.create_session(
                SessionRecord(session_id=session_id, cwd="/crash", created_at=now, updated_at=now)
            )
            seq = 0
        else:
            seq = existing.last_seq

        async def report(batch: Sequence[StoredEvent]) -> None:
            sys.stdout.write("".join(f"{event.seq}\n" for event in batch))
            sys.stdout.flush()

        async with GroupCommitWriter(store, report, max_pending=512) as writer:
            while True:
                seq += 1
                await writer.append(
                    StoredEvent(
                        session_id=session_id,
                        seq=seq,
                        epoch=0,
                        turn_id="turn-crash",
                        agent_id="root",
                        kind="text_chunk",
                        layer="transcript",
                        payload=delta_payload(seq),
                        created_at=datetime.now(UTC),
                    )
                )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], backend=sys.argv[3])

"""Child process of the claim race: opens the store, waits for "go", claims sessions.

Usage: ``python _store_claim_child.py KIND DATABASE OWNER SESSION_ID...`` (KIND: ``sqlite`` or
``postgres``). Prints ``ready`` once the store is open, waits for a line on stdin, then claims
every session in turn for OWNER and prints ``<session id> <holder>`` for each.
"""

from __future__ import annotations

import sys

import anyio

from accord.store import PostgresSessionStore, SessionStore, SqliteSessionStore


async def main(kind: str, database: str, owner: str, session_ids: list[str]) -> None:
    store: SessionStore = (
        PostgresSessionStore(database) if kind == "postgres" else SqliteSessionStore(database)
    )
    async with store:
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        for session_id in session_ids:
            claim = await store.claim_session(session_id, owner, lease_seconds=60)
            print(session_id, claim.owner, flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])

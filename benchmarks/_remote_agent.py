"""The agent of ``bench_remote.py``: accord's runtime with a scripted engine, over stdio or the
network, so the two transports are compared with everything else equal.

A prompt whose text is a number N streams N message chunks (``Stream(count=N)``); the store is
in memory. Run ``python benchmarks/_remote_agent.py stdio`` (ACP on stdin/stdout) or
``python benchmarks/_remote_agent.py listen`` (ACP at ``ws://127.0.0.1:PORT/acp``, token from
``ACCORD_TOKEN``; prints ``listening PORT`` on stdout once ready).
"""

from __future__ import annotations

import functools
import os
import sys

import anyio

from accord.agent import AgentRuntime
from accord.remote import AccessPolicy, ServerLimits, serve_remote
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine, ScriptStep, Stream
from accord.transports import Transport, stdio_transport


def _respond(text: str) -> list[ScriptStep]:
    return [Stream(count=int(text) if text.strip().isdigit() else 1, prefix="chunk")]


async def main(mode: str) -> None:
    store = MemorySessionStore()
    engine = ScriptedEngine([], respond=_respond)

    async def serve(transport: Transport) -> None:
        await AgentRuntime(engine, store=store).serve(transport)

    if mode == "stdio":
        await serve(stdio_transport())
        return
    policy = AccessPolicy.build(os.environ["ACCORD_TOKEN"], loopback=True)
    limits = ServerLimits(max_connections_per_token=5000, idle_timeout=3600)
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            functools.partial(
                serve_remote, serve, host="127.0.0.1", port=0, policy=policy, limits=limits
            )
        )
        print(f"listening {port}", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])

"""A served scripted agent as a real process: ``python _remote_served_agent.py SCENARIO GRACE``.

One :class:`AgentRuntime` (one store, one engine) behind ``serve_remote`` on a loopback port,
as ``accord serve --listen`` runs it. Prints ``listening on PORT`` once it listens, then reads
commands from stdin, one a line: ``release`` opens the scripted turn's gate (a step waiting
for it goes on), ``live`` prints the number of live sessions as ``live N``. The tests drive it
with real sockets and this pipe only.
"""

from __future__ import annotations

import functools
import sys

import anyio

from accord.agent import AgentRuntime
from accord.remote import AccessPolicy, ServerLimits, serve_remote
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, ScriptStep, Stream, UseTool, WaitFor

TOKEN = "e2e-test-token-0123456789abcdef"


def turns(scenario: str, gate: anyio.Event) -> list[list[ScriptStep]]:
    """The scripted turns of each scenario (one turn per prompt)."""
    if scenario == "stream":
        return [[Stream(count=40, prefix="w"), Say("end of turn")]]
    if scenario == "ask":
        return [[UseTool(title="Deploy", kind="execute", ask=True), Say("after the question")]]
    if scenario == "cut":
        return [[Stream(count=20, prefix="a"), WaitFor(gate), Stream(count=20, prefix="b")]]
    if scenario == "slow":
        # Large chunks, so a client that stops reading fills its socket and its queue.
        return [[Say("warm up")], [Stream(count=1500, prefix="x" * 4000), Say("end of turn")]]
    if scenario == "grace":
        return [[Say("kept")]]
    raise SystemExit(f"unknown scenario {scenario!r}")


async def main(scenario: str, grace: float) -> None:
    gate = anyio.Event()
    engine = ScriptedEngine(turns(scenario, gate))
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=grace, attachment_queue=16)
    policy = AccessPolicy.build(TOKEN, loopback=True)
    limits = ServerLimits(sse_buffer=16)
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            functools.partial(
                serve_remote, runtime.serve, host="127.0.0.1", port=0, policy=policy, limits=limits
            )
        )
        print(f"listening on {port}", flush=True)
        stdin = anyio.wrap_file(sys.stdin)
        async for line in stdin:
            command = line.strip()
            if command == "release":
                gate.set()
                print("released", flush=True)
            elif command == "live":
                print(f"live {runtime.statistics().live_sessions}", flush=True)
        await runtime.aclose()
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], float(sys.argv[2]))

"""A scripted agent served over the network (``accord.remote.serve_remote``) on a loopback
port, in this process: for the remote tests and the official SDK's remote transport tests.

Every connection gets its own ``AgentRuntime`` on one shared memory store and one
``ScriptedEngine``; the bearer token is :data:`TOKEN`.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from accord.agent import AgentRuntime
from accord.engines import EngineCapabilities
from accord.remote import AccessPolicy, ServerLimits, serve_remote
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine, ScriptStep
from accord.transports import Transport

TOKEN = "test-token-0123456789abcdef"


@dataclass
class Served:
    """A running server: its port and what its connections did."""

    port: int
    engine: ScriptedEngine
    served: list[Transport] = field(default_factory=list[Transport])

    def url(self, scheme: str = "ws") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/acp"


@asynccontextmanager
async def served_agent(
    turns: Sequence[Sequence[ScriptStep]] = (),
    *,
    limits: ServerLimits | None = None,
    origins: Sequence[str] = (),
    hosts: Sequence[str] = (),
    ssl_context: ssl.SSLContext | None = None,
    capabilities: EngineCapabilities | None = None,
) -> AsyncIterator[Served]:
    """Serve a scripted agent (one runtime per connection, one store) on a loopback port."""
    store = MemorySessionStore()
    engine = ScriptedEngine(
        [list(t) for t in turns], capabilities=capabilities or EngineCapabilities()
    )
    state = Served(0, engine)

    async def handler(transport: Transport) -> None:
        state.served.append(transport)
        await AgentRuntime(engine, store=store).serve(transport)

    policy = AccessPolicy.build(TOKEN, origins=origins, loopback=True, hosts=hosts)
    async with anyio.create_task_group() as tg:
        state.port = await tg.start(
            functools.partial(
                serve_remote,
                handler,
                host="127.0.0.1",
                port=0,
                policy=policy,
                limits=limits,
                ssl_context=ssl_context,
            )
        )
        yield state
        tg.cancel_scope.cancel()

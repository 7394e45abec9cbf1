"""Property-based fuzzing of both roles over real pipes: whatever arrives, the peer holds.

Each example sends a few lines to a live peer over a real OS pipe pair: messages shaped by the
official schema (``_fuzz_schema_strategies``), most of them mutated into something invalid. Then
a probe request. The properties, for the accord agent runtime (scripted engine) and for the
accord client library facing a hostile agent:

* the peer never crashes and keeps serving (the probe is answered);
* every line it writes is JSON;
* every request it could read (valid JSON-RPC with an id) is answered exactly once, and no
  id is answered twice.

CI runs a bounded profile (``ACCORD_FUZZ=ci``, the default); ``ACCORD_FUZZ=long`` runs far more
examples (the command is in SECURITY.md).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from _fuzz_schema_strategies import methods, mutated_line, params_for
from helpers.timeouts import TIMEOUT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accord.agent import AgentRuntime
from accord.client import AllowAll, connect
from accord.jsonrpc import is_request_id
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine, pipe_transport_pair
from accord.transports import MalformedFrame, StreamTransport, decode_line

settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.register_profile(
    "long", max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("ACCORD_FUZZ", "ci"))

pytestmark = pytest.mark.wire_unchecked("fuzzing sends invalid messages on purpose")

PROBE = "probe\u2603final"


@st.composite
def _lines(draw: st.DrawFn, side: str, session_id: str | None) -> list[bytes]:
    out: list[bytes] = []
    for index in range(draw(st.integers(1, 4))):
        method = draw(st.sampled_from(sorted(methods(side))))
        params = draw(params_for(method, side))
        if session_id is not None and isinstance(params, dict) and draw(st.booleans()):
            params["sessionId"] = session_id  # reach the real handlers, not only -32002
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": index, "method": method}
        message["params"] = params
        out.append(draw(mutated_line(message)))
    return out


def _expected_ids(lines: list[bytes]) -> list[Any]:
    """Ids of the lines the peer can read as requests: each must be answered exactly once."""
    ids: list[Any] = []
    for line in lines:
        message = decode_line(line.rstrip(b"\n"))
        if (
            isinstance(message, dict)
            and message.get("jsonrpc") == "2.0"
            and type(message.get("method")) is str
            and is_request_id(message.get("id"))
        ):
            ids.append(message["id"])
    return [i for i, n in Counter(ids).items() if n == 1]


async def _exchange(raw: StreamTransport, lines: list[bytes], probe: dict[str, Any]) -> None:
    """Send the lines and the probe; check what comes back until all is answered."""
    for line in lines:
        await raw._writer.send(line)
    await raw.send(probe)
    expected = set(_expected_ids(lines)) | {PROBE}
    answered: Counter[Any] = Counter()
    with anyio.fail_after(TIMEOUT):
        while not expected <= set(answered):
            message = await raw.receive()
            assert not isinstance(message, MalformedFrame), (
                f"the peer wrote a non-JSON line: {message}"
            )
            if (
                isinstance(message, dict)
                and "method" not in message
                and message.get("id") is not None
            ):
                answered[message["id"]] += 1
                # An id the lines use twice is two requests: answering both is right.
                if message["id"] in expected:
                    assert answered[message["id"]] == 1, f"id {message['id']!r} answered twice"
            elif isinstance(message, dict) and "id" in message and "method" in message:
                await raw.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})


@given(lines=_lines("agent", None))
def test_the_agent_runtime_survives_anything(lines: list[bytes]) -> None:
    async def run() -> None:
        agent_end, raw = pipe_transport_pair()
        runtime = AgentRuntime(ScriptedEngine(), store=MemorySessionStore())
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.serve, agent_end)
            init = {"jsonrpc": "2.0", "id": "init", "method": "initialize"}
            init["params"] = {"protocolVersion": 1}
            await raw.send(init)
            assert (await raw.receive())["id"] == "init"
            probe = {"jsonrpc": "2.0", "id": PROBE, "method": "session/list", "params": {}}
            await _exchange(raw, lines, probe)
            await raw.aclose()

    anyio.run(run)


@given(lines=_lines("client", "s1"))
def test_the_client_runtime_survives_a_hostile_agent(
    lines: list[bytes], tmp_path_factory: Any
) -> None:
    root: Path = tmp_path_factory.mktemp("fuzz-root")

    async def run() -> None:
        client_end, raw = pipe_transport_pair()

        async def agent() -> None:
            request = await raw.receive()
            await raw.send(
                {"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1}}
            )
            request = await raw.receive()
            await raw.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}})

        async with anyio.create_task_group() as tg:
            tg.start_soon(agent)
            async with connect(client_end, fs=True, permission_policy=AllowAll()) as conn:
                await conn.new_session(root)
                probe = {"jsonrpc": "2.0", "id": PROBE, "method": "_probe", "params": {}}
                await _exchange(raw, lines, probe)
                assert not conn.statistics().connection.closed

    anyio.run(run)

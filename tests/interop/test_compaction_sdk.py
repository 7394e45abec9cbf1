"""Compaction updates with the official TypeScript SDK (1.9.0 and 2.4.0) as the client.

Both installed versions carry the unstable compaction kinds in the schema their ``client()``
validates with: ``compaction_update`` / ``compaction_summary_chunk`` session updates,
``CompactionStatus`` (in_progress, completed, failed, cancelled) and
``ClientSessionCapabilities.compaction``. ``compaction_sdk/compaction_client.mjs`` drives the
accord coder (its model: accord's fake OpenAI server on loopback) through ``/compact`` and a
``session/load``, running every ``session/update`` through the SDK's own validator: with the
capability advertised the compaction arrives as its updates, live and replayed, each accepted
unchanged; without it only the ordinary marker message.

Install the SDK with ``scripts/fetch_interop_agents.sh``; without it these tests skip.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.coder import CoderConfig, CoderRuntime
from accord.engines import MODEL_PURPOSE_HEADER
from accord.events import COMPACTED_MARKER
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedUsage
from accord.transports import spawn_agent

pytestmark = [pytest.mark.interop, pytest.mark.subprocess]

Program = Callable[[str], list[str]]
SUMMARY = "SUMMARY-OF-THE-EARLY-TURNS"


def _reply(text: str) -> ScriptedReply:
    return ScriptedReply(text=[text], usage=ScriptedUsage(prompt_tokens=100, completion_tokens=20))


async def _run(program: Program, mode: str, tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    """Serve the coder to the SDK client in ``mode``; its result and the compact requests."""
    result = tmp_path / "result.json"
    side = {"compact": [ScriptedReply(text=[SUMMARY])]}
    script = [_reply("one"), _reply("two"), _reply("three"), _reply("four")]
    with FakeOpenAIServer(script, models=("qwen-local",), side_scripts=side) as model:
        config = CoderConfig(models=("qwen-local",), base_url=model.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            with anyio.fail_after(TIMEOUT):
                command = program("compaction_sdk/compaction_client.mjs")
                async with spawn_agent([*command, str(result), mode]) as pipes:
                    await runtime.serve(pipes)
        finally:
            await runtime.aclose()
        asked = [
            json.dumps(r.body)
            for r in model.side_requests
            if r.headers.get(MODEL_PURPOSE_HEADER) == "compact"
        ]
    return json.loads(result.read_text()), asked


def _kinds(updates: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """The compaction updates as (kind, status or summary text)."""
    return [
        (u["sessionUpdate"], u.get("status") or u.get("content", {}).get("text"))
        for u in updates
        if u["sessionUpdate"].startswith("compaction")
    ]


@pytest.fixture
def anyio_backend() -> str:
    """The coder's model turns are pydantic-ai's, which runs on asyncio only."""
    return "asyncio"


@pytest.fixture(params=["1.9.0", "2.4.0"])
def sdk_program(request: pytest.FixtureRequest) -> Program:
    """``program(name)`` with either installed SDK version."""
    return request.getfixturevalue("sdk1_program" if request.param == "1.9.0" else "sdk2_program")


@pytest.mark.anyio
async def test_the_sdk_validates_every_compaction_update_of_the_coder(
    sdk_program: Program, tmp_path: Path
) -> None:
    answer, asked = await _run(sdk_program, "advertised", tmp_path)
    assert answer["mismatched"] == []
    *before, compact, after = answer["turns"]
    assert [t["stopReason"] for t in answer["turns"]] == ["end_turn"] * 5
    assert [t["text"] for t in (*before, after)] == ["one", "two", "three", "four"]
    assert compact["text"] == ""
    live = _kinds(compact["updates"])
    assert live == [
        ("compaction_update", "in_progress"),
        ("compaction_summary_chunk", SUMMARY),
        ("compaction_update", "completed"),
    ]
    ids = {u["compactionId"] for u in compact["updates"] if "compactionId" in u}
    assert len(ids) == 1
    assert _kinds(after["updates"]) == []
    # the load replays the compaction with the same id, also through the SDK's validator
    replayed = [u for u in answer["replay"] if u["sessionUpdate"].startswith("compaction")]
    assert {u["compactionId"] for u in replayed} == ids
    assert ("compaction_summary_chunk", SUMMARY) in _kinds(replayed)
    assert _kinds(replayed)[-1] == ("compaction_update", "completed")
    assert COMPACTED_MARKER not in answer["replayText"]
    [request] = asked
    assert "keep the names" in request


@pytest.mark.anyio
async def test_an_sdk_client_without_the_capability_gets_the_marker(
    sdk_program: Program, tmp_path: Path
) -> None:
    answer, _ = await _run(sdk_program, "plain", tmp_path)
    assert answer["mismatched"] == []
    compact = answer["turns"][3]
    assert compact["text"] == COMPACTED_MARKER
    every = [u for t in answer["turns"] for u in t["updates"]] + answer["replay"]
    assert _kinds(every) == []
    assert COMPACTED_MARKER in answer["replayText"]

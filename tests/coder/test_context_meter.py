"""The coder's context meter over ACP: ``usage_update`` for a model behind ``--base-url``.

The window is the configured one, else what the server's ``/v1/models`` reports, else
pydantic-ai's; with none of them there is no meter. A model on a server genai-prices does
not know has no cost, even when it is named like a priced one; a priced model has one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.schema import Cost
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedUsage

pytestmark = pytest.mark.anyio

USED = ScriptedUsage(prompt_tokens=1500, completion_tokens=20)


def replies(count: int = 1) -> list[ScriptedReply]:
    return [ScriptedReply(text=["ok"], usage=USED) for _ in range(count)]


async def meters(
    config: CoderConfig, project: Path, prompts: int = 1
) -> list[tuple[int | None, int | None, Cost | None]]:
    """``(used, size, cost)`` as the client's view shows them after each prompt."""
    seen: list[tuple[int | None, int | None, Cost | None]] = []
    runtime = CoderRuntime(config, store=MemorySessionStore())
    try:
        async with connect(runtime, cwd=project) as connection:
            session = await connection.new_session(project)
            for _ in range(prompts):
                result = await session.prompt("hello")
                assert result.text == "ok"
                view = session.view
                seen.append((view.usage_used, view.usage_size, view.usage_cost))
    finally:
        await runtime.aclose()
    return seen


def local(server: FakeOpenAIServer, **fields: Any) -> CoderConfig:
    return CoderConfig(models=("qwen-local",), base_url=server.base_url, **fields)


async def test_a_configured_window_is_the_meter_and_nobody_is_asked(project: Path) -> None:
    info = {"qwen-local": {"max_model_len": 4096}}
    with FakeOpenAIServer(replies(), models=("qwen-local",), model_info=info) as server:
        assert await meters(local(server, context_window=32768), project) == [(1520, 32768, None)]
        assert server.info_requests == ()


async def test_the_window_the_server_reports_is_the_meter(project: Path) -> None:
    info = {"qwen-local": {"owned_by": "vllm", "max_model_len": 16384}}
    with FakeOpenAIServer(replies(3), models=("qwen-local",), model_info=info) as server:
        config = local(server)
        assert await meters(config, project, prompts=2) == [(1520, 16384, None)] * 2
        assert await meters(config, project) == [(1520, 16384, None)]  # another session
        assert server.info_requests == (("GET", "/v1/models"),)  # asked once per process


async def test_no_meter_when_nothing_knows_the_window(project: Path) -> None:
    with FakeOpenAIServer(replies(), models=("qwen-local",)) as server:
        assert await meters(local(server), project) == [(None, None, None)]


async def test_a_model_on_an_unknown_server_has_no_cost_even_named_like_a_priced_one(
    project: Path,
) -> None:
    with FakeOpenAIServer(replies(), models=("gpt-4o",)) as server:
        config = CoderConfig(models=("openai:gpt-4o",), base_url=server.base_url)
        # The window is pydantic-ai's (genai-prices knows gpt-4o's); the price is not: the
        # server on loopback is not OpenAI, and nobody bills its tokens by OpenAI's list.
        assert await meters(config, project) == [(1520, 128_000, None)]


async def test_a_priced_model_has_a_cumulative_cost(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hosted model as configured (no --base-url), its provider pointed at the fake. The
    # coder builds a model once per process: no other test names openai-chat:gpt-4o, so it is built
    # here, with this server's URL.
    name = "gpt-4o"
    with FakeOpenAIServer(replies(2), models=(name,)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        config = CoderConfig(models=(f"openai-chat:{name}",))  # chat completions
        [first, second] = await meters(config, project, prompts=2)
    assert first[:2] == second[:2] == (1520, 128_000)
    assert first[2] is not None and second[2] is not None
    assert first[2].currency == "USD" and first[2].amount > 0
    assert second[2].amount == pytest.approx(2 * first[2].amount)  # the session's total

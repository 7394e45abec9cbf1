"""The coder's two other kinds of route set with ``providers/set``, end to end on loopback:
``anthropic`` to accord's fake Anthropic Messages API (:class:`accord.testing.FakeAnthropicServer`)
and ``openai`` with a Responses model name (``openai:``) to the fake OpenAI server's
``/v1/responses``. After ``providers/set``, the next session's model request arrives at the
route with the key and headers given, and its streamed reply reaches the client; the key stays
out of the log. (``tests/coder/test_providers.py`` covers the chat-completions route, the
keyring, the store and bad input.)
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from helpers.memory_keyring import memory_keyring

from accord.client import TurnResult, connect
from accord.coder import CoderConfig, CoderRuntime
from accord.schema import SetProviderRequest
from accord.testing import FakeAnthropicServer, FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.anyio

_KEY = "sk-route-test-5d2b7e90c4"


async def _close_anthropic_clients() -> None:
    """Close the route's client (kept once per process and route) while its event loop runs:
    the ``anthropic`` SDK closes a collected client on whatever loop runs then, which in a
    test process is the next test's."""
    import gc

    from anthropic import AsyncAnthropic

    for client in [o for o in gc.get_objects() if isinstance(o, AsyncAnthropic)]:
        await client.close()


async def _prompt_through(route: SetProviderRequest, model: str, project: Path) -> TurnResult:
    """``providers/set`` with ``route``, then one prompt in a new session of a coder whose
    model is ``model`` (a name no other test uses: the coder builds a model once per process
    and route); what the prompt returned."""
    runtime = CoderRuntime(CoderConfig(models=(model,)))
    try:
        async with connect(runtime, cwd=project) as connection:
            await connection.calls.set_provider(route)
            session = await connection.new_session(project)
            return await session.prompt("say something")
    finally:
        await runtime.aclose()
        await _close_anthropic_clients()


async def test_an_anthropic_route_carries_the_next_sessions_requests(
    project: Path,
    config_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with (
        memory_keyring(monkeypatch),
        FakeAnthropicServer([ScriptedReply(text=["from ", "claude"])]) as server,
    ):
        route = SetProviderRequest(
            provider_id="anthropic",
            api_type="anthropic",
            base_url=server.base_url,
            headers={"x-api-key": _KEY, "X-Team": "accord"},
        )
        result = await _prompt_through(route, "anthropic:claude-route-test", project)
    assert result.stop_reason == "end_turn"
    assert result.text == "from claude"
    (request,) = server.requests
    assert request.headers["x-api-key"] == _KEY
    assert request.headers["x-team"] == "accord"
    assert request.body["model"] == "claude-route-test"
    assert request.body["stream"] is True
    assert _KEY not in caplog.text


async def test_an_openai_route_carries_a_responses_models_requests(
    project: Path,
    config_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with (
        memory_keyring(monkeypatch),
        FakeOpenAIServer([ScriptedReply(text=["through ", "responses"])]) as server,
    ):
        route = SetProviderRequest(
            provider_id="openai",
            api_type="openai",
            base_url=server.base_url,
            headers={"Authorization": f"Bearer {_KEY}"},
        )
        result = await _prompt_through(route, "openai:responses-route-test", project)
    assert result.stop_reason == "end_turn"
    assert result.text == "through responses"
    (request,) = server.requests
    assert request.path.endswith("/responses")
    assert request.headers["authorization"] == f"Bearer {_KEY}"
    assert request.body["model"] == "responses-route-test"
    assert _KEY not in caplog.text

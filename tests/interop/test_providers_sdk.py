"""Model providers (unstable ``providers/*``) with the official TypeScript SDK as the client.

Both installed versions speak them: 1.9.0's ``ClientSideConnection`` has
``unstable_listProviders`` / ``unstable_setProvider`` / ``unstable_disableProvider``; 2.4.0
has the methods in its unstable schema and method table (``methods.agent.providers``) but no
typed calls, so its ``client()`` sends them by name. ``providers_sdk/providers_client.mjs``
drives the accord coder (its model: accord's fake OpenAI server on loopback, reached only
through the route the client sets) and runs every answer through the SDK's own validator.

The coder's keyring is an in-memory one and its configuration directory the test's own.
Install the SDK with ``scripts/fetch_interop_agents.sh``; without it these tests skip.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.memory_keyring import memory_keyring
from helpers.timeouts import TIMEOUT

from accord.coder import CoderConfig, CoderRuntime
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply
from accord.transports import spawn_agent

pytestmark = [pytest.mark.interop, pytest.mark.subprocess]

Program = Callable[[str], list[str]]
#: A chat-completions model name no other test uses: the coder builds a model once per process.
_MODEL = "openai-chat:interop-providers-model"
_KEY = "sk-interop-providers-31c7"


@pytest.fixture
def anyio_backend() -> str:
    """The coder's model turns are pydantic-ai's, which runs on asyncio only."""
    return "asyncio"


#: The client API the script uses with each version.
_API = {"1.9.0": "ClientSideConnection", "2.4.0": "client() by method name"}


@pytest.fixture(params=["1.9.0", "2.4.0"])
def sdk_program(request: pytest.FixtureRequest) -> tuple[str, Program]:
    """The SDK version and ``program(name)`` with it."""
    fixture = "sdk1_program" if request.param == "1.9.0" else "sdk2_program"
    return request.param, request.getfixturevalue(fixture)


def _routes(providers: list[dict[str, Any]]) -> dict[str, str | None]:
    """Each provider's base URL (``None``: disabled)."""
    routes: dict[str, str | None] = {}
    for provider in providers:
        current: dict[str, Any] | None = provider.get("current")
        routes[provider["providerId"]] = None if current is None else current["baseUrl"]
    return routes


@pytest.mark.anyio
async def test_the_sdk_client_lists_sets_and_disables_the_coders_providers(
    sdk_program: tuple[str, Program],
    tmp_path: Path,
    config_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    version, program = sdk_program
    result = tmp_path / "result.json"
    with (
        memory_keyring(monkeypatch) as keyring,
        FakeOpenAIServer([ScriptedReply(text=["routed through the SDK's provider"])]) as model,
    ):
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            with anyio.fail_after(TIMEOUT * 2):
                command = program("providers_sdk/providers_client.mjs")
                async with spawn_agent([*command, str(result), model.base_url, _KEY]) as pipes:
                    await runtime.serve(pipes)
        finally:
            await runtime.aclose()
        requests = list(model.requests)
        kept = dict(keyring.entries)
    answer = json.loads(result.read_text())
    assert answer["api"] == _API[version]
    assert answer["mismatched"] == []
    assert "providers" in answer["agentCapabilities"]
    first, after_set, after_disable = answer["lists"]
    assert [(p["providerId"], p["required"]) for p in first] == [
        ("openai", True),
        ("anthropic", False),
    ]
    assert _routes(after_set)["openai"] == model.base_url
    assert answer["setAnswer"] == {} and answer["disableAnswer"] == {}
    # the session's model request went along the route, with the key the SDK sent
    assert answer["stopReason"] == "end_turn"
    assert answer["text"] == "routed through the SDK's provider"
    [request] = requests
    assert request.headers["authorization"] == f"Bearer {_KEY}"
    assert _KEY in kept[("accord", "providers/openai")]
    assert _routes(after_disable) == {"openai": model.base_url, "anthropic": None}
    # the default model's provider cannot be disabled: the SDK gets the agent's -32602
    assert answer["refused"]["code"] == -32602
    assert _KEY not in json.dumps(answer["lists"])

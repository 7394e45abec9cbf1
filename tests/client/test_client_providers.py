"""``ConnectedAgent.list_providers`` / ``set_provider`` / ``disable_provider`` (unstable
``providers/*``) against the coder, and refused before sending to an agent without them.

The coder runs in the process, on accord's fake OpenAI server on loopback; its keyring is an
in-memory one (``helpers.memory_keyring``) and its configuration directory the test's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.memory_keyring import memory_keyring

from accord.agent import AgentRuntime
from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.errors import LocalProtocolError, RequestError
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedEngine, ScriptedReply

pytestmark = pytest.mark.anyio

#: A chat-completions model name no other test uses: the coder builds a model once per process.
_MODEL = "openai-chat:client-providers-model"
_KEY = "sk-client-providers-5d1e"


@pytest.mark.asyncio_only("the coder (pydantic-ai) runs on asyncio only")
async def test_the_client_lists_sets_and_disables_the_coders_providers(
    tmp_path: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        memory_keyring(monkeypatch) as backend,
        FakeOpenAIServer([ScriptedReply(text=["via the route"])]) as server,
    ):
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=tmp_path) as connection:
                assert connection.supports("providers")
                providers = await connection.list_providers()
                assert [p.provider_id for p in providers] == ["openai", "anthropic"]
                assert [p.required for p in providers] == [True, False]

                await connection.set_provider(
                    "openai",
                    api_type="openai",
                    base_url=server.base_url,
                    api_key=_KEY,  # sent as a bearer token for an openai-type provider
                )
                assert _KEY in backend.entries[("accord", "providers/openai")]
                (openai, _) = await connection.list_providers()
                assert openai.current is not None and openai.current.base_url == server.base_url

                session = await connection.new_session(tmp_path)
                assert (await session.prompt("hi")).stop_reason == "end_turn"
                assert server.requests[0].headers["authorization"] == f"Bearer {_KEY}"

                with pytest.raises(RequestError) as empty:
                    await connection.set_provider(
                        "anthropic",
                        api_type="anthropic",
                        base_url="https://api.anthropic.com",
                        api_key="",  # sent as x-api-key for an anthropic-type provider
                    )
                assert empty.value.code == -32602
                assert "the key in header 'x-api-key' is empty" in empty.value.message

                await connection.disable_provider("anthropic")
                (_, anthropic) = await connection.list_providers()
                assert anthropic.current is None
                with pytest.raises(RequestError) as required:
                    await connection.disable_provider("openai")
                assert required.value.code == -32602
        finally:
            await runtime.aclose()


async def test_an_agent_without_providers_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    async with connect(AgentRuntime(ScriptedEngine()), cwd=tmp_path) as connection:
        assert not connection.supports("providers")
        with pytest.raises(LocalProtocolError, match="providers/list was not sent"):
            await connection.list_providers()
        with pytest.raises(LocalProtocolError, match="providers/set was not sent"):
            await connection.set_provider(
                "openai", api_type="openai", base_url="http://127.0.0.1:9/v1"
            )
        with pytest.raises(LocalProtocolError, match="providers/disable was not sent"):
            await connection.disable_provider("openai")
        # The agent answers the same methods -32601 when they are sent all the same.
        with pytest.raises(RequestError) as raw:
            await connection.calls.connection.request("providers/list", {})
        assert raw.value.code == -32601

"""The coder's model providers over ACP (unstable ``providers/list|set|disable``).

A client connected with :func:`accord.client.connect` lists the providers the coder routes
(``openai``, ``anthropic``: whether a key is configured, which serves the default model),
sets ``openai`` to accord's fake OpenAI server on loopback with a key, and the next
``session/new`` sends its model requests there with that key. The key goes to the keyring
(an in-memory one, ``helpers.memory_keyring``), never to the session store (the SQLite file is
read whole), a log record (``caplog`` at DEBUG) or ``providers.json``. Bad input is -32602 with
a clear message; the default model's provider cannot be disabled. Every message is
schema-checked by the suite's wire fixture. The configuration directory is the test's own.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from helpers.memory_keyring import memory_keyring

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.documents import Point
from accord.errors import RequestError
from accord.schema import (
    DisableProviderRequest,
    ListProvidersRequest,
    ProviderInfo,
    SetProviderRequest,
)
from accord.store import MemorySessionStore, SqliteSessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.anyio

#: A chat-completions model name no other test uses: the coder builds a model once per process.
_MODEL = "openai-chat:providers-test-model"
_KEY = "sk-providers-test-0f3c9a1e"


def _by_id(providers: list[ProviderInfo]) -> dict[str, ProviderInfo]:
    return {p.provider_id: p for p in providers}


async def test_set_routes_the_next_session_to_the_server_with_the_key_kept_in_the_keyring(
    project: Path,
    tmp_path: Path,
    config_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    database = tmp_path / "sessions.sqlite3"
    with (
        memory_keyring(monkeypatch) as backend,
        FakeOpenAIServer([ScriptedReply(text=["routed"])]) as server,
    ):
        async with SqliteSessionStore(database) as store:
            runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=store)
            try:
                async with connect(runtime, cwd=project) as connection:
                    assert connection.supports("providers")
                    listed = _by_id(
                        (await connection.calls.list_providers(ListProvidersRequest())).providers
                    )
                    assert list(listed) == ["openai", "anthropic"]
                    openai, anthropic = listed["openai"], listed["anthropic"]
                    assert openai.required and not anthropic.required
                    assert openai.meta is not None and anthropic.meta is not None
                    assert openai.meta["accord/inUse"] is True
                    assert openai.meta["accord/keyConfigured"] is False
                    assert anthropic.meta["accord/keyConfigured"] is False
                    assert openai.current is not None
                    assert openai.current.base_url == "https://api.openai.com/v1"
                    assert openai.supported == ["openai"]

                    await connection.calls.set_provider(
                        SetProviderRequest(
                            provider_id="openai",
                            api_type="openai",
                            base_url=server.base_url,
                            headers={"Authorization": f"Bearer {_KEY}", "X-Team": "accord"},
                        )
                    )
                    assert list(backend.entries) == [("accord", "providers/openai")]
                    assert _KEY in backend.entries[("accord", "providers/openai")]
                    settings = (config_home / "accord" / "providers.json").read_text()
                    assert _KEY not in settings and server.base_url in settings

                    listed = _by_id(
                        (await connection.calls.list_providers(ListProvidersRequest())).providers
                    )
                    current = listed["openai"].current
                    assert current is not None and current.base_url == server.base_url
                    assert listed["openai"].meta is not None
                    assert listed["openai"].meta["accord/keyConfigured"] is True

                    session = await connection.new_session(project)
                    result = await session.prompt("say something")
                    assert result.stop_reason == "end_turn"
                    (request,) = server.requests
                    assert request.headers["authorization"] == f"Bearer {_KEY}"
                    assert request.headers["x-team"] == "accord"
                    assert request.body["model"] == "providers-test-model"
            finally:
                await runtime.aclose()
    assert _KEY.encode() not in database.read_bytes()
    for extra in (Path(f"{database}-wal"), Path(f"{database}-shm")):
        if extra.exists():
            assert _KEY.encode() not in extra.read_bytes()
    assert _KEY not in caplog.text
    assert all(_KEY not in str(record.args) for record in caplog.records)


async def test_a_route_set_is_read_back_by_the_next_runtime(
    project: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with memory_keyring(monkeypatch) as backend:
        first = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            async with connect(first, cwd=project) as connection:
                await connection.calls.set_provider(
                    SetProviderRequest(
                        provider_id="anthropic",
                        api_type="anthropic",
                        base_url="http://127.0.0.1:9/anthropic/",
                        headers={"x-api-key": _KEY},
                    )
                )
        finally:
            await first.aclose()
        second = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            async with connect(second, cwd=project) as connection:
                listed = _by_id(
                    (await connection.calls.list_providers(ListProvidersRequest())).providers
                )
                current = listed["anthropic"].current
                assert current is not None
                assert current.base_url == "http://127.0.0.1:9/anthropic"
                assert current.api_type == "anthropic"
                assert listed["anthropic"].meta is not None
                assert listed["anthropic"].meta["accord/keyConfigured"] is True
                await connection.calls.disable_provider(
                    DisableProviderRequest(provider_id="anthropic")
                )
                assert backend.entries == {}
                listed = _by_id(
                    (await connection.calls.list_providers(ListProvidersRequest())).providers
                )
                assert listed["anthropic"].current is None
                assert listed["anthropic"].meta is not None
                assert listed["anthropic"].meta["accord/keyConfigured"] is False
        finally:
            await second.aclose()


async def test_a_disabled_provider_is_refused_to_new_sessions_and_set_enables_it_again(
    project: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        memory_keyring(monkeypatch),
        FakeOpenAIServer([ScriptedReply(text=["back"])]) as server,
    ):
        # The default model is anthropic's; the openai one is a second choice.
        config = CoderConfig(models=("anthropic:claude-providers-test", _MODEL))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-placeholder")
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                await connection.calls.disable_provider(
                    DisableProviderRequest(provider_id="openai")
                )
                listed = _by_id(
                    (await connection.calls.list_providers(ListProvidersRequest())).providers
                )
                assert listed["openai"].current is None
                assert listed["anthropic"].required
                session = await connection.new_session(project)
                with pytest.raises(RequestError) as refused:
                    await session.set_config_option("model", _MODEL)
                assert refused.value.code == -32602
                assert "disabled" in refused.value.message
                await connection.calls.set_provider(
                    SetProviderRequest(
                        provider_id="openai",
                        api_type="openai",
                        base_url=server.base_url,
                        headers={"Authorization": f"Bearer {_KEY}"},
                    )
                )
                again = await connection.new_session(project)
                await again.set_config_option("model", _MODEL)
                result = await again.prompt("hello")
                assert result.stop_reason == "end_turn"
                assert server.requests[0].headers["authorization"] == f"Bearer {_KEY}"
        finally:
            await runtime.aclose()


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        (
            SetProviderRequest(provider_id="mistral", api_type="openai", base_url="http://h/v1"),
            "unknown provider 'mistral'",
        ),
        (
            SetProviderRequest(
                provider_id="openai",
                api_type="openai",
                base_url="http://h/v1",
                headers={"Authorization": "Bearer "},
            ),
            "the key in header 'Authorization' is empty",
        ),
        (
            SetProviderRequest(
                provider_id="anthropic",
                api_type="anthropic",
                base_url="http://h",
                headers={"x-api-key": "  "},
            ),
            "the key in header 'x-api-key' is empty",
        ),
        (
            SetProviderRequest(provider_id="openai", api_type="bedrock", base_url="http://h/v1"),
            "speaks 'openai', not 'bedrock'",
        ),
        (
            SetProviderRequest(provider_id="openai", api_type="openai", base_url="ftp://h/v1"),
            "baseUrl must be an http:// or https:// URL",
        ),
        (
            SetProviderRequest(
                provider_id="openai", api_type="openai", base_url=f"http://u:{_KEY}@h/v1"
            ),
            "baseUrl must not carry credentials",
        ),
    ],
    ids=["unknown-id", "empty-bearer", "empty-api-key", "protocol", "scheme", "credentials"],
)
async def test_bad_set_requests_are_refused_with_a_clear_message(
    project: Path,
    config_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    request_: SetProviderRequest,
    words: str,
) -> None:
    with memory_keyring(monkeypatch) as backend:
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                with pytest.raises(RequestError) as refused:
                    await connection.calls.set_provider(request_)
                assert refused.value.code == -32602
                assert words in refused.value.message
                assert _KEY not in refused.value.message
                assert _KEY not in str(refused.value.data)
        finally:
            await runtime.aclose()
        assert backend.entries == {}
        assert not (config_home / "accord" / "providers.json").exists()


async def test_disabling_an_unknown_or_the_default_models_provider_is_refused(
    project: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with memory_keyring(monkeypatch):
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                with pytest.raises(RequestError) as unknown:
                    await connection.calls.disable_provider(
                        DisableProviderRequest(provider_id="mistral")
                    )
                assert unknown.value.code == -32602
                assert "unknown provider 'mistral'" in unknown.value.message
                with pytest.raises(RequestError) as required:
                    await connection.calls.disable_provider(
                        DisableProviderRequest(provider_id="openai")
                    )
                assert required.value.code == -32602
                assert "serves the default model" in required.value.message
                listed = _by_id(
                    (await connection.calls.list_providers(ListProvidersRequest())).providers
                )
                assert listed["openai"].current is not None
        finally:
            await runtime.aclose()


async def test_next_edit_suggestions_go_through_the_route_set(
    project: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = "<<<REGION_START>>>\nx = 1<<<CURSOR>>>\n<<<REGION_END>>>"
    with (
        memory_keyring(monkeypatch),
        FakeOpenAIServer([], side_scripts={"nes": [ScriptedReply(text=[answer])]}) as server,
    ):
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                await connection.set_provider(
                    "openai",
                    api_type="openai",
                    base_url=server.base_url,
                    headers={"Authorization": f"Bearer {_KEY}"},
                )
                async with await connection.start_nes() as nes:
                    await nes.open("file:///work/a.py", "x = 0\n", "python")
                    await nes.suggest("file:///work/a.py", Point(0, 5))
            (request,) = server.side_requests
            assert request.headers["authorization"] == f"Bearer {_KEY}"
        finally:
            await runtime.aclose()

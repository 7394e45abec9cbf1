"""``auth/status`` and ``auth/status_update`` on the coder: whether it holds a credential,
and every client told when that changes (logout, authenticate, providers/set).

The keyring is an in-memory one (``helpers.memory_keyring``) and the configuration directory
the test's own: nothing here touches the user's keyring or files.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from helpers.memory_keyring import memory_keyring
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client import connect
from accord.coder import (
    MODEL_PROVIDERS,
    CoderConfig,
    CoderRuntime,
    accord_config_dir,
    load_saved_model,
    save_model,
)
from accord.errors import LocalProtocolError, RequestError
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine

pytestmark = pytest.mark.anyio

_MODEL = "openai:gpt-3.5-turbo"
#: A model no other test builds (the coder builds a model once per process).
_PROVIDERS_MODEL = "openai-chat:auth-status-providers-model"


async def test_the_state_follows_the_key_and_both_clients_are_told_of_a_logout(
    project: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with memory_keyring(monkeypatch):
        openai = next(p for p in MODEL_PROVIDERS if p.id == "openai")
        save_model(openai, _MODEL, base_url=None, key="sk-status", directory=accord_config_dir())
        load_saved_model(accord_config_dir(), os.environ)
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            async with (
                connect(runtime, cwd=project) as first,
                connect(runtime, cwd=project) as second,
            ):
                assert first.supports("auth", "status")
                status = await first.auth_status()
                assert status.state == "authenticated"
                assert [(a.label, a.active) for a in status.accounts] == [
                    ("OPENAI_API_KEY key", True)
                ]
                assert "sk-status" not in status.model_dump_json()
                with anyio.fail_after(TIMEOUT):
                    await first.logout()
                    told = [await first.wait_auth_update(), await second.wait_auth_update()]
                assert [update.state for update in told] == ["unauthenticated"] * 2
                assert (await second.auth_status()).state == "unauthenticated"  # not -32000
                with pytest.raises(RequestError) as refused:
                    await second.authenticate("use-saved-model")
                assert refused.value.code == -32000
                # Unchanged: told once only.
                assert (first.auth_updates, second.auth_updates) == (1, 1)
        finally:
            await runtime.aclose()


async def test_an_agent_without_auth_status_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    async with connect(AgentRuntime(ScriptedEngine()), cwd=tmp_path) as connection:
        assert not connection.supports("auth", "status")
        with pytest.raises(LocalProtocolError, match=r"auth\.status"):
            await connection.auth_status()
        with pytest.raises(RequestError) as raw:
            await connection.calls.connection.request("auth/status", {})
        assert raw.value.code == -32601
        assert connection.auth_update is None


async def test_providers_set_with_a_key_authenticates_and_tells_every_client_once(
    project: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with memory_keyring(monkeypatch):
        runtime = CoderRuntime(CoderConfig(models=(_PROVIDERS_MODEL,)), store=MemorySessionStore())
        try:
            async with (
                connect(runtime, cwd=project) as first,
                connect(runtime, cwd=project) as second,
            ):
                assert (await first.auth_status()).state == "unauthenticated"
                assert (await second.auth_status()).state == "unauthenticated"
                with anyio.fail_after(TIMEOUT):
                    await first.set_provider(
                        "openai",
                        api_type="openai",
                        base_url="http://127.0.0.1:9/v1",
                        api_key="sk-providers-status",
                    )
                    told = [await first.wait_auth_update(), await second.wait_auth_update()]
                assert [update.state for update in told] == ["authenticated"] * 2
                assert [(a.label, a.active) for a in told[0].accounts] == [
                    ("openai key (providers/set)", True)
                ]
                assert all("sk-providers-status" not in u.model_dump_json() for u in told)
                assert (await second.auth_status()).state == "authenticated"
                # A provider not in use changes nothing: nobody is told again.
                with anyio.fail_after(TIMEOUT):
                    await second.set_provider(
                        "anthropic",
                        api_type="anthropic",
                        base_url="http://127.0.0.1:9/anthropic",
                        api_key="sk-other",
                    )
                assert (first.auth_updates, second.auth_updates) == (1, 1)
        finally:
            await runtime.aclose()

"""``logout`` on the coder: offered exactly when a saved key can be forgotten, and it is.

The keyring is an in-memory one (``helpers.memory_keyring``) and the configuration directory
the test's own: nothing here touches the user's keyring or files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.memory_keyring import memory_keyring

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

pytestmark = pytest.mark.anyio

_MODEL = "openai:gpt-3.5-turbo"


async def test_logout_forgets_the_saved_key_and_sessions_need_sign_in_again(
    project: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with memory_keyring(monkeypatch) as backend:
        openai = next(p for p in MODEL_PROVIDERS if p.id == "openai")
        saved = save_model(
            openai, _MODEL, base_url=None, key="sk-saved", directory=accord_config_dir()
        )
        assert saved.key_store == "keyring"
        assert backend.entries == {("accord", "OPENAI_API_KEY"): "sk-saved"}
        load_saved_model(accord_config_dir(), os.environ)
        assert os.environ["OPENAI_API_KEY"] == "sk-saved"
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                assert connection.supports("auth", "logout")
                assert not connection.auth_methods
                live = await connection.new_session(project)
                await connection.logout()
                assert backend.entries == {}
                assert "OPENAI_API_KEY" not in os.environ
                with pytest.raises(RequestError) as refused:
                    await connection.new_session(project)
                assert refused.value.code == -32000
                assert "OPENAI_API_KEY is not set" in refused.value.message
                assert live.session_id in connection.sessions  # a live session stays open
                await connection.logout()  # nothing left to forget: still fine
            async with connect(runtime, cwd=project) as again:
                assert [m.id for m in again.auth_methods] == ["use-saved-model"]
                assert not again.supports("auth", "logout")
                with pytest.raises(LocalProtocolError):
                    await again.logout()
                with pytest.raises(RequestError) as still:
                    await again.authenticate("use-saved-model")
                assert still.value.code == -32000
        finally:
            await runtime.aclose()
        assert load_saved_model(accord_config_dir(), os.environ) is not None
        assert "OPENAI_API_KEY" not in os.environ


async def test_logout_forgets_a_key_kept_in_the_private_file(
    project: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCORD_NO_KEYRING", "1")
    openai = next(p for p in MODEL_PROVIDERS if p.id == "openai")
    saved = save_model(
        openai, _MODEL, base_url=None, key="sk-in-file", directory=accord_config_dir()
    )
    assert saved.key_store == "file"
    load_saved_model(accord_config_dir(), os.environ)
    runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
    try:
        async with connect(runtime, cwd=project) as connection:
            assert connection.supports("auth", "logout")
            await connection.logout()
            assert "sk-in-file" not in (config_home / "accord" / "credentials.json").read_text()
            assert "OPENAI_API_KEY" not in os.environ
            with pytest.raises(RequestError) as refused:
                await connection.new_session(project)
            assert refused.value.code == -32000
    finally:
        await runtime.aclose()


async def test_logout_is_not_offered_for_a_key_the_user_exported(
    project: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with memory_keyring(monkeypatch) as backend:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-exported")
        runtime = CoderRuntime(CoderConfig(models=(_MODEL,)), store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                assert not connection.supports("auth", "logout")
                with pytest.raises(LocalProtocolError):
                    await connection.logout()
                with pytest.raises(RequestError) as raw:  # sent anyway: not served either
                    await connection.calls.connection.request("logout", {})
                assert raw.value.code == -32601
        finally:
            await runtime.aclose()
        assert backend.entries == {}
        assert os.environ["OPENAI_API_KEY"] == "sk-exported"

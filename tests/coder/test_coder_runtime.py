"""The coder served in-process over ACP: advertisement, the unconfigured agent, the CLI glue."""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
from _coder_support import system_text
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode
from accord.cli._build_agent import build_agent
from accord.cli._serve import serve_command
from accord.client import connect
from accord.coder import (
    MODEL_PROVIDERS,
    CoderConfig,
    CoderRuntime,
    CoderState,
    _open,
    accord_config_dir,
    save_model,
)
from accord.errors import RequestError
from accord.schema import AuthenticateRequest
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = pytest.mark.anyio


async def test_an_unconfigured_agent_starts_and_explains(project: Path) -> None:
    runtime = CoderRuntime(CoderConfig(), store=MemorySessionStore())
    try:
        async with connect(runtime, cwd=project) as connection:
            (method,) = connection.auth_methods
            assert method.id == "use-saved-model"
            assert method.description is not None and "OPENAI_API_KEY" in method.description
            assert connection.agent_info is not None and connection.agent_info.name == "accord"
            with pytest.raises(RequestError) as raised:
                await connection.new_session(project)
            assert raised.value.code == -32000
            assert "No model is configured" in raised.value.message
            with pytest.raises(RequestError) as authenticating:
                await connection.authenticate(method.id)
            assert authenticating.value.code == -32000
            assert not [s async for s in connection.iter_sessions()]  # nothing was stored
    finally:
        await runtime.aclose()


async def test_a_model_without_its_key_offers_sign_in_and_reads_the_saved_key(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ACCORD_NO_KEYRING", "1")
    runtime = CoderRuntime(
        CoderConfig(models=("openai:gpt-3.5-turbo",)), store=MemorySessionStore()
    )
    try:
        async with connect(runtime, cwd=project) as connection:
            assert [m.id for m in connection.auth_methods] == ["use-saved-model"]
            with pytest.raises(RequestError) as refused:
                await connection.new_session(project)
            assert refused.value.code == -32000
            with pytest.raises(RequestError) as unknown:
                await connection.authenticate("password")
            assert unknown.value.code == -32602
            assert "offers use-saved-model" in unknown.value.message
            with pytest.raises(RequestError) as nothing_saved:
                await connection.authenticate("use-saved-model")
            assert nothing_saved.value.code == -32000
            assert "OPENAI_API_KEY is not set" in nothing_saved.value.message
            provider = next(p for p in MODEL_PROVIDERS if p.id == "openai")
            directory = accord_config_dir()
            save_model(
                provider, "openai:gpt-3.5-turbo", base_url=None, key="sk-saved", directory=directory
            )
            await connection.authenticate("use-saved-model")
            assert os.environ["OPENAI_API_KEY"] == "sk-saved"
    finally:
        await runtime.aclose()


async def test_a_configured_agent_advertises_its_controls(project: Path) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["hi"])]) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                assert not connection.auth_methods
                with pytest.raises(RequestError) as unknown:
                    await runtime.authenticate(AuthenticateRequest(method_id="x"))
                assert (
                    unknown.value.code == -32602 and "no sign-in is needed" in unknown.value.message
                )
                session = await connection.new_session(project)
                view = session.view
                assert view.current_mode_id == "code"
                assert [m.id for m in view.available_modes] == ["ask", "code", "auto"]
                assert [c.name for c in view.available_commands] == [
                    "help",
                    "mode",
                    "clear",
                    "compact",
                ]
                assert [(o.id, o.category) for o in view.config_options] == [
                    ("mode", "mode"),
                    ("model", "model"),
                ]
                result = await session.prompt("hello")
                assert result.text == "hi"
        finally:
            await runtime.aclose()


async def test_the_runtime_closes_a_store_it_owns(tmp_path: Path) -> None:
    runtime = build_agent(
        model="openai:m", base_url="http://127.0.0.1:9/v1", store=str(tmp_path / "s.db")
    )
    store = runtime.store
    await store.list_sessions()  # opens the file
    await runtime.aclose()
    with pytest.raises(Exception, match="closed"):
        await store.list_sessions()


@pytest.mark.subprocess
def test_importing_the_agent_loads_no_model_code() -> None:
    code = (
        "import sys, accord.cli._serve, accord.coder\n"
        "from accord.coder import CoderConfig, CoderRuntime\n"
        "CoderRuntime(CoderConfig(models=('openai:x',)))\n"
        "roots = ('pydantic_ai', 'openai', 'fastmcp')\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in roots]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT)


def test_serve_refuses_a_bad_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACCORD_CONTEXT_WINDOW", "big")
    args = argparse.Namespace(model="openai:m", base_url=None, store=None)
    assert serve_command(args) == ExitCode.ERROR
    assert "ACCORD_CONTEXT_WINDOW" in capsys.readouterr().err


async def test_a_sub_agent_is_one_tool_call_to_standard_clients(project: Path) -> None:
    script = [
        ScriptedReply(
            tool_calls=[ScriptedToolCall(name="delegate", arguments={"task": "find add"})]
        ),
        ScriptedReply(tool_calls=[ScriptedToolCall(name="grep", arguments={"pattern": "add"})]),
        ScriptedReply(text=["pkg/__init__.py:1"]),
        ScriptedReply(text=["Found it."]),
    ]
    with FakeOpenAIServer(script) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                session = await connection.new_session(project)
                result = await session.prompt("where is add?")
        finally:
            await runtime.aclose()
    (only,) = session.view.tool_calls.values()
    assert only.title == "Delegate: find add"
    assert only.status == "completed"
    assert result.text == "Found it."


async def test_the_system_prompt_is_stored_at_session_new(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemorySessionStore()
    with FakeOpenAIServer([ScriptedReply(text=["a"]), ScriptedReply(text=["b"])]) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        first = CoderRuntime(config, store=store)
        async with connect(first, cwd=project) as connection:
            session_id = (await connection.new_session(project)).session_id
        await first.aclose()
        record = await store.get_session(session_id)
        assert record is not None
        stored = CoderState.from_json(record.state["engine"])
        assert stored is not None and stored.engine is None  # a prompt, no history yet

        def no_rebuild(**_: object) -> str:
            raise AssertionError("the system prompt was rebuilt")

        monkeypatch.setattr(_open, "build_system_prompt", no_rebuild)
        second = CoderRuntime(config, store=store)
        try:
            async with connect(second, cwd=project) as connection:
                loaded = await connection.load_session(session_id, project)
                await loaded.prompt("hi")
                forked = await connection.fork_session(session_id, project)
                await forked.prompt("hi again")
        finally:
            await second.aclose()
        prompts = {system_text(request) for request in server.requests}
    assert prompts == {stored.system_prompt}


class _Cycle:
    """A garbage cycle: only the cycle collector frees it."""

    def __init__(self) -> None:
        self.me = self


async def test_serving_freezes_the_heap_after_the_first_turn_not_its_garbage(
    project: Path,
) -> None:
    # accord serve asks for it (CoderRuntime(freeze_heap=True)); garbage made before the
    # freeze is collected first, never frozen (frozen objects are never collected).
    with FakeOpenAIServer([ScriptedReply(text=["one"]), ScriptedReply(text=["two"])]) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore(), freeze_heap=True)
        gc.unfreeze()
        try:
            async with connect(runtime, cwd=project) as connection:
                session = await connection.new_session(project)
                garbage = _Cycle()
                dead = weakref.ref(garbage)
                del garbage
                gc.disable()  # nothing but the freeze may collect it
                try:
                    assert (await session.prompt("first")).text == "one"
                    assert gc.get_freeze_count() > 0
                    assert dead() is None
                    later = _Cycle()
                    kept = weakref.ref(later)
                    del later
                    assert (await session.prompt("second")).text == "two"
                    assert kept() is not None  # once only: no second collect-and-freeze
                finally:
                    gc.enable()
        finally:
            gc.unfreeze()
            await runtime.aclose()


async def test_a_config_value_sent_with_an_unknown_type_reads_as_a_value_id(project: Path) -> None:
    # The schema: "Unknown `type` values with string payloads" are the value-id variant.
    with FakeOpenAIServer([]) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                session = await connection.new_session(project)
                wire = connection.calls.connection
                params = {"sessionId": session.session_id, "configId": "mode", "value": "ask"}
                answer = await wire.request("session/set_config_option", {**params, "type": "id"})
                [mode] = [o for o in answer["configOptions"] if o["id"] == "mode"]
                assert mode["currentValue"] == "ask"
                assert session.view.current_mode_id == "ask"
        finally:
            await runtime.aclose()

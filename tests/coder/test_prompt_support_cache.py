"""The prompt capabilities are remembered per configuration, so ``initialize`` stays fast.

A start with a configuration seen before answers ``initialize`` from the cache in the user data
dir without loading pydantic-ai or the OpenAI SDK (checked in a fresh interpreter); a first
start still reads the models' profiles; a corrupt file, a changed configuration, a different
pydantic-ai version and a model without its API key are never served a wrong answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.coder._prompt_cache import cache_path
from accord.store import MemorySessionStore

pytestmark = pytest.mark.anyio

GPT_4O = "openai:gpt-4o"  # its profile reads images, not audio files


async def _advertised(config: CoderConfig, cwd: Path) -> tuple[bool, bool]:
    runtime = CoderRuntime(config, store=MemorySessionStore())
    with anyio.fail_after(TIMEOUT):
        async with connect(runtime, cwd=cwd) as conn:
            capabilities = conn.initialize_response.agent_capabilities.prompt_capabilities
    await runtime.aclose()
    return capabilities.image, capabilities.audio


def _entries() -> dict[str, list[bool]]:
    data = json.loads(cache_path().read_text(encoding="utf-8"))
    return data["entries"]


_INITIALIZE_IN_A_FRESH_INTERPRETER = """
import sys, anyio
from accord.coder import CoderConfig, CoderRuntime
from accord.schema import InitializeRequest
from accord.store import MemorySessionStore
runtime = CoderRuntime(CoderConfig(models=(sys.argv[1],)), store=MemorySessionStore())
response = anyio.run(runtime.initialize, InitializeRequest(protocol_version=1))
prompt = response.agent_capabilities.prompt_capabilities
heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pydantic_ai', 'openai'})
print(prompt.image, prompt.audio, ','.join(heavy) or '-')
"""


def _initialize_in_a_fresh_interpreter(model: str, *, key: bool = True) -> list[str]:
    env = {name: value for name, value in os.environ.items() if name != "OPENAI_API_KEY"}
    if key:
        env["OPENAI_API_KEY"] = "test"
    result = subprocess.run(
        [sys.executable, "-c", _INITIALIZE_IN_A_FRESH_INTERPRETER, model],
        check=True,
        timeout=SCENARIO_TIMEOUT,
        capture_output=True,
        text=True,
        env=env,
    )
    return result.stdout.split()


@pytest.mark.subprocess
def test_a_warm_cache_answers_initialize_without_the_model_code() -> None:
    cold = _initialize_in_a_fresh_interpreter(GPT_4O)
    assert cold == ["True", "False", "openai,pydantic_ai"]  # first start: profiles read
    assert cache_path().is_file()
    warm = _initialize_in_a_fresh_interpreter(GPT_4O)
    assert warm == ["True", "False", "-"]  # same answer, nothing heavy imported


async def test_a_cold_cache_reads_the_profile_and_remembers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    assert not cache_path().exists()
    assert await _advertised(CoderConfig.from_sources(model=GPT_4O), tmp_path) == (True, False)
    assert list(_entries().values()) == [[True, False]]


@pytest.mark.parametrize(
    "content", [b"", b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'{"format": 1, "entries": 3}']
)
async def test_a_corrupt_cache_is_ignored_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    cache_path().parent.mkdir(parents=True)
    cache_path().write_bytes(content)
    assert await _advertised(CoderConfig.from_sources(model=GPT_4O), tmp_path) == (True, False)
    assert list(_entries().values()) == [[True, False]]


async def test_a_corrupt_entry_is_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    config = CoderConfig.from_sources(model=GPT_4O)
    await _advertised(config, tmp_path)
    (key,) = _entries()
    cache_path().write_text(json.dumps({"format": 1, "entries": {key: ["yes", 1]}}))
    assert await _advertised(config, tmp_path) == (True, False)
    assert _entries() == {key: [True, False]}


async def test_a_changed_configuration_is_not_served_a_stale_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    assert await _advertised(CoderConfig.from_sources(model=GPT_4O), tmp_path) == (True, False)
    # the same model name served by an OpenAI-compatible server: a text-only profile
    served = CoderConfig.from_sources(model=GPT_4O, base_url="http://127.0.0.1:9/v1")
    assert await _advertised(served, tmp_path) == (False, False)
    assert await _advertised(CoderConfig.from_sources(model=GPT_4O), tmp_path) == (True, False)
    assert sorted(map(tuple, _entries().values())) == [(False, False), (True, False)]


async def test_another_pydantic_ai_version_is_not_served_a_stale_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    config = CoderConfig.from_sources(model=GPT_4O)
    await _advertised(config, tmp_path)
    (key,) = _entries()
    old = json.dumps({**json.loads(key), "pydantic_ai": "0.0.1"}, sort_keys=True)
    # only an entry written under another pydantic-ai version, saying the opposite
    cache_path().write_text(json.dumps({"format": 1, "entries": {old: [False, True]}}))
    assert await _advertised(config, tmp_path) == (True, False)
    assert _entries()[key] == [True, False]


@pytest.mark.subprocess
def test_a_model_without_its_key_is_not_remembered() -> None:
    # fresh interpreters: this one caches built models, so "no key yet" is only seen there
    no_key = _initialize_in_a_fresh_interpreter(GPT_4O, key=False)
    assert no_key[:2] == ["False", "False"]  # cannot be built yet: neither
    assert not cache_path().exists()
    assert _initialize_in_a_fresh_interpreter(GPT_4O)[:2] == ["True", "False"]


async def test_an_unwritable_cache_still_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data dir should be")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker))
    assert await _advertised(CoderConfig.from_sources(model=GPT_4O), tmp_path) == (True, False)

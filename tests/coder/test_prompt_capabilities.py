"""The coder's prompt capabilities come from its models' pydantic-ai profiles.

``promptCapabilities.image`` / ``.audio`` are what every configured model's profile says it
reads (``supports_image_input`` / ``supports_audio_file_input``); a model on an
OpenAI-compatible server is given a text-only profile (no profile knows its name). Read with
``initialize``, over the memory pair, before any session.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.store import MemorySessionStore

pytestmark = pytest.mark.anyio


async def _advertised(config: CoderConfig, cwd: Path) -> dict[str, object]:
    runtime = CoderRuntime(config, store=MemorySessionStore())
    with anyio.fail_after(TIMEOUT):
        async with connect(runtime, cwd=cwd) as conn:
            capabilities = conn.initialize_response.agent_capabilities.prompt_capabilities
    await runtime.aclose()
    return capabilities.to_wire()


async def test_a_model_whose_profile_reads_images_takes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    config = CoderConfig.from_sources(model="openai:gpt-4o")
    advertised = await _advertised(config, tmp_path)
    assert advertised == {"image": True, "audio": False, "embeddedContext": True}


async def test_a_served_model_is_text_only(tmp_path: Path) -> None:
    config = CoderConfig.from_sources(
        model="openai:qwen2.5-coder:7b", base_url="http://127.0.0.1:9/v1"
    )
    advertised = await _advertised(config, tmp_path)
    assert advertised == {"image": False, "audio": False, "embeddedContext": True}

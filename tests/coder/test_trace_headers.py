"""The coder's model calls continue the client's trace: ``traceparent`` reaches the model API."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.schema import PromptRequest, TextContentBlock
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.anyio

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize("meta", [{"traceparent": TRACEPARENT, "tracestate": "v=1"}, None])
async def test_the_prompts_trace_context_goes_to_the_model_server_as_headers(
    project: Path, meta: dict[str, str] | None
) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["hi"])]) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            async with connect(runtime, cwd=project) as connection:
                session = await connection.new_session(project)
                with anyio.fail_after(TIMEOUT):
                    await connection.calls.prompt(
                        PromptRequest(
                            session_id=session.session_id,
                            prompt=[TextContentBlock(text="hello")],
                            meta=meta,
                        )
                    )
        finally:
            await runtime.aclose()
        [request] = server.requests
    if meta is None:
        assert "traceparent" not in request.headers
    else:
        assert request.headers["traceparent"] == TRACEPARENT
        assert request.headers["tracestate"] == "v=1"

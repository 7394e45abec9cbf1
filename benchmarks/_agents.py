"""Benchmark agents, run as subprocesses by ``bench_protocol.py``.

``python benchmarks/_agents.py accord`` serves an accord agent over stdio;
``python benchmarks/_agents.py sdk`` serves the same behaviour on the official Python SDK.
On a prompt whose text is a number N, the agent streams N ``agent_message_chunk``
notifications of about 40 bytes of text (accord: ``fast:N`` streams them with
``send_chunk`` instead of building a model per chunk), then answers; the response's
``_meta`` reports the agent's CPU seconds for the turn and its peak RSS. The extension
request ``_bench/ping`` answers ``{}`` at once (round-trip latency).
"""

from __future__ import annotations

import resource
import sys
import time
from typing import Any

CHUNK = "The quick brown fox jumps over the dog. "  # 40 bytes


def _peak_rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_accord() -> None:
    from accord.roles import Agent, run_agent_stdio
    from accord.schema import (
        AgentMessageChunkSessionUpdate,
        NewSessionRequest,
        NewSessionResponse,
        PromptRequest,
        PromptResponse,
        SessionNotification,
        TextContentBlock,
    )

    class BenchAgent(Agent):
        async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
            return NewSessionResponse(session_id="bench")

        async def prompt(self, request: PromptRequest) -> PromptResponse:
            block = request.prompt[0]
            text = block.text if isinstance(block, TextContentBlock) else "0"
            fast = text.startswith("fast:")
            count = int(text.removeprefix("fast:"))
            session_id = request.session_id
            started = time.process_time()
            if fast:  # the model-free path for chunks
                send_chunk = self.client.send_chunk
                for _ in range(count):
                    await send_chunk(session_id, CHUNK, message_id="m1")
            else:  # the typed call: a model per chunk, as with the SDK
                send = self.client.session_update
                for _ in range(count):
                    await send(
                        SessionNotification(
                            session_id=session_id,
                            update=AgentMessageChunkSessionUpdate(
                                content=TextContentBlock(text=CHUNK), message_id="m1"
                            ),
                        )
                    )
            cpu = time.process_time() - started
            return PromptResponse(
                stop_reason="end_turn", meta={"cpu": cpu, "peak_rss_kb": _peak_rss_kb()}
            )

        async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
            return {}

    run_agent_stdio(BenchAgent())


def run_sdk() -> None:
    import asyncio

    import acp
    from acp import schema

    class SdkBenchAgent:
        def on_connect(self, conn: Any) -> None:
            self._conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> Any:
            return schema.InitializeResponse(protocol_version=protocol_version)

        async def new_session(self, cwd: str, **kwargs: Any) -> Any:
            return schema.NewSessionResponse(session_id="bench")

        async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> Any:
            count = int(prompt[0].text)
            started = time.process_time()
            for _ in range(count):
                await self._conn.session_update(
                    session_id,
                    schema.AgentMessageChunk(
                        session_update="agent_message_chunk",
                        content=schema.TextContentBlock(type="text", text=CHUNK),
                        message_id="m1",
                    ),
                )
            cpu = time.process_time() - started
            return schema.PromptResponse(
                stop_reason="end_turn", field_meta={"cpu": cpu, "peak_rss_kb": _peak_rss_kb()}
            )

        async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
            return {}

    asyncio.run(acp.run_agent(SdkBenchAgent()))


if __name__ == "__main__":
    {"accord": run_accord, "sdk": run_sdk}[sys.argv[1]]()

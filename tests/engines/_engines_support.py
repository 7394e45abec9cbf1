"""Helpers for the pydantic-ai engine tests: real OpenAI provider code against the fake server.

Every model here is ``OpenAIChatModel`` + ``OpenAIProvider(base_url=server.base_url)``: the
requests go over loopback HTTP to :class:`FakeOpenAIServer`, which records them, so a test can
check what the model was sent (history, tools, model name).
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, get_args

import anyio
from helpers.engine_turns import Turn
from helpers.timeouts import TIMEOUT
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from accord.engines import (
    Event,
    SessionContext,
    TextChunk,
    ThinkingChunk,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    ToolCallTracker,
    TurnOutput,
    new_id,
)
from accord.engines.pydantic_ai import ModelChoice, PydanticAIEngine, PydanticAISession
from accord.schema import TextContentBlock
from accord.testing import FakeOpenAIServer, Outcome, RecordedRequest

#: The sessions' working directory: a real one (the runtime refuses a ``cwd`` that is not an
#: existing directory), made once per test process and removed when it ends.
_SCRATCH = tempfile.TemporaryDirectory(prefix="accord-engine-tests-")
CWD = os.path.realpath(_SCRATCH.name)


@dataclass
class ModelCounter:
    """Counts how many times each model factory built a model."""

    builds: dict[str, int] = field(default_factory=dict[str, int])
    models: list[OpenAIChatModel] = field(default_factory=list[OpenAIChatModel])

    def choice(
        self, server: FakeOpenAIServer, name: str, *, context_window: int | None = None
    ) -> ModelChoice:
        """A choice whose factory builds ``OpenAIChatModel(name)`` on ``server`` and counts."""

        def build() -> OpenAIChatModel:
            self.builds[name] = self.builds.get(name, 0) + 1
            provider = OpenAIProvider(base_url=server.base_url, api_key="test")
            model = OpenAIChatModel(name, provider=provider)
            self.models.append(model)
            return model

        return ModelChoice(id=name, model=build, context_window=context_window)


@asynccontextmanager
async def opened(engine: PydanticAIEngine, **overrides: Any) -> AsyncGenerator[PydanticAISession]:
    """Open a session of ``engine`` (context from :func:`context`) and close it afterwards."""
    session = await engine.open_session(context(**overrides))
    try:
        yield session
    finally:
        await session.aclose()


def context(**overrides: Any) -> SessionContext:
    """A session context in :data:`CWD`."""
    fields: dict[str, Any] = {"session_id": new_id(), "cwd": CWD}
    fields.update(overrides)
    return SessionContext(**fields)


async def collect(
    session: PydanticAISession, turn: Turn, into: list[TurnOutput], text: str = "go"
) -> None:
    """Run one turn, appending its events to ``into`` (kept if the turn raises)."""
    with anyio.fail_after(TIMEOUT):
        async for event in session.run_turn([TextContentBlock(text=text)], turn.context):
            into.append(event)


async def run_turn(
    session: PydanticAISession, text: str = "go", turn: Turn | None = None
) -> list[TurnOutput]:
    """Run one turn to its end (bounded), checking the engine rules on every event."""
    turn = turn or Turn()
    events: list[TurnOutput] = []
    with anyio.fail_after(TIMEOUT):
        async for event in session.run_turn([TextContentBlock(text=text)], turn.context):
            events.append(event)
    check_rules(events)
    return events


def of_type(events: Sequence[TurnOutput], kind: type[Any]) -> list[Any]:
    """The events of one class, in order."""
    return [e for e in events if isinstance(e, kind)]


def texts(events: Sequence[TurnOutput], kind: type[TextChunk | ThinkingChunk] = TextChunk) -> str:
    """The concatenated text of the chunks of ``kind``."""
    chunks: list[TextChunk | ThinkingChunk] = of_type(events, kind)
    return "".join(getattr(c.content, "text", "") for c in chunks)


def check_rules(events: Sequence[TurnOutput]) -> None:
    """The rules the runtime enforces: tool-call lifecycle, and contiguous message ids."""
    tracker = ToolCallTracker()
    finished: set[str] = set()
    current: str | None = None
    for event in events:
        assert isinstance(event, get_args(Event)), event
        if isinstance(event, ToolCallStarted | ToolCallProgress | ToolCallEnded):
            tracker.apply(event)
        if isinstance(event, TextChunk | ThinkingChunk) and event.message_id != current:
            assert event.message_id not in finished, "a message id came back"
            if current is not None:
                finished.add(current)
            current = event.message_id


async def wait_for_requests(
    server: FakeOpenAIServer, count: int, outcome: Outcome | None = None
) -> tuple[RecordedRequest, ...]:
    """Wait (in a thread) until the server has seen ``count`` requests."""
    wait = functools.partial(server.wait_for_requests, count, outcome=outcome, timeout=TIMEOUT)
    return await anyio.to_thread.run_sync(wait)

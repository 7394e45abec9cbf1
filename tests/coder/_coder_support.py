"""Helpers for the coder's engine tests: sessions on the fake OpenAI server, turns, fakes."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, get_args

import anyio
import anyio.to_thread
from helpers import engine_turns
from helpers.timeouts import TIMEOUT

from accord.coder import CoderConfig, CoderEngine
from accord.coder._session import CoderSession
from accord.engines import (
    Event,
    PermissionOutcome,
    SessionContext,
    SubAgentEvent,
    TextChunk,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    ToolCallTracker,
    TurnOutput,
    new_id,
)
from accord.schema import (
    TerminalExitStatus,
    TerminalOutputResponse,
    TextContentBlock,
    WaitForTerminalExitResponse,
)
from accord.testing import FakeOpenAIServer, RecordedRequest


def engine_on(server: FakeOpenAIServer, *models: str) -> CoderEngine:
    """A coder engine whose models are served by ``server``."""
    names = models or ("openai:fake-model",)
    return CoderEngine(CoderConfig(models=names, base_url=server.base_url))


@asynccontextmanager
async def opened(engine: CoderEngine, cwd: str, **overrides: Any) -> AsyncGenerator[CoderSession]:
    """Open a coder session in ``cwd`` and close it afterwards."""
    fields: dict[str, Any] = {"session_id": new_id(), "cwd": cwd, "mode_id": "code"}
    fields.update(overrides)
    session = await engine.open_session(SessionContext(**fields))
    assert isinstance(session, CoderSession)
    try:
        yield session
    finally:
        await session.aclose()


class Turn(engine_turns.Turn):
    """A turn in the coder's default mode, ``code`` (edits and commands ask permission)."""

    def __init__(
        self, *, answers: Sequence[PermissionOutcome] = (), mode_id: str | None = "code"
    ) -> None:
        super().__init__(answers=answers, mode_id=mode_id)


async def run_turn(
    session: CoderSession, text: str = "go", turn: Turn | None = None
) -> list[TurnOutput]:
    """Run one turn to its end (bounded), checking the tool-call lifecycle."""
    turn = turn or Turn()
    outputs: list[TurnOutput] = []
    with anyio.fail_after(TIMEOUT):
        async for output in session.run_turn([TextContentBlock(text=text)], turn.context):
            outputs.append(output)
    check_rules(outputs)
    return outputs


def check_rules(outputs: Sequence[TurnOutput]) -> None:
    """Tool calls follow their lifecycle (per session, sub-agents included)."""
    tracker = ToolCallTracker()
    for output in outputs:
        event = output.event if isinstance(output, SubAgentEvent) else output
        assert isinstance(event, get_args(Event)), event
        if isinstance(event, ToolCallStarted | ToolCallProgress | ToolCallEnded):
            tracker.apply(event)


def root(outputs: Sequence[TurnOutput], kind: type[Any]) -> list[Any]:
    """The root agent's events of one class, in order."""
    return [o for o in outputs if isinstance(o, kind)]


def text_of(outputs: Sequence[TurnOutput]) -> str:
    """The root agent's reply text."""
    return "".join(getattr(c.content, "text", "") for c in root(outputs, TextChunk))


def tool_names(request: RecordedRequest) -> list[str]:
    """The tools a model request offered."""
    return [tool["function"]["name"] for tool in request.body.get("tools", [])]


def system_text(request: RecordedRequest) -> str:
    """The system message(s) of a model request."""
    return "\n".join(
        str(m.get("content")) for m in request.messages if m.get("role") in ("system", "developer")
    )


async def wait_for_requests(server: FakeOpenAIServer, count: int) -> tuple[RecordedRequest, ...]:
    """Wait (in a thread) until the server has seen ``count`` requests."""
    wait = functools.partial(server.wait_for_requests, count, timeout=TIMEOUT)
    return await anyio.to_thread.run_sync(wait)


@dataclass
class FakeTerminal:
    """A client terminal whose command 'runs' until told to finish."""

    terminal_id: str
    output_text: str = ""
    exit_code: int | None = 0
    finished: anyio.Event = field(default_factory=anyio.Event)
    released: bool = False
    killed: bool = False

    async def output(self) -> TerminalOutputResponse:
        status = TerminalExitStatus(exit_code=self.exit_code) if self.finished.is_set() else None
        return TerminalOutputResponse(output=self.output_text, truncated=False, exit_status=status)

    async def wait_for_exit(self) -> WaitForTerminalExitResponse:
        await self.finished.wait()
        return WaitForTerminalExitResponse(exit_code=self.exit_code)

    async def kill(self) -> None:
        self.killed = True
        self.exit_code = None
        self.finished.set()

    async def release(self) -> None:
        self.released = True


@dataclass
class FakeTerminals:
    """The client's terminal service: records commands; finishes them at once unless held."""

    output_text: str = "1 passed\n"
    hold: bool = False
    created: list[tuple[str, tuple[str, ...], str | None]] = field(
        default_factory=list[tuple[str, tuple[str, ...], str | None]]
    )
    terminals: list[FakeTerminal] = field(default_factory=list[FakeTerminal])
    started: anyio.Event = field(default_factory=anyio.Event)

    async def create_terminal(
        self,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Any = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> FakeTerminal:
        self.created.append((command, tuple(args), cwd))
        terminal = FakeTerminal(f"term-{len(self.terminals) + 1}", self.output_text)
        if not self.hold:
            terminal.finished.set()
        self.terminals.append(terminal)
        self.started.set()
        return terminal

"""Shared pieces of the agent-runtime tests: a recording client and a connected harness."""

from __future__ import annotations

import os
import tempfile
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from helpers.fold import fold
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.engines import EngineCapabilities, ToolCallStarted
from accord.events import EXT_EVENT_METHOD
from accord.roles import AgentSideConnection, Client, ClientSideConnection
from accord.schema import (
    AvailableCommand,
    BooleanSessionConfigOption,
    CancelledRequestPermissionOutcome,
    ClientCapabilities,
    ContentBlock,
    Cost,
    InitializeRequest,
    NewSessionRequest,
    PermissionOption,
    PlanEntry,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SelectSessionConfigOption,
    SessionConfigSelectOption,
    SessionMode,
    SessionNotification,
    TextContentBlock,
)
from accord.store import MemorySessionStore, SessionStore
from accord.testing import (
    Emit,
    ReportUsage,
    Say,
    ScriptedEngine,
    ScriptStep,
    SetPlan,
    SetTitle,
    Stream,
    Think,
    UseTool,
    WaitForCancel,
)
from accord.transports import memory_transport_pair

#: The sessions' working directory: a real one (the runtime refuses a ``cwd`` that is not an
#: existing directory), made once per test process and removed when it ends.
_SCRATCH = tempfile.TemporaryDirectory(prefix="accord-agent-tests-")
CWD = os.path.realpath(_SCRATCH.name)

#: Modes, options and commands of a "full" engine.
MODES = (
    SessionMode(id="ask", name="Ask"),
    SessionMode(id="code", name="Code", description="Edits files"),
    SessionMode(id="plan", name="Plan"),
)
MODEL_OPTION = SelectSessionConfigOption(
    id="model",
    name="Model",
    category="model",
    current_value="fast",
    options=[
        SessionConfigSelectOption(value="fast", name="Fast"),
        SessionConfigSelectOption(value="smart", name="Smart"),
    ],
)
THINKING_OPTION = BooleanSessionConfigOption(id="thinking", name="Thinking", current_value=False)
COMMANDS = (
    AvailableCommand(name="web", description="Search the web"),
    AvailableCommand(name="test", description="Run the tests"),
)
FULL = EngineCapabilities(
    image=True,
    audio=True,
    embedded_context=True,
    modes=MODES,
    config_options=(MODEL_OPTION, THINKING_OPTION),
    commands=COMMANDS,
)


def text(value: str) -> list[ContentBlock]:
    """A prompt of one text block."""
    return [TextContentBlock(text=value)]


class RecordingClient(Client):
    """Records every update; answers permission requests from a queue of option kinds.

    An answer is an option kind (``allow_once``, ...), ``"cancelled"``, or ``"hold"`` (never
    answer: wait until the agent cancels the request). Without queued answers it uses
    ``default_answer``.
    """

    def __init__(self, *, boolean_options: bool = True, answers: Iterable[str] = ()) -> None:
        self.boolean_config_options = boolean_options
        self.notifications: list[SessionNotification] = []
        self.ext: list[tuple[str, dict[str, Any]]] = []
        self.permission_requests: list[RequestPermissionRequest] = []
        #: The updates received when each permission request arrived.
        self.seen_at_request: list[list[dict[str, Any]]] = []
        self.answers: deque[str] = deque(answers)
        self.default_answer = "allow_once"
        self.held = 0
        self.released = 0
        self._changed: anyio.Event | None = None

    # ------------------------------------------------------------------ waiting

    def _touch(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait (bounded) until ``predicate()`` holds after some recorded message."""
        with anyio.fail_after(TIMEOUT):
            while not predicate():
                if self._changed is None:
                    self._changed = anyio.Event()
                await self._changed.wait()

    # ------------------------------------------------------------------ handlers

    async def session_update(self, notification: SessionNotification) -> None:
        self.notifications.append(notification)
        self._touch()

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.ext.append((method, params))
        self._touch()

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        self.permission_requests.append(request)
        self.seen_at_request.append([n.update.to_wire() for n in self.notifications])
        self._touch()
        answer = self.answers.popleft() if self.answers else self.default_answer
        if answer == "hold":
            self.held += 1
            try:
                await anyio.sleep_forever()
            finally:
                self.released += 1
                self._touch()
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=CancelledRequestPermissionOutcome())
        option = next(o for o in request.options if o.kind == answer)
        return RequestPermissionResponse(
            outcome=SelectedRequestPermissionOutcome(option_id=option.option_id)
        )

    # ------------------------------------------------------------------ reading

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The updates received (wire form), optionally of one session only."""
        return [
            n.update.to_wire()
            for n in self.notifications
            if session_id is None or n.session_id == session_id
        ]

    def kinds(self, session_id: str | None = None) -> list[str]:
        """The ``sessionUpdate`` tags received, in order."""
        return [u["sessionUpdate"] for u in self.updates(session_id)]

    def ext_events(self) -> list[dict[str, Any]]:
        """The params of every ``_accord/event`` notification."""
        return [params for method, params in self.ext if method == EXT_EVENT_METHOD]

    def announcements(self, session_id: str) -> int:
        """How many activation announcements of ``session_id`` were received."""
        return sum(
            1
            for n in self.notifications
            if n.session_id == session_id
            and ((n.update.meta or {}).get("accord") or {}).get("announcement") is True
        )

    def clear(self) -> None:
        """Forget what was received so far."""
        self.notifications.clear()
        self.ext.clear()


@dataclass
class Harness:
    """A runtime served over the in-memory pair, driven by a recording client."""

    runtime: AgentRuntime
    client: RecordingClient
    conn: ClientSideConnection
    agent_conn: AgentSideConnection
    engine: ScriptedEngine
    store: SessionStore
    sessions: list[str] = field(default_factory=list[str])

    async def new_session(self, cwd: str = CWD, **fields: Any) -> str:
        """Open a session and return its id, once its announcements have arrived."""
        with anyio.fail_after(TIMEOUT):
            request = NewSessionRequest.model_validate({"cwd": cwd, "mcpServers": [], **fields})
            response = await self.conn.new_session(request)
            await self.announced(response.session_id, response.meta)
        self.sessions.append(response.session_id)
        return response.session_id

    async def announced(self, session_id: str, meta: dict[str, Any] | None, seen: int = 0) -> None:
        """Wait for the announcements an activating response said follow it (``seen``: how
        many of the session's were received before the request)."""
        count = int(((meta or {}).get("accord") or {}).get("announcements") or 0)
        await self.client.wait_until(lambda: self.client.announcements(session_id) >= seen + count)

    async def prompt(
        self, session_id: str, prompt: str | list[ContentBlock] = "hello"
    ) -> PromptResponse:
        """Send a prompt and wait for the answer."""
        blocks = text(prompt) if isinstance(prompt, str) else prompt
        with anyio.fail_after(TIMEOUT):
            return await self.conn.prompt(PromptRequest(session_id=session_id, prompt=blocks))


@asynccontextmanager
async def serve(
    engine: ScriptedEngine | None = None,
    *,
    store: SessionStore | None = None,
    client: RecordingClient | None = None,
    extended: bool = False,
    runtime: AgentRuntime | None = None,
    **runtime_options: Any,
) -> AsyncGenerator[Harness]:
    """Serve a runtime for ``engine`` over the memory pair and initialize a client."""
    engine = engine if engine is not None else ScriptedEngine()
    store = store if store is not None else MemorySessionStore()
    client = client if client is not None else RecordingClient()
    if runtime is None:
        runtime = AgentRuntime(engine, store=store, **runtime_options)
    agent_end, client_end = memory_transport_pair()
    async with (
        AgentSideConnection(runtime, agent_end) as agent_conn,
        ClientSideConnection(client, client_end) as conn,
    ):
        capabilities = client.client_capabilities()
        meta = {"accord": {"events": True}} if extended else None
        with anyio.fail_after(TIMEOUT):
            await conn.initialize(
                InitializeRequest(protocol_version=1, client_capabilities=capabilities, meta=meta)
            )
        yield Harness(runtime, client, conn, agent_conn, engine, store)


def scripted(
    *turns: Sequence[ScriptStep], capabilities: EngineCapabilities | None = None, **options: Any
) -> ScriptedEngine:
    """A scripted engine playing ``turns`` in order."""
    return ScriptedEngine(turns, capabilities=capabilities or EngineCapabilities(), **options)


def plain_capabilities() -> ClientCapabilities:
    """A client that advertises nothing."""
    return ClientCapabilities()


def message_texts(updates: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(kind, text)`` per message after folding (text blocks only)."""
    out: list[tuple[str, str]] = []
    for message in fold(updates)["messages"]:
        texts = "".join(b.get("text", "") for b in message["blocks"])
        out.append((message["key"][0], texts))
    return out


def rich_steps() -> list[ScriptStep]:
    """A turn with every kind of update: thought, text, a confirmed tool call, plan, usage,
    title, and a short stream."""
    return [
        Think(pieces=("Let me ", "think.")),
        Say(pieces=("I will ", "read the file.")),
        UseTool(title="Read a.py", kind="read", tool_call_id="t-read", ask=True, result="x = 1"),
        SetPlan(
            (
                PlanEntry(content="Read", priority="high", status="completed"),
                PlanEntry(content="Fix", priority="medium", status="pending"),
            )
        ),
        ReportUsage(used=1200, size=200000, cost=Cost(amount=0.01, currency="USD")),
        SetTitle("Reading a.py"),
        Stream(count=25, prefix="w"),
    ]


def command_steps(prompt: str) -> list[ScriptStep]:
    """Steps chosen by a prompt's text: ``rich``, ``stream N DELAY``, ``hang`` (a tool call
    left open, three chunks, then a wait that ignores cancel), ``wait`` (one chunk, then a
    wait ended by ``session/cancel``), ``ambiguous`` (a tool that asks
    with two options under one id: ``Deny`` and ``Allow always``), ``title WORDS`` (the
    engine titles the session WORDS); anything else echoes."""
    words = prompt.split()
    if words[:1] == ["title"]:
        return [Say("titled"), SetTitle(" ".join(words[1:]))]
    if words[:1] == ["ambiguous"]:
        options = (
            PermissionOption(option_id="x", name="Deny", kind="reject_once"),
            PermissionOption(option_id="x", name="Allow always", kind="allow_always"),
        )
        return [UseTool(title="Edit main.py", kind="edit", ask=True, options=options)]
    if words[:1] == ["rich"]:
        return rich_steps()
    if words[:1] == ["wait"]:
        return [Stream(count=1), WaitForCancel()]
    if words[:1] == ["hang"]:
        started = ToolCallStarted(tool_call_id="hung", title="Hang", status="in_progress")
        return [Emit(started), Stream(count=3), WaitForCancel(cooperative=False)]
    if words[:1] == ["stream"]:
        return [Stream(count=int(words[1]), delay=float(words[2]) if len(words) > 2 else 0.0)]
    return [Say(prompt)]

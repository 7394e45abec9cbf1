"""``ScriptedEngine``: an engine for tests and examples that plays a script per prompt.

Serve it with the agent runtime and drive it from any client::

    engine = ScriptedEngine(
        [
            [Say("Looking."), UseTool(title="Read main.py", kind="read", ask=True), Say("Done.")],
            [Stream(count=500, delay=0.002)],
        ],
        capabilities=EngineCapabilities(image=True, modes=(SessionMode(id="ask", name="Ask"),)),
    )
    runtime = AgentRuntime(engine, store=MemorySessionStore())

Each ``session/prompt`` (of any session) plays the next script of ``turns``; once they are
used up, ``respond`` decides (by default the prompt's text is echoed back). A script is a
sequence of steps:

=====================  ============================================================
step                   what the turn yields
=====================  ============================================================
:class:`Say`           agent message chunks (one message id)
:class:`Think`         thought chunks (one message id)
:class:`Stream`        ``count`` message chunks with ``delay`` seconds between them
:class:`UseTool`       a tool call: pending, optional permission request, in
                       progress, completed or failed; denied or cancelled: failed,
                       and the tool never runs
:class:`SetPlan`       a plan (the complete list)
:class:`ReportUsage`   a usage report
:class:`SetTitle`      a title change
:class:`ChangeMode`    an engine-initiated mode change
:class:`ChangeCommands`  new slash commands
:class:`Pause`         nothing for a while (cooperative: ends early on cancel)
:class:`WaitForCancel` nothing until the turn is cancelled (or, not cooperative,
                       until the runtime cancels the engine's step)
:class:`WaitFor`       nothing until a test sets an ``anyio.Event`` (or the turn
                       is cancelled)
:class:`Fail`          raises an exception
:class:`Emit`          any event as given (to test the runtime's rules)
:class:`Stop`          ``TurnCompleted`` with a stop reason
=====================  ============================================================

The engine is cooperative: between steps (and between streamed chunks) it checks
``turn.cancelled`` and stops. After each turn that was not cut short it yields a
``StateSnapshot`` of ``{"turns": n, "prompts": [text, ...]}``, which comes back as
``SessionContext.history`` on load, resume and fork.

Everything it does is recorded for assertions: :attr:`ScriptedEngine.sessions` (one
:class:`ScriptedSession` per opened session: its context, prompts, mode and config calls,
whether it was closed), :attr:`ScriptedEngine.tool_runs` (ids of tools that actually ran) and
:attr:`ScriptedEngine.decisions` (permission decisions received).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import anyio

from ..engines import (
    CommandsChanged,
    ConfigValue,
    EngineCapabilities,
    EngineSession,
    ModeChanged,
    PermissionAnswer,
    PlanChanged,
    SessionContext,
    StateSnapshot,
    TextChunk,
    TextPart,
    ThinkingChunk,
    TitleChanged,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    TurnCompleted,
    TurnContext,
    TurnOutput,
    UsageReported,
    new_id,
    prompt_parts,
)
from ..schema import (
    ContentBlock,
    ContentToolCallContent,
    SessionConfigOption,
    TextContentBlock,
    ToolCallUpdate,
)
from ._scripted_steps import (
    ChangeCommands,
    ChangeMode,
    Emit,
    Fail,
    Pause,
    ReportUsage,
    Say,
    ScriptStep,
    SetPlan,
    SetTitle,
    Stop,
    Stream,
    Think,
    UseTool,
    WaitFor,
    WaitForCancel,
)

__all__ = (
    "ChangeCommands",
    "ChangeMode",
    "Emit",
    "Fail",
    "Pause",
    "ReportUsage",
    "Say",
    "ScriptStep",
    "ScriptedEngine",
    "ScriptedSession",
    "SetPlan",
    "SetTitle",
    "Stop",
    "Stream",
    "Think",
    "UseTool",
    "WaitFor",
    "WaitForCancel",
)


Responder: TypeAlias = Callable[[str], Sequence[ScriptStep]]
"""Chooses the steps for a prompt (given its text) once the scripted turns are used up."""

ConfigHook: TypeAlias = Callable[
    [str, ConfigValue, Sequence[SessionConfigOption]], Sequence[SessionConfigOption] | None
]
"""Answers ``set_config_option``: ``(config_id, value, current options) -> new list | None``."""


def _echo(text: str) -> Sequence[ScriptStep]:
    return [Say(text)]


def _text(prompt: Sequence[ContentBlock]) -> str:
    return "".join(p.text for p in prompt_parts(prompt) if isinstance(p, TextPart))


class _Stopped(Exception):
    """The turn was cancelled: the script ends here."""


class ScriptedSession(EngineSession):
    """One session of a :class:`ScriptedEngine`; records what happened to it."""

    def __init__(self, engine: ScriptedEngine, context: SessionContext) -> None:
        """Open a session in ``context`` (its history, if any, is restored)."""
        self.engine = engine
        self.context = context
        history = context.history if isinstance(context.history, dict) else {}
        prompts = history.get("prompts")
        #: Prompt texts, from the restored history on.
        self.prompts: list[str] = (
            [p for p in prompts if isinstance(p, str)] if isinstance(prompts, list) else []
        )
        turns = history.get("turns")
        #: Turns played, from the restored history on.
        self.turns = turns if isinstance(turns, int) else 0
        #: Decoded prompt content of each turn played by this object.
        self.prompt_parts: list[tuple[Any, ...]] = []
        #: ``(mode_id, config_values)`` each turn began with.
        self.turn_controls: list[tuple[str | None, dict[str, ConfigValue]]] = []
        self.modes_set: list[str] = []
        self.config_set: list[tuple[str, ConfigValue]] = []
        self.closed = False
        self.cancelled_turns = 0

    async def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        """Play the next script (see the module docstring)."""
        text = _text(prompt)
        self.prompts.append(text)
        self.prompt_parts.append(prompt_parts(prompt))
        self.turn_controls.append((turn.mode_id, dict(turn.config_values)))
        self.turns += 1
        steps = self.engine.next_script(text)
        try:
            for step in steps:
                if turn.cancelled:
                    raise _Stopped
                async for output in self._play(step, turn):
                    yield output
                    if isinstance(output, TurnCompleted):
                        return
        except _Stopped:
            self.cancelled_turns += 1
        if self.engine.snapshots:
            yield StateSnapshot(state={"turns": self.turns, "prompts": list(self.prompts)})

    async def _play(self, step: ScriptStep, turn: TurnContext) -> AsyncIterator[TurnOutput]:
        match step:
            case Say() | Think():
                message_id = step.message_id or new_id()
                chunk = TextChunk if isinstance(step, Say) else ThinkingChunk
                for piece in step.pieces or (step.text,):
                    yield chunk(message_id=message_id, content=TextContentBlock(text=piece))
            case Stream():
                message_id = step.message_id or new_id()
                for i in range(step.count):
                    if turn.cancelled:
                        raise _Stopped
                    yield TextChunk(
                        message_id=message_id,
                        content=TextContentBlock(text=f"{step.prefix}{i} "),
                    )
                    if step.delay:
                        await anyio.sleep(step.delay)
            case UseTool():
                async for output in self._tool(step, turn):
                    yield output
            case SetPlan():
                yield PlanChanged(entries=step.entries)
            case ReportUsage():
                yield UsageReported(used=step.used, size=step.size, cost=step.cost)
            case SetTitle():
                yield TitleChanged(title=step.title)
            case ChangeMode():
                yield ModeChanged(mode_id=step.mode_id)
            case ChangeCommands():
                yield CommandsChanged(commands=step.commands)
            case Pause():
                await _wait(turn, step.seconds, step.cooperative)
            case WaitForCancel():
                await _wait(turn, None, step.cooperative)
            case WaitFor():
                await _wait_for(step, turn)
            case Fail():
                raise step.error if step.error is not None else RuntimeError(step.message)
            case Emit():
                yield step.output
            case Stop():
                yield TurnCompleted(stop_reason=step.stop_reason)

    async def _tool(self, step: UseTool, turn: TurnContext) -> AsyncIterator[TurnOutput]:
        call_id = step.tool_call_id or self.engine.next_tool_call_id()
        yield ToolCallStarted(
            tool_call_id=call_id,
            title=step.title,
            tool_kind=step.kind,
            status="in_progress" if step.start_running else "pending",
            raw_input=step.raw_input,
            name=step.name,
            locations=step.locations,
            content=step.content,
        )
        if step.ask and not step.start_running:
            decision = await turn.request_permission(
                ToolCallUpdate(tool_call_id=call_id), step.options
            )
            self.engine.decisions.append(decision)
            if not decision.allowed:
                reason = "Cancelled" if decision.outcome == "cancelled" else "Permission denied"
                yield ToolCallEnded(
                    tool_call_id=call_id, status="failed", content=(_text_content(reason),)
                )
                if turn.cancelled:
                    raise _Stopped
                return
        self.engine.tool_runs.append(call_id)
        if not step.start_running:
            yield ToolCallProgress(tool_call_id=call_id, status="in_progress")
        if step.work:
            cancelled = await _wait(turn, step.work, True, stop=False)
            if cancelled:
                yield ToolCallEnded(
                    tool_call_id=call_id, status="failed", content=(_text_content("Cancelled"),)
                )
                raise _Stopped
        yield ToolCallEnded(
            tool_call_id=call_id,
            status="failed" if step.fail else "completed",
            content=(_text_content(step.result),),
            raw_output={"result": step.result},
        )

    async def set_mode(self, mode_id: str) -> None:
        """Record the mode switch."""
        self.modes_set.append(mode_id)

    async def set_config_option(
        self, config_id: str, value: ConfigValue
    ) -> Sequence[SessionConfigOption] | None:
        """Record the change; the engine's ``config_hook`` may return a new complete list."""
        self.config_set.append((config_id, value))
        hook = self.engine.config_hook
        if hook is None:
            return None
        return hook(config_id, value, self.engine.capabilities.config_options)

    async def aclose(self) -> None:
        """Record the close."""
        self.closed = True


async def _wait_for(step: WaitFor, turn: TurnContext) -> None:
    async with anyio.create_task_group() as race:

        async def cancelled() -> None:
            await turn.wait_cancelled()
            if step.noticed is not None:
                step.noticed.set()
            if step.cooperative:
                race.cancel_scope.cancel()

        race.start_soon(cancelled)
        await step.event.wait()
        race.cancel_scope.cancel()
    if step.cooperative and turn.cancelled:
        raise _Stopped


def _text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(content=TextContentBlock(text=text))


async def _wait(
    turn: TurnContext, seconds: float | None, cooperative: bool, *, stop: bool = True
) -> bool:
    """Wait (forever when ``seconds`` is None); return whether the turn was cancelled.

    Cooperative waits end when the turn is cancelled (raising ``_Stopped`` if ``stop``).
    """
    if not cooperative:
        if seconds is None:
            await anyio.sleep_forever()
        else:
            await anyio.sleep(seconds)
        return False
    with anyio.move_on_after(seconds if seconds is not None else float("inf")):
        await turn.wait_cancelled()
    if turn.cancelled and stop:
        raise _Stopped
    return turn.cancelled


@dataclass
class ScriptedEngine:
    """An engine that plays scripts (see the module docstring).

    Attributes:
        turns: Scripts for the next prompts, in order (consumed across all sessions).
        capabilities: What the engine declares (content types, modes, options, commands).
        respond: The steps for a prompt once ``turns`` is used up (default: echo its text).
        snapshots: Yield a ``StateSnapshot`` after each turn.
        config_hook: Answers ``set_config_option`` with a complete option list, or ``None``.
    """

    turns: Iterable[Sequence[ScriptStep]] = ()
    capabilities: EngineCapabilities = field(default_factory=EngineCapabilities)
    respond: Responder = _echo
    snapshots: bool = True
    config_hook: ConfigHook | None = None
    sessions: list[ScriptedSession] = field(default_factory=list[ScriptedSession], init=False)
    tool_runs: list[str] = field(default_factory=list[str], init=False)
    decisions: list[PermissionAnswer] = field(default_factory=list[PermissionAnswer], init=False)
    _queue: deque[Sequence[ScriptStep]] = field(init=False)
    _tool_calls: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        """Queue the scripts."""
        self._queue = deque(self.turns)

    def add_turns(self, *scripts: Sequence[ScriptStep]) -> None:
        """Queue more scripts for the next prompts."""
        self._queue.extend(scripts)

    def next_script(self, text: str) -> Sequence[ScriptStep]:
        """The steps for the next prompt (text ``text``)."""
        if self._queue:
            return self._queue.popleft()
        return self.respond(text)

    def next_tool_call_id(self) -> str:
        """A fresh tool-call id (``call-<n>-<uuid>``: unique across processes too)."""
        self._tool_calls += 1
        return f"call-{self._tool_calls}-{new_id()}"

    async def open_session(self, context: SessionContext) -> ScriptedSession:
        """Open (and record) a session."""
        session = ScriptedSession(self, context)
        self.sessions.append(session)
        return session

    def session(self, session_id: str) -> ScriptedSession:
        """The most recently opened session object for ``session_id``.

        Raises:
            KeyError: no session with that id was opened.
        """
        for session in reversed(self.sessions):
            if session.context.session_id == session_id:
                return session
        raise KeyError(session_id)

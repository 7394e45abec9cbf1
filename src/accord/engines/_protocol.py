"""The engine protocol: what an engine implements so that the agent runtime can serve it over ACP.

An *engine* is whatever produces the work of a session: a model loop, a framework adapter, a
scripted test double. The runtime does everything ACP asks of an agent around it (sessions,
the store, capabilities, controls, permissions, cancellation, ``session/update``) and talks to
the engine through three small types:

:class:`Engine`
    One per process. Declares :class:`EngineCapabilities` (what prompts it accepts, which
    modes, config options and slash commands it offers) and opens sessions. An engine that
    offers no controls makes the runtime advertise none.
:class:`EngineSession`
    One per ACP session, built by :meth:`Engine.open_session` from a :class:`SessionContext`
    (the place to build a model client, connect MCP servers, restore history). Runs prompt
    turns: :meth:`EngineSession.run_turn` is an async generator of canonical events.
:class:`TurnContext`
    Given to each turn: the turn's id, the current mode and config values, permission
    requests, questions to the user (elicitation), and the cancellation signal.

A turn, from the engine's side::

    async def run_turn(self, prompt, turn):
        reply = new_id()
        async for delta in self.model.stream(prompt):
            yield TextChunk(message_id=reply, content=TextContentBlock(text=delta))
        yield ToolCallStarted(tool_call_id="t1", title="Edit main.py", tool_kind="edit")
        decision = await turn.request_permission(ToolCallUpdate(tool_call_id="t1"), OPTIONS)
        if not decision.allowed:
            yield ToolCallEnded(tool_call_id="t1", status="failed")
        ...
        yield StateSnapshot(state=self.history_as_json())
        yield TurnCompleted(stop_reason="end_turn")

Rules the runtime enforces (breaking one raises :class:`~accord.errors.LocalProtocolError`
into the turn, which then fails):

* Chunk events carry a ``message_id``: the same for every chunk of one message, a fresh
  :func:`~accord.events.new_id` for the next message.
* Tool calls follow ``pending -> in_progress -> completed | failed``
  (:mod:`._tool_calls`); ids are unique within the session. Progress events
  carry only what changed.
* ``TurnCompleted`` is optional and, if yielded, last. Returning without it completes the turn
  with ``end_turn`` (or ``cancelled`` if the turn was cancelled).
* ``UserMessageChunk``, ``PermissionPending`` and ``TurnError`` are the runtime's to publish:
  it records the prompt, each permission request, and any exception the turn raises.
* To persist state across ``session/load``, yield a ``StateSnapshot``; its ``state`` returns
  as :attr:`SessionContext.history`.

Part of the engine contract (:mod:`accord.engines`); sits on the event classes
(:mod:`._events`), :mod:`accord.schema` and the trace context of :mod:`accord.roles`. The
agent runtime (:mod:`accord.agent`, above) drives engines through it; the adapters
(:mod:`accord.engines.pydantic_ai`) implement it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol, TypeAlias, final

import anyio
from pydantic import JsonValue

from ..errors import LocalProtocolError
from ..roles import TraceContext, current_trace
from ..schema import (
    AvailableCommand,
    ContentBlock,
    ElicitationSchema,
    McpServer,
    MessageMcpResponse,
    PermissionOption,
    SessionConfigOption,
    SessionMode,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
)
from ._elicitation import Elicitation, ElicitationAnswer, ElicitationMode
from ._events import ROOT_AGENT_ID, Event, SubAgentEvent

__all__ = (
    "MODEL_PURPOSE_HEADER",
    "ConfigValue",
    "Engine",
    "EngineCapabilities",
    "EngineSession",
    "McpNotificationHandler",
    "McpOverAcp",
    "PermissionAnswer",
    "PermissionOutcome",
    "PermissionRequester",
    "SessionContext",
    "TerminalHandle",
    "TerminalService",
    "TextFileReader",
    "TextFileWriter",
    "TurnContext",
    "TurnOutput",
)

MODEL_PURPOSE_HEADER: Final = "x-accord-purpose"
"""HTTP header an engine puts on a model request that is not part of a turn's conversation
(value: what it is for, e.g. ``title``), so a model proxy or a test's fake model can tell such
side requests from the turn's own (``accord.testing.FakeOpenAIServer`` answers them apart)."""

ConfigValue: TypeAlias = str | bool
"""A config option's value: the value id of a ``select`` option, or a ``boolean``."""

TurnOutput: TypeAlias = Event | SubAgentEvent
"""What a turn yields: an event of the root agent, or one of a sub-agent."""

PermissionOutcome: TypeAlias = Literal[
    "allow_once", "allow_always", "reject_once", "reject_always", "cancelled"
]
"""How a permission request ended: the kind of the option the user chose, or cancelled."""

_ALLOWING: Final = frozenset({"allow_once", "allow_always"})
_EMPTY: Final[Mapping[str, ConfigValue]] = MappingProxyType({})


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class EngineCapabilities:
    """What an engine accepts and offers; the runtime advertises exactly this.

    Attributes:
        image: Prompts may contain image blocks.
        audio: Prompts may contain audio blocks.
        embedded_context: Prompts may contain embedded resources (``resource`` blocks).
            Text and resource links are always accepted.
        mcp_http: The engine connects to MCP servers over HTTP (stdio is mandatory).
        mcp_sse: The engine connects to MCP servers over SSE (deprecated by MCP).
        mcp_acp: The engine uses MCP servers the client hosts over the ACP connection
            (``acp`` servers, unstable ACP), through :attr:`SessionContext.mcp_over_acp`.
        nes: The engine suggests next edits (unstable ACP ``nes/*``, ``document/*``): it
            implements :class:`~._nes.EditSuggester` too, and the runtime keeps the client's
            documents for it.
        modes: The session modes offered; empty means no modes.
        default_mode_id: The mode a new session starts in (default: the first mode).
        config_options: The config options offered, each with its default as current value.
        commands: The slash commands offered (sent as ``available_commands_update``).

    Raises:
        ValueError: ``default_mode_id`` is not one of ``modes``.
    """

    image: bool = False
    audio: bool = False
    embedded_context: bool = False
    mcp_http: bool = False
    mcp_sse: bool = False
    mcp_acp: bool = False
    nes: bool = False
    modes: tuple[SessionMode, ...] = ()
    default_mode_id: str | None = None
    config_options: tuple[SessionConfigOption, ...] = ()
    commands: tuple[AvailableCommand, ...] = ()

    def __post_init__(self) -> None:
        """Check that the default mode is one of the modes."""
        if self.default_mode_id is not None and all(
            mode.id != self.default_mode_id for mode in self.modes
        ):
            raise ValueError(f"default_mode_id {self.default_mode_id!r} is not among modes")

    @property
    def initial_mode_id(self) -> str | None:
        """The mode a new session starts in, or ``None`` when no modes are offered."""
        if self.default_mode_id is not None:
            return self.default_mode_id
        return self.modes[0].id if self.modes else None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionAnswer:
    """The answer to :meth:`TurnContext.request_permission`.

    Attributes:
        outcome: The kind of the option chosen, or ``cancelled`` (the turn was cancelled, or
            the client could not ask).
        option_id: The chosen option's id; ``None`` when cancelled.
    """

    outcome: PermissionOutcome
    option_id: str | None = None

    @property
    def allowed(self) -> bool:
        """Whether the tool call may run (``allow_once`` or ``allow_always``)."""
        return self.outcome in _ALLOWING


PermissionRequester: TypeAlias = Callable[
    [str, ToolCallUpdate, Sequence[PermissionOption]], Awaitable[PermissionAnswer]
]
"""The runtime's side of a permission request: ``(agent_id, tool_call, options)``."""


class TextFileReader(Protocol):
    """Reads text files through the client (``fs/read_text_file``), unsaved edits included."""

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        """Return the file's text from 1-based ``line`` for at most ``limit`` lines.

        Raises:
            RequestError: the client refused or failed (e.g. the file does not exist).
        """
        ...


class TextFileWriter(Protocol):
    """Writes text files through the client (``fs/write_text_file``)."""

    async def write_text_file(self, path: str, content: str) -> None:
        """Create or overwrite the file at absolute ``path`` with ``content``.

        Raises:
            RequestError: the client refused or failed.
        """
        ...


class TerminalHandle(Protocol):
    """A command running in the client's terminal; release it when done."""

    @property
    def terminal_id(self) -> str:
        """The id to embed as tool-call content (``TerminalToolCallContent``)."""
        ...

    async def output(self) -> TerminalOutputResponse:
        """Return the output so far (truncated from the start) and the exit status if done."""
        ...

    async def wait_for_exit(self) -> WaitForTerminalExitResponse:
        """Wait for the command to exit and return its exit code or signal."""
        ...

    async def kill(self) -> None:
        """Kill the command; output and exit status stay readable until released."""
        ...

    async def release(self) -> None:
        """Kill the command if it still runs and free the terminal (mandatory)."""
        ...


class TerminalService(Protocol):
    """Runs commands in the client's terminals (``terminal/*``)."""

    async def create_terminal(
        self,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> TerminalHandle:
        """Start ``command`` with ``args``; returns at once, the command runs on.

        Raises:
            RequestError: the client refused or failed.
        """
        ...


McpNotificationHandler: TypeAlias = Callable[[str, dict[str, Any] | None], Awaitable[None]]
"""Receives an inner MCP notification (``method``, ``params``) for an active request."""


class McpOverAcp(Protocol):
    """The ``acp`` MCP servers of the client that opened the session (``mcp/message``).

    The binding of the pinned schema: one inner MCP request (of the stateless MCP revision
    2026-07-28: its ``params._meta`` carries the protocol version and client capabilities)
    per ``mcp/message`` request; the answer is the inner outcome.
    """

    async def request(
        self,
        server_id: str,
        request_id: str,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        on_notification: McpNotificationHandler | None = None,
    ) -> MessageMcpResponse:
        """Send one inner request to server ``server_id`` and return its outcome.

        ``on_notification`` gets the server's notifications for this request while it is
        active. Cancelling the caller cancels the request (``$/cancel_request``).

        Raises:
            RequestError: the client failed the binding (-33001: it hosts no such server).
            ConnectionClosed: the client is gone (before or during the call).
            LocalProtocolError: the session names no such ``acp`` server, or
                ``(server_id, request_id)`` is already active.
        """
        ...


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionContext:
    """Everything an engine gets when a session is created, loaded or resumed.

    Attributes:
        session_id: The ACP session id.
        cwd: The session's absolute working directory.
        additional_directories: More absolute workspace roots, in the client's order.
        mcp_servers: MCP servers the client asked the agent to connect to.
        history: The ``state`` of the session's last ``StateSnapshot``; ``None`` for a new
            session (or one whose engine never saved state).
        mode_id: The current mode (``None`` when no modes are offered).
        config_values: The current value of each config option, by option id.
        file_reader: Reads files through the client; ``None`` unless the client advertised
            ``fs.readTextFile``.
        file_writer: Writes files through the client; ``None`` unless the client advertised
            ``fs.writeTextFile``.
        terminals: Runs commands in the client; ``None`` unless the client advertised
            ``terminal``.
        title: The session's title (``None``: untitled; an engine may title it with a
            ``TitleChanged`` event, as the coder does from the first prompt).
        elicitation: Questions to the user while the session opens, tied to the client's
            request (``session/new``, ``load``, ``resume`` or ``fork``: request-scoped, the
            client may not know the session yet); usable only until ``open_session``
            returns (then it raises :class:`~accord.errors.LocalProtocolError`). ``None``
            when the client advertised no elicitation mode or nothing is being served.
        mcp_over_acp: Reaches the ``acp`` MCP servers in :attr:`mcp_servers`: they are hosted
            by the client that named them, and each request goes on the connection of that
            client while it is attached (again after it reconnects). ``None`` when nothing
            is being served. (The runtime refuses ``acp`` servers unless the
            engine declared ``mcp_acp``.)
    """

    session_id: str
    cwd: str
    additional_directories: tuple[str, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()
    history: JsonValue = None
    mode_id: str | None = None
    config_values: Mapping[str, ConfigValue] = field(default_factory=lambda: _EMPTY)
    file_reader: TextFileReader | None = None
    file_writer: TextFileWriter | None = None
    terminals: TerminalService | None = None
    title: str | None = None
    elicitation: Elicitation | None = None
    mcp_over_acp: McpOverAcp | None = None


@final
class TurnContext:
    """What one prompt turn gives its engine: ids, controls, permissions, questions, cancellation.

    Built by the runtime; engines only read it and call :meth:`request_permission` and the
    ``elicit_*`` methods. Tests build it directly.

    Args:
        turn_id: The turn's id (UUID v7), shared by every event of the turn.
        request_permission: The runtime's permission requester.
        cancel_event: Set by the runtime when the client sends ``session/cancel``.
        agent_id: The agent this context is for (:data:`ROOT_AGENT_ID` unless derived with
            :meth:`for_sub_agent`).
        mode_id: The session's mode when the turn began.
        config_values: The config values when the turn began.
        elicitation: The runtime's side of questions to the user (``None``: none can be
            asked, as when the client advertised no elicitation mode).
        trace: The W3C trace context the turn continues (default: the current one, which
            the runtime sets from the prompt's ``_meta``, or to the turn's span when tracing).
    """

    __slots__ = (
        "_cancel_event",
        "_elicitation",
        "_request_permission",
        "agent_id",
        "config_values",
        "mode_id",
        "trace",
        "turn_id",
    )

    def __init__(
        self,
        *,
        turn_id: str,
        request_permission: PermissionRequester,
        cancel_event: anyio.Event,
        agent_id: str = ROOT_AGENT_ID,
        mode_id: str | None = None,
        config_values: Mapping[str, ConfigValue] = _EMPTY,
        elicitation: Elicitation | None = None,
        trace: TraceContext | None = None,
    ) -> None:
        """Create a turn context; see the class docstring for the arguments."""
        #: The trace the turn continues (``None``: the client sent none and tracing is off);
        #: pass it on to the model API (e.g. ``traceparent`` headers) so the trace goes on.
        self.trace = trace if trace is not None else current_trace()
        self.turn_id = turn_id
        self.agent_id = agent_id
        self.mode_id = mode_id
        self.config_values = config_values
        self._request_permission = request_permission
        self._cancel_event = cancel_event
        self._elicitation = elicitation

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled the turn.

        Check it between steps; when it turns true, stop calling the model and tools, end
        running tool calls (``failed``), and return. The runtime answers the prompt with
        ``cancelled`` however the turn ends; an engine that does not stop is cancelled at its
        next ``await`` after a grace period.
        """
        return self._cancel_event.is_set()

    async def wait_cancelled(self) -> None:
        """Wait until the turn is cancelled (race it against long waits in a task group)."""
        await self._cancel_event.wait()

    async def request_permission(
        self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionAnswer:
        """Ask the user to confirm a tool call and wait for the answer.

        ``tool_call`` names the call (its ``tool_call_id``, and whatever else the user should
        see); ``options`` are the choices, each of a kind ``allow_once``, ``allow_always``,
        ``reject_once`` or ``reject_always``. Returns ``cancelled`` at once if the turn is
        already cancelled, and ``cancelled`` if the turn is cancelled while waiting.

        Raises:
            ValueError: two options share an ``option_id`` (the answer would be ambiguous;
                clients refuse such a request).
        """
        ids = [option.option_id for option in options]
        if len(set(ids)) != len(ids):
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"permission options must have distinct option ids: {repeated}")
        if self.cancelled:
            return PermissionAnswer(outcome="cancelled")
        return await self._request_permission(self.agent_id, tool_call, options)

    @property
    def elicitation_modes(self) -> frozenset[ElicitationMode]:
        """How the user can be asked a question: ``form``, ``url``, both or neither.

        Only the modes the client advertised; with neither, ask in the reply instead.
        """
        return frozenset() if self._elicitation is None else self._elicitation.modes

    async def elicit_form(
        self, message: str, schema: ElicitationSchema, *, tool_call_id: str | None = None
    ) -> ElicitationAnswer:
        """Ask the user to fill in a form and wait for the answer (``elicitation/create``).

        ``message`` says what is asked and why; ``schema`` lists the fields (strings,
        numbers, integers, booleans, single and multi-select enums, with titles, defaults
        and ``required``). Never ask for secrets this way. ``tool_call_id`` ties the
        question to a tool call the client already knows. The answer's content has been
        checked against ``schema``. Returns ``cancel`` at once if the turn is already
        cancelled, and ``cancel`` if it is cancelled while the user is being asked (the
        question is withdrawn with ``$/cancel_request``).

        Raises:
            LocalProtocolError: the client did not advertise form elicitation
                (:attr:`elicitation_modes`).
            RemoteProtocolError: the client accepted with content that does not match.
            RequestError: the client answered with an error.
        """
        if self.cancelled:
            return ElicitationAnswer(action="cancel")
        return await self._elicitor("form").form(message, schema, tool_call_id=tool_call_id)

    async def elicit_url(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        tool_call_id: str | None = None,
    ) -> ElicitationAnswer:
        """Ask the user to open ``url`` (sign-in, payment, anything secret) and wait.

        ``accept`` means the user agreed to open it, not that they are done there: when the
        out-of-band step completes, call :meth:`complete_elicitation` with the answer's
        ``elicitation_id`` (a fresh one unless given). Cancellation as for
        :meth:`elicit_form`.

        Raises:
            LocalProtocolError: the client did not advertise URL elicitation.
            RequestError: the client answered with an error.
        """
        if self.cancelled:
            return ElicitationAnswer(action="cancel", elicitation_id=elicitation_id)
        return await self._elicitor("url").url(
            message, url, elicitation_id=elicitation_id, tool_call_id=tool_call_id
        )

    async def complete_elicitation(self, elicitation_id: str) -> None:
        """Tell the client that the URL question ``elicitation_id`` is done.

        Raises:
            LocalProtocolError: the client did not advertise URL elicitation.
        """
        await self._elicitor("url").complete(elicitation_id)

    def _elicitor(self, mode: ElicitationMode) -> Elicitation:
        if self._elicitation is None:
            raise LocalProtocolError(
                f"the user cannot be asked in {mode} mode: the client advertised no "
                "elicitation; ask in the reply instead"
            )
        return self._elicitation

    def for_sub_agent(self, agent_id: str) -> TurnContext:
        """Return this turn's context as seen by sub-agent ``agent_id``.

        Same turn, controls and cancellation; permission requests are attributed to it.
        """
        return TurnContext(
            turn_id=self.turn_id,
            request_permission=self._request_permission,
            cancel_event=self._cancel_event,
            agent_id=agent_id,
            mode_id=self.mode_id,
            config_values=self.config_values,
            elicitation=self._elicitation,
            trace=self.trace,
        )


class EngineSession(Protocol):
    """One session of an engine. Subclass it explicitly to inherit the default hooks."""

    def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        """Run one prompt turn, yielding events as they happen (an async generator).

        ``prompt`` holds only block types the engine's capabilities accept (the runtime
        checks). Turns of one session never overlap. Raising an exception fails the turn:
        the runtime records a ``TurnError`` and answers the prompt with an error (or with
        ``cancelled`` if the turn was cancelled).
        """
        ...

    async def set_mode(self, mode_id: str) -> None:
        """Hook: the client switched to ``mode_id`` (one of the offered modes).

        May be called while a turn runs; the next turn's context carries the new mode either
        way. The default does nothing.
        """
        return None

    async def set_config_option(
        self, config_id: str, value: ConfigValue
    ) -> Sequence[SessionConfigOption] | None:
        """Hook: the client set config option ``config_id`` to ``value`` (already validated).

        Return the complete option list if the change affects other options; return
        ``None`` (the default) to let the runtime just record the value.

        Raises:
            RequestError: to refuse the change (e.g. ``InvalidParams``).
        """
        return None

    async def aclose(self) -> None:
        """Release what :meth:`Engine.open_session` acquired; called once, at session end."""
        return None


class Engine(Protocol):
    """Produces sessions; one engine serves every session of an agent process."""

    @property
    def capabilities(self) -> EngineCapabilities:
        """What the engine accepts and offers (read once, when the runtime starts)."""
        ...

    async def open_session(self, context: SessionContext) -> EngineSession:
        """Build the session's engine state: called on ``session/new``, load and resume.

        Raises:
            RequestError: to refuse the session (e.g. ``AuthRequired``).
        """
        ...

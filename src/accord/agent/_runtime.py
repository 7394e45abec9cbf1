"""``AgentRuntime``: an ACP agent that serves any engine.

The runtime is an :class:`accord.roles.Agent`: serve it with :func:`accord.roles.serve_agent`
or :func:`accord.roles.run_agent_stdio` (or :meth:`AgentRuntime.serve`, which also closes the
sessions at the end). Everything ACP asks of an agent happens here or in the modules it
delegates to; the engine only produces events (:mod:`accord.engines`).

What it advertises is derived, never written by hand: every session method is implemented,
so ``loadSession`` and ``sessionCapabilities`` (``list``, ``delete``, ``resume``, ``close``,
``fork``, ``title``, ``status``, ``archive``, ``additionalDirectories``) are advertised by
:class:`~accord.roles.Agent` from the overridden handlers; ``promptCapabilities`` and
``mcpCapabilities`` come from the engine's :class:`EngineCapabilities`. Methods not
implemented (``authenticate``, ``logout``, ...) answer -32601; so do NES and document sync
for an engine without ``nes``, and ``providers/*`` for an engine that is no
:class:`~accord.engines.ProviderSettings` (each then unadvertised).

Per method (details in the modules named):

* session methods: :mod:`._session_table`;
* ``session/prompt``: checks the content (:func:`accord.engines.check_prompt`), takes the
  session's lifecycle to ``running`` (one prompt at a time: a concurrent one answers -32602, see
  :mod:`._errors`), opens a :class:`~accord.store.GroupCommitWriter` for the turn, runs it
  (:mod:`._turn`), flushes, saves the session's state, answers with the stop reason;
* ``session/cancel``: asks the running turn to stop (:class:`._live_session.TurnHandle`);
  so does a ``$/cancel_request`` naming a running ``session/prompt``
  (:func:`accord.jsonrpc.on_cancel_request`): the prompt answers ``cancelled``, not -32800;
* ``session/set_mode``, ``session/set_config_option``: :mod:`._controls` checks the request;
  the engine's hook runs (``set_mode`` also for the ``mode``-category option); the change is
  published (``current_mode_update``, ``config_option_update``: both when the mode changes
  and a ``mode`` option mirrors it), stored and saved in the session's state before the
  response.

One runtime serves any number of client connections at once (:meth:`AgentRuntime.serve`, one
call per connection): the live sessions, the engine and the store are shared; each connection
has a :class:`~._links.ClientLink` (its capabilities, its choice of extended events, its
attachments). Several clients may be attached to one session (``session/resume`` or
``session/load`` of a session live here attaches the caller, see :mod:`._sessions`): each
receives every update in the same order, any may prompt (one turn at a time), questions go to
all of them (first valid answer wins), and ``fs/*`` and ``terminal/*`` requests go to the
client that sent the prompt when it advertised them (else to another attached client that
did, see :mod:`._client_services`). Every update carries ``_meta["acp/cursor"]``; a client
that comes back resumes from it (:mod:`._cursor`). A dropped connection cancels nothing while
other clients are attached or the runtime has a grace period (``grace``): the turn finishes
and is stored, and a session with no client attached is closed (not deleted) once the grace
period has passed. With ``grace=0`` (the default; stdio, where the one client leaving ends
the process) the turn of a session whose last client leaves is cancelled, as before.

Below: :mod:`accord.roles`, :mod:`accord.events`, :mod:`accord.store`. Above: engine adapters
(:mod:`accord.engines`), the coding agent and the CLI.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast, final

import anyio

from ..engines import (
    ConfigChanged,
    EditSuggester,
    Engine,
    ModeChanged,
    ProviderSettings,
    check_prompt,
    new_id,
    prompt_capabilities,
)
from ..errors import (
    CURSOR_META_KEY,
    TURN_NOTICE_METHOD,
    USER_MESSAGE_ID_META_KEY,
    ConnectionClosed,
    InvalidParams,
    LocalProtocolError,
    MethodNotFound,
    RequestError,
    TransportError,
)
from ..events import EXTENSION_META_KEY, extension_capability, wants_extended_events
from ..jsonrpc import on_cancel_request
from ..roles import (
    Agent,
    AgentSideConnection,
    TraceContext,
    mcp_refusal,
    unadvertised_mcp_servers,
)
from ..schema import (
    AcceptNesNotification,
    AgentCapabilities,
    ArchiveSessionRequest,
    ArchiveSessionResponse,
    CancelNotification,
    CloseNesRequest,
    CloseNesResponse,
    CloseSessionRequest,
    CloseSessionResponse,
    ContentBlock,
    DeleteSessionRequest,
    DeleteSessionResponse,
    DidChangeDocumentNotification,
    DidCloseDocumentNotification,
    DidFocusDocumentNotification,
    DidOpenDocumentNotification,
    DidSaveDocumentNotification,
    DisableProviderRequest,
    DisableProviderResponse,
    ForkSessionRequest,
    ForkSessionResponse,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListProvidersRequest,
    ListProvidersResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    McpCapabilities,
    McpServer,
    MessageMcpNotification,
    NewSessionRequest,
    NewSessionResponse,
    PromptCapabilities,
    PromptRequest,
    PromptResponse,
    RejectNesNotification,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionStatusRequest,
    SessionStatusResponse,
    SetProviderRequest,
    SetProviderResponse,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
    SetSessionModeResponse,
    SetSessionTitleRequest,
    SetSessionTitleResponse,
    StartNesRequest,
    StartNesResponse,
    StopReason,
    SuggestNesRequest,
    SuggestNesResponse,
    UnarchiveSessionRequest,
    UnarchiveSessionResponse,
    Usage,
)
from ..store import (
    DEFAULT_MAX_PENDING,
    DEFAULT_PAGE_SIZE,
    GroupCommitWriter,
    SessionStore,
    SqliteSessionStore,
    StoreError,
)
from ._activity_log import ActivityLog
from ._attachment import DEFAULT_ATTACHMENT_QUEUE, Announce, Attachment
from ._links import ClientLink, link_context
from ._live_session import LiveSession, TurnHandle
from ._nes import NesSessions
from ._ownership import DEFAULT_TURN_LEASE_SECONDS, TurnOwnership
from ._session_table import SessionTable
from ._tracing import Tracing, tracing_configured
from ._turn import CANCEL_GRACE_SECONDS, CLEANUP_TIMEOUT_SECONDS, TurnRunner
from ._turn_outcomes import TurnOutcomes

if TYPE_CHECKING:
    from ..transports import Transport

__all__ = ("CURSOR_CAPABILITY", "DEFAULT_REMOTE_GRACE_SECONDS", "AgentRuntime", "RuntimeStatistics")

#: Advertised under ``agentCapabilities._meta``: updates carry ``_meta["acp/cursor"]`` and
#: ``session/resume`` / ``session/load`` accept one (see :mod:`._cursor`), and several
#: clients may attach to one session.
CURSOR_CAPABILITY: Final = "acp/cursor"

#: A grace period suited to network serving: a laptop that sleeps through a coffee break
#: finds its sessions live when it comes back.
DEFAULT_REMOTE_GRACE_SECONDS: Final = 600.0

#: During a turn, events gather this long before a commit: clients then see streamed output
#: in steps of at most 50 ms (20 updates a second, smooth to a reader), and a streaming turn
#: costs about 20 transactions a second instead of one per chunk. Each transaction is a
#: hand-off to the database thread that stalls the busy event loop for a GIL switch interval;
#: measured with a pydantic-ai engine: 76% of pydantic-ai alone per commit, 86% with 50 ms.
TURN_COMMIT_WINDOW = 0.05

logger = logging.getLogger("accord.agent")
_N = TypeVar("_N")


@final
@dataclass(frozen=True, slots=True)
class RuntimeStatistics:
    """Counts of one runtime.

    Attributes:
        live_sessions: Sessions live in the runtime.
        running_turns: Of those, sessions running a prompt turn.
        connections: Connections being served.
        attachments: Clients attached to sessions, counted per session.
    """

    live_sessions: int
    running_turns: int
    connections: int = 0
    attachments: int = 0


_MAX_CLIENT_NAME: Final = 80


def _cancel_turn(session: LiveSession, turn: TurnHandle) -> None:
    """``$/cancel_request`` for ``turn``'s prompt: cancel it as ``session/cancel`` does."""
    if session.turn is turn:
        session.request_cancel()
    else:  # not yet the session's turn, or already over
        turn.cancel()


def _tell_others(
    session: LiveSession,
    driver: ClientLink,
    *,
    running: bool,
    tag: str | None = None,
    stop: StopReason | None = None,
) -> None:
    """Tell the session's other attached clients that ``driver``'s turn started or ended
    (``_accord/turn``); the end once each has the turn's updates, with the turn's
    ``stopReason`` (if it reached one) and its prompt's ``tag`` (if it had one: the
    prompting client, back on a new link, knows its turn by it). Never waits."""
    params: dict[str, Any] = {
        "sessionId": session.session_id,
        "running": running,
        "client": driver.name,
    }
    if not running:
        if stop is not None:
            params["stopReason"] = stop
        if tag is not None:
            params["tag"] = tag
    seq = session.pipeline.committed_seq
    for other, attachment in list(session.links.items()):
        if other is driver or other.gone:
            continue
        try:
            session.start_for(
                other,
                _tell,
                other,
                attachment,
                None if running else seq,
                params,
                name="turn notice",
            )
        except LocalProtocolError:  # the session is closing
            return


async def _tell(
    link: ClientLink, attachment: Attachment, after_seq: int | None, params: dict[str, Any]
) -> None:
    if after_seq is not None:
        await attachment.wait_sent(after_seq)
    await _notify_turn(link, params)


async def _notify_turn(link: ClientLink, params: dict[str, Any]) -> None:
    """Send one ``_accord/turn`` notice to a client, unless it has left (or leaves meanwhile)."""
    if link.gone:
        return
    try:
        await link.connection.ext_notification(TURN_NOTICE_METHOD, params)
    except (ConnectionClosed, TransportError):
        pass  # it left meanwhile


#: The longest prompt tag (``_meta.accord.prompt`` of ``session/prompt``) echoed back; a
#: longer one, or one that is not a string, asks for nothing.
_MAX_PROMPT_TAG: Final = 64


def _prompt_tag(meta: dict[str, Any] | None) -> str | None:
    """The tag a client put on its prompt to be told where its turn starts, if any."""
    accord: object = (meta or {}).get(EXTENSION_META_KEY)
    if not isinstance(accord, dict):
        return None
    tag = cast("dict[str, Any]", accord).get("prompt")
    return tag if isinstance(tag, str) and 0 < len(tag) <= _MAX_PROMPT_TAG else None


def _own_turn_notice(session_id: str, link: ClientLink, tag: str) -> Announce:
    """The notice that tells the prompting client its turn starts here (``_accord/turn``
    with its prompt's tag), sent by its attachment just before the turn's first event."""
    params = {"sessionId": session_id, "running": True, "prompt": tag}

    async def announce() -> None:
        await _notify_turn(link, params)

    return announce


def _shown_name(name: str) -> str | None:
    """A client's name as other clients are told it: printable, one line, bounded."""
    cleaned = " ".join("".join(c if c.isprintable() else " " for c in name).split())
    return cleaned[:_MAX_CLIENT_NAME] or None


def _default_agent_info() -> Implementation:
    """``agentInfo`` when none is given: accord's own name and version."""
    try:
        version = importlib.metadata.version("accord")
    except importlib.metadata.PackageNotFoundError:
        version = "0"
    return Implementation(name="accord", title="accord agent runtime", version=version)


class AgentRuntime(Agent):
    """An ACP agent that serves ``engine``, persisting every session in ``store``.

    Args:
        engine: Produces the work of each session.
        store: Where sessions and their events are kept (default: a
            :class:`~accord.store.SqliteSessionStore` at
            :func:`~accord.store.default_store_path`, owned and closed by the runtime).
        agent_info: Sent as ``agentInfo`` in ``initialize`` (default: accord and its version).
        cancel_grace: Seconds a cancelled turn's engine may keep going before its current
            step is cancelled.
        list_page_size: Sessions per ``session/list`` page (the store caps it at 100).
        max_pending_events: Events a turn may have appended but not yet committed and sent
            before it waits (backpressure from the disk and the client).
        turn_lease: Seconds a claim on a running session lasts without renewal (see
            :mod:`._ownership`: one process at a time runs a session's turns; a process that
            dies frees its sessions within this).
        tracer_provider: An OpenTelemetry tracer provider: spans for turns, model calls and
            tool calls (:mod:`._tracing`). Without one, tracing is on only when the
            environment configures OpenTelemetry (then with the global provider).
        activity: Write the activity projection of every committed event as NDJSON: an
            :class:`~accord.agent.ActivityLog` (shared by several runtimes, closed by its
            owner) or a file path (opened for appending, closed by :meth:`aclose`).
        live_from_elsewhere: Several server processes share the store: relay to every
            attached client, live, the events other processes commit to its session (a turn
            running elsewhere; see :mod:`._elsewhere`). Each attached session then follows
            the store (one listening connection each on PostgreSQL).
        grace: Seconds a session with no client attached stays live (its running turn goes
            on); 0 (the default) cancels the turn of a session whose last client leaves
            (the module docstring says more).
        attachment_queue: Updates a client may have waiting before it falls behind and is
            sent from the store instead.
    """

    additional_directories = True
    #: Every encoding :mod:`accord.documents` counts in; the client's preference picks one.
    position_encodings = ("utf-16", "utf-8", "utf-32")

    def __init__(
        self,
        engine: Engine,
        *,
        store: SessionStore | None = None,
        agent_info: Implementation | None = None,
        cancel_grace: float = CANCEL_GRACE_SECONDS,
        list_page_size: int = DEFAULT_PAGE_SIZE,
        max_pending_events: int = DEFAULT_MAX_PENDING,
        turn_lease: float = DEFAULT_TURN_LEASE_SECONDS,
        activity: ActivityLog | str | os.PathLike[str] | None = None,
        tracer_provider: Any = None,
        live_from_elsewhere: bool = False,
        grace: float = 0.0,
        attachment_queue: int = DEFAULT_ATTACHMENT_QUEUE,
    ) -> None:
        """Create the runtime; see the class docstring for the arguments.

        Raises:
            OSError: the activity file cannot be opened.
            ValueError: ``grace`` is negative or ``attachment_queue`` below 1.
        """
        if not grace >= 0:
            raise ValueError(f"grace must be a number of seconds >= 0, got {grace!r}")
        if attachment_queue < 1:
            raise ValueError(f"attachment_queue must be at least 1, got {attachment_queue}")
        self._tracing: Tracing | None = None
        if tracer_provider is not None or tracing_configured(os.environ):
            self._tracing = Tracing(tracer_provider)
        self._engine = engine
        self._capabilities = engine.capabilities
        self._outcomes = TurnOutcomes()  # told to clients that lost the link mid-turn
        if self._capabilities.nes and not isinstance(engine, EditSuggester):
            raise TypeError("an engine declaring nes must implement EditSuggester")
        #: Each connection's NES sessions and documents (made on its first NES message).
        self._nes: dict[ClientLink, NesSessions] = {}
        self._nes_encodings: dict[ClientLink, str] = {}
        self._owns_store = store is None
        self._store: SessionStore = store if store is not None else SqliteSessionStore()
        self.agent_info = agent_info if agent_info is not None else _default_agent_info()
        self._cancel_grace = cancel_grace
        self._max_pending = max_pending_events
        self._ownership = TurnOwnership(self._store, lease_seconds=turn_lease)
        self._links: dict[AgentSideConnection, ClientLink] = {}
        self._connected = 0
        self._owns_activity = activity is not None and not isinstance(activity, ActivityLog)
        if activity is None or isinstance(activity, ActivityLog):
            self._activity = activity
        else:
            self._activity = ActivityLog(activity)
        self._sessions = SessionTable(
            engine,
            self._store,
            link=self._link,
            page_size=list_page_size,
            turn_grace=cancel_grace,
            grace=grace,
            max_queue=attachment_queue,
            taps=() if self._activity is None else (self._activity,),
            live_from_elsewhere=live_from_elsewhere,
        )

    # ------------------------------------------------------------------ properties

    @property
    def store(self) -> SessionStore:
        """The session store."""
        return self._store

    @property
    def engine(self) -> Engine:
        """The engine."""
        return self._engine

    @property
    def activity(self) -> ActivityLog | None:
        """The activity log, if the runtime writes one."""
        return self._activity

    @property
    def grace(self) -> float:
        """Seconds a session with no client attached stays live."""
        return self._sessions.grace

    @property
    def extended_events(self) -> bool:
        """Whether the current connection's client opted in to ``_accord/event``."""
        link = self._find_link()
        return link is not None and link.extended

    def statistics(self) -> RuntimeStatistics:
        """Return the runtime's counts."""
        live = self._sessions.live.values()
        return RuntimeStatistics(
            live_sessions=len(live),
            running_turns=sum(1 for session in live if session.turn is not None),
            connections=len(self._links),
            attachments=sum(len(session.links) for session in live),
        )

    # ------------------------------------------------------------------ connections

    def on_connect(self, client: AgentSideConnection) -> None:
        """A connection starts serving this runtime: give it a link (module docstring).

        Every task of the connection (created after this, in the same task) sees the link.
        """
        super().on_connect(client)
        self._connected += 1
        link = ClientLink(client, self._connected)
        self._links[client] = link
        link_context.set(link)

    def _find_link(self) -> ClientLink | None:
        link = link_context.get()
        if link is not None and self._links.get(link.connection) is link:
            return link
        return None

    def _link(self) -> ClientLink:
        link = self._find_link()
        if link is None:
            raise LocalProtocolError("the agent is not connected to a client")
        return link

    @property
    def client(self) -> AgentSideConnection:
        """The connection of the client being served (in a handler: the one that called)."""
        return self._link().connection

    async def _watch(self, link: ClientLink) -> None:
        """Wait until ``link``'s client is gone, then detach it everywhere."""
        await link.connection.connection.wait_peer_closed()
        self._leave(link)

    def _leave(self, link: ClientLink) -> list[LiveSession]:
        nes = self._nes.pop(link, None)
        if nes is not None:
            nes.close_all()
        self._nes_encodings.pop(link, None)
        alone = self._sessions.leave(link)
        if self._links.get(link.connection) is link:
            del self._links[link.connection]
        return alone

    # ------------------------------------------------------------------ lifecycle

    async def aclose(self) -> None:
        """Close every live session (their turns are cancelled) and, if the runtime created
        it, the store."""
        await self._sessions.close_all()
        if self._owns_activity and self._activity is not None:
            self._activity.close()
        if self._owns_store:
            await self._store.aclose()

    async def serve(self, transport: Transport) -> None:
        """Serve one client over ``transport`` until it disconnects.

        Call it once per connection, concurrently as needed: the connections share the
        runtime's sessions. It returns when the connection's work is done (a turn its client
        started included: a disconnect does not cancel it, see the module docstring) and
        the sessions the client left alone have outlived the grace period (each is then
        closed, unless a client attached meanwhile), and the sessions it made live are closed:
        their task groups (senders to every attached client, claim renewal, the feed of
        other processes' events) run in this call's task group, so a session keeps serving
        the clients still attached after this one left. It does not close the runtime: call
        :meth:`aclose` when no connection is left to serve (at the end of a stdio process).
        """
        async with anyio.create_task_group() as lingering:
            # The sessions this client makes live run their task groups here: they outlive
            # the connection (other clients may stay attached), never this call.
            connection = AgentSideConnection(self, transport)
            link = self._links[connection]
            link.host = functools.partial(lingering.start_soon, name="accord live session")
            async with connection:
                try:
                    await connection.connection.wait_peer_closed()
                finally:
                    for session in self._leave(link):
                        lingering.start_soon(self._sessions.expire, session)
                await connection.wait_closed()

    # ------------------------------------------------------------------ capabilities

    def prompt_capabilities(self) -> PromptCapabilities | None:
        """Image, audio and embedded context exactly as the engine accepts them."""
        return prompt_capabilities(self._capabilities)

    def mcp_capabilities(self) -> McpCapabilities | None:
        """MCP over HTTP / SSE / ACP when the engine connects to such servers."""
        caps = self._capabilities
        if not (caps.mcp_http or caps.mcp_sse or caps.mcp_acp):
            return None
        capabilities = McpCapabilities(http=caps.mcp_http, sse=caps.mcp_sse)
        if caps.mcp_acp:
            capabilities.acp = True
        return capabilities

    async def mcp_notification(self, notification: MessageMcpNotification) -> None:
        """``mcp/message`` (notification): a hosted MCP server's message for an active
        request of the engine's, routed to it (:mod:`._mcp_caller`); others are dropped."""
        link = self._find_link()
        if link is not None:
            await link.mcp.deliver(notification)

    def offered_methods(self) -> set[str]:
        """The handlers overridden, less NES and document sync when the engine has no NES,
        less ``providers/*`` when it is no :class:`~accord.engines.ProviderSettings`."""
        offered = super().offered_methods()
        if not self._capabilities.nes:
            offered = {m for m in offered if not m.startswith(("nes/", "document/"))}
        if not isinstance(self._engine, ProviderSettings):
            offered = {m for m in offered if not m.startswith("providers/")}
        return offered

    # ------------------------------------------------------------------ providers

    def _provider_settings(self) -> ProviderSettings:
        engine = self._engine
        assert isinstance(engine, ProviderSettings)  # offered only then
        return engine

    async def list_providers(self, request: ListProvidersRequest) -> ListProvidersResponse:
        """``providers/list``: the providers of the engine (a ``ProviderSettings``)."""
        providers = await self._provider_settings().list_providers()
        return ListProvidersResponse(providers=list(providers))

    async def set_provider(self, request: SetProviderRequest) -> SetProviderResponse:
        """``providers/set``: the engine replaces one provider's configuration."""
        await self._provider_settings().set_provider(request)
        return SetProviderResponse()

    async def disable_provider(self, request: DisableProviderRequest) -> DisableProviderResponse:
        """``providers/disable``: the engine stops routing through one provider."""
        await self._provider_settings().disable_provider(request.provider_id)
        return DisableProviderResponse()

    def agent_capabilities(self) -> AgentCapabilities:
        """The derived capabilities, plus the ``_accord/event`` extension, the turn-start
        notice (``accord.turnStart``: a prompt tagged ``_meta.accord.prompt`` is told where its
        turn starts), the turn-end outcome (``accord.turnEnd``: the end notice carries the
        turn's ``stopReason`` and ``tag``, a resume ``turn.tag`` and ``endedTurns``) and the
        cursor capability (``{"acp/cursor": {"attach": true}}``) in ``_meta``."""
        capabilities = super().agent_capabilities()
        extension = extension_capability()
        accord = {**extension[EXTENSION_META_KEY], "turnStart": True, "turnEnd": True}
        meta = {
            **(capabilities.meta or {}),
            EXTENSION_META_KEY: accord,
            CURSOR_CAPABILITY: {"attach": True},
        }
        return capabilities.model_copy(update={"meta": meta})

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        """Record the client's capabilities and event opt-in, then negotiate as usual."""
        capabilities = request.client_capabilities
        link = self._find_link()
        if link is not None:  # (called directly, outside a connection, it only answers)
            info = request.client_info
            link.configure(
                capabilities,
                extended=wants_extended_events(request.meta)
                or wants_extended_events(capabilities.meta),
                name=None if info is None else _shown_name(info.title or info.name),
            )
            link.connection.connection._start_soon(self._watch, link, name="accord client watch")
        response = await super().initialize(request)
        encoding = response.agent_capabilities.position_encoding
        if link is not None and encoding is not None:
            self._nes_encodings[link] = encoding
        return response

    # ------------------------------------------------------------------ NES (._nes)

    def _nes_sessions(self) -> NesSessions:
        link = self._link()
        nes = self._nes.get(link)
        if nes is None:
            assert isinstance(self._engine, EditSuggester)  # offered only then
            nes = self._nes[link] = NesSessions(self._engine)
            encoding = self._nes_encodings.get(link, "utf-16")
            if encoding in ("utf-16", "utf-8", "utf-32"):
                nes.encoding = encoding
        return nes

    async def start_nes(self, request: StartNesRequest) -> StartNesResponse:
        """``nes/start``: a new NES session on this connection (:meth:`NesSessions.start`)."""
        return self._nes_sessions().start(request)

    async def suggest_nes(self, request: SuggestNesRequest) -> SuggestNesResponse:
        """``nes/suggest``: the engine's suggestions (:meth:`NesSessions.suggest`)."""
        return await self._nes_sessions().suggest(request)

    async def close_nes(self, request: CloseNesRequest) -> CloseNesResponse:
        """``nes/close``: forget the session, cancel its suggestions (:meth:`NesSessions.close`)."""
        return self._nes_sessions().close(request)

    async def accept_nes(self, notification: AcceptNesNotification) -> None:
        """``nes/accept`` (notification): the engine is told (:meth:`NesSessions.accept`)."""
        await self._nes_notified(self._nes_sessions().accept(notification))

    async def reject_nes(self, notification: RejectNesNotification) -> None:
        """``nes/reject`` (notification): the engine is told (:meth:`NesSessions.reject`)."""
        await self._nes_notified(self._nes_sessions().reject(notification))

    async def did_open_document(self, notification: DidOpenDocumentNotification) -> None:
        """``document/didOpen`` (notification): the text is kept (:meth:`NesSessions.did_open`)."""
        self._document_event(self._nes_sessions().did_open, notification)

    async def did_change_document(self, notification: DidChangeDocumentNotification) -> None:
        """``document/didChange`` (notification): applied exactly, or the document is out of
        sync (:meth:`NesSessions.did_change`)."""
        self._document_event(self._nes_sessions().did_change, notification)

    async def did_close_document(self, notification: DidCloseDocumentNotification) -> None:
        """``document/didClose`` (notification): forgotten (:meth:`NesSessions.did_close`)."""
        self._document_event(self._nes_sessions().did_close, notification)

    async def did_save_document(self, notification: DidSaveDocumentNotification) -> None:
        """``document/didSave`` (notification): checked (:meth:`NesSessions.did_save`)."""
        self._document_event(self._nes_sessions().did_save, notification)

    async def did_focus_document(self, notification: DidFocusDocumentNotification) -> None:
        """``document/didFocus`` (notification): remembered (:meth:`NesSessions.did_focus`)."""
        self._document_event(self._nes_sessions().did_focus, notification)

    @staticmethod
    def _document_event(handler: Callable[[_N], None], notification: _N) -> None:
        """Run a document event's handler; what it refuses is logged (notifications get no
        answer; an out-of-sync document fails its next ``nes/suggest``)."""
        try:
            handler(notification)
        except RequestError as error:
            logger.warning("%s refused: %s", type(notification).__name__, error)

    @staticmethod
    async def _nes_notified(verdict: Awaitable[None]) -> None:
        try:
            await verdict
        except RequestError as error:
            logger.warning("NES verdict refused: %s", error)

    # ------------------------------------------------------------------ sessions

    def _session_fields(self, session: LiveSession, *, reopened: bool = False) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        modes = session.controls.modes_state()
        if modes is not None:
            fields["modes"] = modes
        options = session.controls.response_options(boolean=self._link().boolean_options)
        if options is not None:
            fields["config_options"] = options
        # The announcements that follow the response (see ._sessions), for clients that wait;
        # after load/resume, how many clients are attached (the caller included: more than
        # one, it joined a session others have open) and, while a turn runs, which client's
        # prompt runs it (``turn.client``: its clientInfo title or name, null if it gave none;
        # ``turn.tag``: its prompt's tag) and how the last turns ended (``endedTurns``): a
        # client back after losing its link mid-turn learns from them how its turn went.
        accord: dict[str, Any] = {"announcements": session.announcements}
        if reopened:
            accord["clients"] = len(session.links)
            driver = session.driver
            if driver is not None and session.turn is not None:
                accord["turn"] = {"client": driver.name}
                tag = self._outcomes.running(session.session_id)
                if tag is not None:
                    accord["turn"]["tag"] = tag
            accord.update(self._outcomes.meta(session.session_id))
        fields["meta"] = {"accord": accord}
        return fields

    def _check_mcp_servers(self, servers: Sequence[McpServer] | None) -> None:
        """Refuse MCP servers of a transport this agent did not advertise (-32602)."""
        if not servers:
            return
        mcp = self.mcp_capabilities()
        advertised = {} if mcp is None else {"mcpCapabilities": mcp.to_wire()}
        refused = unadvertised_mcp_servers(servers, advertised)
        if refused:
            message, data = mcp_refusal(refused, advertised)
            raise InvalidParams(message, data)

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        """``session/new``: see :meth:`SessionTable.create`.

        Raises:
            InvalidParams: an MCP server of a transport not advertised, or a bad path.
        """
        self._check_mcp_servers(request.mcp_servers)
        session = await self._sessions.create(
            request.cwd, request.additional_directories, request.mcp_servers
        )
        return NewSessionResponse(session_id=session.session_id, **self._session_fields(session))

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        """``session/load``: replay everything, then answer (see :mod:`._session_table`)."""
        self._check_mcp_servers(request.mcp_servers)
        session = await self._sessions.restore(
            request.session_id,
            request.cwd,
            request.additional_directories,
            request.mcp_servers,
            replay_history=True,
            cursor=(request.meta or {}).get(CURSOR_META_KEY),
        )
        return LoadSessionResponse(**self._session_fields(session, reopened=True))

    async def resume_session(self, request: ResumeSessionRequest) -> ResumeSessionResponse:
        """``session/resume``: restore without replay (MCP servers default to the stored)."""
        servers = request.mcp_servers if "mcp_servers" in request.model_fields_set else None
        self._check_mcp_servers(servers)
        session = await self._sessions.restore(
            request.session_id,
            request.cwd,
            request.additional_directories,
            servers,
            replay_history=False,
            cursor=(request.meta or {}).get(CURSOR_META_KEY),
        )
        return ResumeSessionResponse(**self._session_fields(session, reopened=True))

    async def fork_session(self, request: ForkSessionRequest) -> ForkSessionResponse:
        """``session/fork`` (unstable): a live copy under a new id; the source is unchanged."""
        self._check_mcp_servers(request.mcp_servers)
        session = await self._sessions.fork(
            request.session_id, request.cwd, request.additional_directories, request.mcp_servers
        )
        return ForkSessionResponse(session_id=session.session_id, **self._session_fields(session))

    async def close_session(self, request: CloseSessionRequest) -> CloseSessionResponse:
        """``session/close``: cancel the turn, free the session, keep what is stored."""
        await self._sessions.close(request.session_id)
        return CloseSessionResponse()

    async def delete_session(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        """``session/delete``: remove from the store (unknown ids succeed silently)."""
        await self._sessions.delete(request.session_id)
        return DeleteSessionResponse()

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        """``session/list``: newest first, ``cwd`` filter, opaque cursor, capped page."""
        return await self._sessions.list(request)

    async def set_session_title(self, request: SetSessionTitleRequest) -> SetSessionTitleResponse:
        """``session/set_title`` (unstable): store the title; answer the one stored (trimmed).

        Raises:
            InvalidParams: empty, too long, or with a control character (-32602).
            SessionNotActive: no such session is stored (-32002).
        """
        title = await self._sessions.set_title(request.session_id, request.title)
        return SetSessionTitleResponse(title=title)

    async def archive_session(self, request: ArchiveSessionRequest) -> ArchiveSessionResponse:
        """``session/archive`` (unstable): hidden from ``session/list`` by default, shut if
        live; load and resume refuse it until unarchived (see :mod:`._session_table`).

        Raises:
            SessionNotActive: no such session is stored (-32002).
        """
        await self._sessions.archive(request.session_id, archived=True)
        return ArchiveSessionResponse()

    async def unarchive_session(self, request: UnarchiveSessionRequest) -> UnarchiveSessionResponse:
        """``session/unarchive`` (unstable): listed again; never loads nor resumes it.

        Raises:
            SessionNotActive: no such session is stored (-32002).
        """
        await self._sessions.archive(request.session_id, archived=False)
        return UnarchiveSessionResponse()

    async def session_status(self, request: SessionStatusRequest) -> SessionStatusResponse:
        """``session/status`` (unstable): ``open`` or ``saved``, with no side effect.

        Raises:
            SessionNotActive: the session is neither live here nor stored (-32002).
        """
        status, details = await self._sessions.status(request.session_id)
        return SessionStatusResponse(status=status, meta={"accord": details})

    # ------------------------------------------------------------------ prompt turns

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        """``session/prompt``: run one turn (see :mod:`._turn`).

        Raises:
            SessionNotActive: the session is not live here (-32002).
            InvalidParams: undeclared content (-32602), nothing recorded.
            PromptInProgress: a turn already runs (-32602).
            SessionOwnedElsewhere: another process runs a turn of the session (-32602).

        A copy of the session that another process continued since it was opened here is
        brought up to date first (:meth:`SessionTable.catch_up`): the turn continues from
        what that process committed.
        """
        link = self._link()
        session = self._sessions.active(request.session_id)
        check_prompt(request.prompt, self._capabilities)
        await session.announced.wait()
        session.host(link.host)  # the claim's renewal runs in the session's task group
        session.lifecycle.apply("prompt")
        turn = TurnHandle(new_id(), session.pipeline.epoch)
        message_id = new_id()  # the prompt's, told to the prompter in the response
        tag = _prompt_tag(request.meta)
        announce = None if tag is None else _own_turn_notice(session.session_id, link, tag)
        session.turn = turn
        session.driver = link
        # $/cancel_request for this prompt: the turn winds down as on session/cancel, its
        # tool calls ended, and the prompt answers cancelled (a valid result, which ACP
        # allows for a cancelled request; clients already know it from session/cancel).
        on_cancel_request(functools.partial(_cancel_turn, session, turn))
        told = False
        stop: StopReason | None = None
        try:
            async with self._ownership.turn(
                session.session_id,
                session.last_seq,
                start_soon=session.start_soon,
                catch_up=functools.partial(self._sessions.catch_up, session, owned=True),
            ):
                _tell_others(session, link, running=True)
                told = True
                self._outcomes.started(session.session_id, tag)
                if self._tracing is None:
                    stop = await self._run_turn(
                        session, turn, request.prompt, link, message_id, announce
                    )
                else:
                    with self._tracing.turn(
                        session_id=session.session_id,
                        turn_id=turn.turn_id,
                        parent=TraceContext.from_meta(request.meta),
                    ):
                        stop = await self._run_turn(
                            session, turn, request.prompt, link, message_id, announce
                        )
        finally:
            if session.driver is link:
                session.driver = None
            if session.turn is turn:
                session.turn = None
            if session.lifecycle.state != "closed":
                session.lifecycle.apply("turn_end")
            turn.finish()
            if told:
                self._outcomes.ended(session.session_id, tag, stop)
                _tell_others(session, link, running=False, tag=tag, stop=stop)
        assert stop is not None  # _run_turn returned
        meta: dict[str, Any] = {USER_MESSAGE_ID_META_KEY: message_id}
        if turn.tokens is None:
            return PromptResponse(stop_reason=stop, meta=meta)
        # The turn's tokens (unstable ``usage``; see docs/architecture.md on unstable fields).
        spent_in, spent_out = turn.tokens
        usage = Usage(
            total_tokens=spent_in + spent_out, input_tokens=spent_in, output_tokens=spent_out
        )
        return PromptResponse(stop_reason=stop, usage=usage, meta=meta)

    async def _run_turn(
        self,
        session: LiveSession,
        turn: TurnHandle,
        prompt: list[ContentBlock],
        link: ClientLink,
        message_id: str,
        announce: Announce | None,
    ) -> StopReason:
        runner = TurnRunner(
            session,
            turn,
            link=link,
            store=self._store,
            grace=self._cancel_grace,
            user_message_id=message_id,
            announce=announce,
        )
        stop: StopReason = "end_turn"
        try:
            async with GroupCommitWriter(
                self._store,
                session.pipeline.on_committed,
                max_pending=self._max_pending,
                commit_window=TURN_COMMIT_WINDOW,
            ) as writer:
                session.pipeline.attach_writer(writer)
                try:
                    stop = await runner.run(prompt)
                finally:
                    with (
                        anyio.CancelScope(shield=True),
                        anyio.move_on_after(CLEANUP_TIMEOUT_SECONDS),
                    ):
                        await session.pipeline.detach_writer()
        finally:
            if turn.epoch == session.pipeline.epoch:
                lost = session.pipeline.forget_uncommitted()
                if lost:
                    logger.warning(
                        "session %s: %d events of the turn were not stored (the store failed);"
                        " the next event follows the stored chain",
                        session.session_id,
                        lost,
                    )
                with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT_SECONDS):
                    try:
                        await session.save(self._store)
                    except StoreError as exc:
                        logger.warning(
                            "session %s: saving state failed: %s", session.session_id, exc
                        )
                # The answer (or the error) comes after the turn's updates.
                await session.settle(link)
        return stop

    async def cancel(self, notification: CancelNotification) -> None:
        """``session/cancel``: ask the running turn to stop (nothing to do when idle).

        Any client attached to the session may cancel its turn (also one that did not
        prompt); a connection that did not load or resume the session cannot, even with the
        same token (a notification has no answer: it is ignored, with a log line).
        """
        session = self._sessions.live.get(notification.session_id)
        if session is None or self._find_link() not in session.links:
            logger.debug(
                "session/cancel for a session not active on this connection: %r",
                notification.session_id,
            )
            return
        session.request_cancel()

    # ------------------------------------------------------------------ controls

    async def set_session_mode(self, request: SetSessionModeRequest) -> SetSessionModeResponse:
        """``session/set_mode``: switch to an offered mode (-32602 otherwise, unchanged).

        Raises:
            MethodNotFound: the engine offers no modes.
        """
        session = self._sessions.active(request.session_id)
        await session.announced.wait()
        controls = session.controls
        if not controls.offers_modes:
            raise MethodNotFound(
                "this agent offers no session modes", {"method": "session/set_mode"}
            )
        controls.check_mode(request.mode_id)
        if request.mode_id != controls.mode_id:
            await session.engine.set_mode(request.mode_id)
            _, config_changed = controls.set_mode(request.mode_id)
            await session.publish(ModeChanged(mode_id=request.mode_id))
            if config_changed:
                await session.publish(ConfigChanged(config_options=tuple(controls.options())))
            await session.save(self._store)
            await session.settle(self._link())
        return SetSessionModeResponse()

    async def set_session_config_option(
        self, request: SetSessionConfigOptionRequest
    ) -> SetSessionConfigOptionResponse:
        """``session/set_config_option``: set a value, answer the complete list.

        Raises:
            MethodNotFound: the engine offers no config options.
            InvalidParams: unknown option, or a value it cannot take (nothing changes).
        """
        session = self._sessions.active(request.session_id)
        await session.announced.wait()
        controls = session.controls
        if not controls.offers_options:
            raise MethodNotFound(
                "this agent offers no config options", {"method": "session/set_config_option"}
            )
        boolean = self._link().boolean_options
        value = controls.check_value(request.config_id, request.value, boolean=boolean)
        if value != controls.values.get(request.config_id):
            if controls.selects_mode(request.config_id, value):
                # The mode option: a mode switch, through the engine's mode hook.
                assert isinstance(value, str)
                await session.engine.set_mode(value)
                returned = None
            else:
                returned = await session.engine.set_config_option(request.config_id, value)
            if returned is not None:
                mode_changed = controls.adopt(returned)
            else:
                _, mode_changed = controls.set_value(request.config_id, value)
            await session.publish(ConfigChanged(config_options=tuple(controls.options())))
            if mode_changed and controls.mode_id is not None:
                await session.publish(ModeChanged(mode_id=controls.mode_id))
            await session.save(self._store)
            await session.settle(self._link())
        return SetSessionConfigOptionResponse(config_options=controls.options(boolean=boolean))

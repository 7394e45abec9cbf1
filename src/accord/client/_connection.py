"""``ConnectedAgent``: a live, initialized connection to an agent, with typed calls.

Made by :func:`~accord.client.connect`. It owns nothing itself (``connect`` owns the transport,
the task group and the host services) and offers: what was negotiated (protocol version,
agent info and capabilities, auth methods), sessions (``new_session``, ``load_session``,
``resume_session``, ``fork_session``, ``list_sessions``, ``close_session``,
``delete_session``), a session's standing (``set_session_title``, ``session_status``,
``archive_session``, ``unarchive_session``),
authentication, model providers (``list_providers``, ``set_provider``,
``disable_provider``) and extension calls. Every call the agent did not
advertise raises :class:`~accord.errors.LocalProtocolError` before anything is sent.

Above: programs (CI bots, orchestrators, ``accord run``). Below: the typed
:class:`~accord.roles.ClientSideConnection`, the sessions and the session router of this package.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import anyio

from ..errors import (
    CURSOR_META_KEY,
    InvalidParams,
    LocalProtocolError,
    SessionNotFound,
    is_cursor_rejection,
)
from ..jsonrpc import ConnectionStatistics
from ..roles import ClientSideConnection, is_advertised, mcp_refusal, unadvertised_mcp_servers
from ..schema import (
    AgentCapabilities,
    ArchiveSessionRequest,
    AuthenticateRequest,
    AuthMethod,
    AuthStatusRequest,
    AuthStatusResponse,
    AuthStatusUpdateNotification,
    CloseSessionRequest,
    DeleteSessionRequest,
    DisableProviderRequest,
    ForkSessionRequest,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListProvidersRequest,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    LogoutRequest,
    McpServer,
    NewSessionRequest,
    ProviderInfo,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionArchiveFilter,
    SessionInfo,
    SessionStatusRequest,
    SetProviderRequest,
    SetSessionTitleRequest,
    UnarchiveSessionRequest,
    WorkspaceFolder,
)
from ..transports import Transport
from ._handlers import SessionRouter
from ._nes import NesSession, start_nes_session
from ._reconnect import Reconnector
from ._session import ClientSession, _SessionShared
from ._view import clean_name

__all__ = ("ConnectedAgent", "ConnectedAgentStatistics", "absolute_path")

logger = logging.getLogger("accord.client")

_ReopenRequest = LoadSessionRequest | ResumeSessionRequest | ForkSessionRequest
_ReopenResponse = LoadSessionResponse | ResumeSessionResponse | ForkSessionResponse


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectedAgentStatistics:
    """A snapshot of an :class:`ConnectedAgent`.

    Attributes:
        sessions: sessions open on this connection.
        running_turns: those running a prompt turn.
        pending_permissions: permission requests the policy is deciding.
        early_updates: updates held for sessions not known yet.
        connection: the JSON-RPC connection's queues.
        early_update_bytes: the size (as JSON) of those updates; bounded by
            ``MAX_EARLY_UPDATE_BYTES``.
        dropped_early_updates: updates for unknown sessions dropped because that buffer was
            full (each drop is logged as a warning, once per session).
    """

    sessions: int
    running_turns: int
    pending_permissions: int
    early_updates: int
    connection: ConnectionStatistics
    early_update_bytes: int = 0
    dropped_early_updates: int = 0


class ConnectedAgent:
    """A live, initialized connection to an agent; made by :func:`connect`."""

    def __init__(
        self,
        calls: ClientSideConnection,
        router: SessionRouter,
        shared: _SessionShared,
        transport: Transport,
        default_cwd: str,
        reconnector: Reconnector | None = None,
    ) -> None:
        self._calls = calls
        self._reconnector = reconnector
        self._router = router
        self._shared = shared
        self._transport = transport
        self._default_cwd = default_cwd
        response = calls.initialize_response
        assert response is not None
        self._initialize_response: InitializeResponse = response

    def __repr__(self) -> str:
        info = self.agent_info
        name = f"{info.name} {info.version}" if info else "unnamed agent"
        return f"ConnectedAgent({name!r}, sessions={len(self._router.sessions)})"

    # ------------------------------------------------------------------ what was negotiated

    @property
    def initialize_response(self) -> InitializeResponse:
        """The agent's answer to ``initialize``."""
        return self._initialize_response

    @property
    def protocol_version(self) -> int:
        """The ACP version spoken on this connection."""
        return self._initialize_response.protocol_version

    @property
    def agent_info(self) -> Implementation | None:
        """The agent's name and version, if it sent them."""
        return self._initialize_response.agent_info

    @property
    def agent_capabilities(self) -> AgentCapabilities:
        """What the agent advertised."""
        return self._initialize_response.agent_capabilities

    @property
    def auth_methods(self) -> Sequence[AuthMethod]:
        """The ways the agent offers to authenticate (empty: it needs none)."""
        return self._initialize_response.auth_methods

    @property
    def calls(self) -> ClientSideConnection:
        """The typed connection underneath, for calls this class does not wrap."""
        return self._calls

    @property
    def transport(self) -> Transport:
        """The transport to the agent (a ``SubprocessTransport`` for a spawned agent; after
        a reconnect, the new one)."""
        return self._transport

    @property
    def closed(self) -> bool:
        """Whether the agent's side has ended (it exited, or closed the transport) and, for a
        served agent, reconnecting stopped; False while reconnecting."""
        if self._reconnector is not None and not self._reconnector.gave_up:
            return False
        return self._calls.closed

    @property
    def reconnects(self) -> int:
        """How many times a dropped connection to a served agent was re-established."""
        return 0 if self._reconnector is None else self._reconnector.reconnects

    def supports(self, *capability: str) -> bool:
        """Whether the agent advertised a capability, by its wire path.

        For example ``conn.supports("loadSession")`` or
        ``conn.supports("sessionCapabilities", "list")``.
        """
        return is_advertised(self._calls.agent_capabilities, capability)

    def statistics(self) -> ConnectedAgentStatistics:
        """Counts of sessions, turns, pending permissions and queued messages."""
        sessions = self._router.sessions.values()
        return ConnectedAgentStatistics(
            sessions=len(sessions),
            running_turns=sum(s.state in ("running", "cancelling") for s in sessions),
            pending_permissions=sum(len(s._pending_permissions) for s in sessions),
            early_updates=self._router.early_updates,
            connection=self._calls.statistics(),
            early_update_bytes=self._router.early_update_bytes,
            dropped_early_updates=self._router.dropped_early_updates,
        )

    # ------------------------------------------------------------------ authentication

    async def authenticate(self, method_id: str) -> None:
        """Authenticate with one of :attr:`auth_methods` (an ``agent``-type method).

        Raises:
            RequestError: the agent refused.
        """
        await self._calls.authenticate(AuthenticateRequest(method_id=method_id))

    async def logout(self) -> None:
        """Log out; new sessions need :meth:`authenticate` again.

        Raises:
            LocalProtocolError: the agent does not offer ``logout``.
        """
        await self._calls.logout(LogoutRequest())

    async def auth_status(self) -> AuthStatusResponse:
        """The agent's authentication state now (unstable ``auth/status``): its ``state``
        (``authenticated``, ``unauthenticated``, ``not_required``; treat anything else as
        ``unknown``) and the accounts it shows.

        Raises:
            LocalProtocolError: the agent did not advertise ``auth.status`` (nothing is sent).
        """
        return await self._calls.auth_status(AuthStatusRequest())

    @property
    def auth_update(self) -> AuthStatusUpdateNotification | None:
        """The agent's last ``auth/status_update`` (``None`` before one came)."""
        return self._router.auth_update

    async def wait_auth_update(self, after: int = 0) -> AuthStatusUpdateNotification:
        """Wait until more than ``after`` ``auth/status_update`` notifications have come
        (:attr:`auth_updates`); return the last one."""
        router = self._router
        while router.auth_updates <= after or router.auth_update is None:
            await router.auth_changed.wait()
        return router.auth_update

    @property
    def auth_updates(self) -> int:
        """How many ``auth/status_update`` notifications the agent has sent."""
        return self._router.auth_updates

    # ------------------------------------------------------------------ model providers

    def _require_providers(self, method: str) -> None:
        if not self.supports("providers"):
            raise LocalProtocolError(
                "the agent does not offer provider configuration (no agentCapabilities."
                f"providers); {method} was not sent"
            )

    async def list_providers(self) -> list[ProviderInfo]:
        """The model providers the agent can route through (unstable ``providers/list``):
        each with its protocols, whether it is ``required`` and its ``current`` routing
        (``None``: disabled).

        Raises:
            LocalProtocolError: the agent did not advertise ``providers`` (nothing is sent).
            RequestError: the agent refused.
        """
        self._require_providers("providers/list")
        response = await self._calls.list_providers(ListProvidersRequest())
        return list(response.providers)

    async def set_provider(
        self,
        provider_id: str,
        *,
        api_type: str,
        base_url: str,
        headers: Mapping[str, str] | None = None,
        api_key: str | None = None,
    ) -> None:
        """Replace the whole configuration of one provider (unstable ``providers/set``).

        The key goes in a header, as the provider's API expects it: ``api_key`` is sent as
        ``x-api-key`` when ``api_type`` is ``anthropic``, else as ``Authorization: Bearer``
        (or give the header in ``headers``). It is sent to the agent and kept nowhere here.

        Raises:
            LocalProtocolError: the agent did not advertise ``providers`` (nothing is sent).
            RequestError: the agent refused (-32602: an unknown id, an empty key, ...).
        """
        self._require_providers("providers/set")
        sent = dict(headers or {})
        if api_key is not None:
            sent.update(_key_headers(api_type, api_key))
        await self._calls.set_provider(
            SetProviderRequest(
                provider_id=provider_id, api_type=api_type, base_url=base_url, headers=sent
            )
        )

    async def disable_provider(self, provider_id: str) -> None:
        """Stop the agent routing through one provider (unstable ``providers/disable``).

        Raises:
            LocalProtocolError: the agent did not advertise ``providers`` (nothing is sent).
            RequestError: the agent refused (-32602: an unknown or a ``required`` provider).
        """
        self._require_providers("providers/disable")
        await self._calls.disable_provider(DisableProviderRequest(provider_id=provider_id))

    # ------------------------------------------------------------------ next edit suggestions

    async def start_nes(
        self,
        *,
        workspace_uri: str | None = None,
        workspace_folders: Sequence[WorkspaceFolder] | None = None,
    ) -> NesSession:
        """Start a next-edit-suggestion session (``nes/start``): documents are opened,
        changed and asked about through it (see :class:`~accord.client.NesSession`).

        Raises:
            LocalProtocolError: the agent did not advertise ``nes`` (nothing is sent).
            RequestError: the agent refused (e.g. too many NES sessions).
        """
        return await start_nes_session(
            self._calls, workspace_uri=workspace_uri, workspace_folders=workspace_folders
        )

    # ------------------------------------------------------------------ sessions

    @property
    def sessions(self) -> Mapping[str, ClientSession]:
        """The sessions open on this connection, by id."""
        return self._router.sessions

    def session(self, session_id: str) -> ClientSession:
        """The open session with that id.

        Raises:
            SessionNotFound: no such session is open on this connection.
        """
        session = self._router.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(f"no session {session_id!r} is open on this connection")
        return session

    async def new_session(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        mcp_servers: Sequence[McpServer] = (),
    ) -> ClientSession:
        """Create a session (``session/new``).

        Args:
            cwd: the session's working directory; default: the ``cwd`` given to
                :func:`connect`, else this process's. Made absolute.
            additional_directories: further workspace roots (the agent must advertise
                ``sessionCapabilities.additionalDirectories``).
            mcp_servers: MCP servers the agent should connect to.

        Raises:
            AuthRequired: the agent wants :meth:`authenticate` first.
            LocalProtocolError: additional directories or MCP servers of a transport the
                agent does not accept.
            RequestError: the agent refused otherwise.
        """
        root, extra = self._roots(cwd, additional_directories)
        mcp_servers = self._with_hosted(mcp_servers)
        request = NewSessionRequest(cwd=root, mcp_servers=mcp_servers)
        if extra:
            request.additional_directories = list(extra)
        response = await self._calls.new_session(request)
        session = self._open(response.session_id, root, extra)
        session._apply_setup(response.modes, response.config_options)
        await session._await_announcements(response.meta)
        return session

    async def load_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str] | None = None,
        *,
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        mcp_servers: Sequence[McpServer] = (),
        cursor: str | None = None,
    ) -> ClientSession:
        """Open an existing session (``session/load``); the agent replays its history first.

        The replayed messages, tool calls and plan fold into the returned session's view.
        With ``cursor`` (a :attr:`ClientSession.cursor` from an earlier connection) the agent
        sends only what came after it; when it cannot honour the cursor, the session is
        loaded in full instead.

        Raises:
            LocalProtocolError: the agent does not offer ``session/load``, the session is
                already open on this connection, or an MCP server of a transport the agent
                did not advertise.
            RequestError: the agent refused (e.g. an unknown session).
        """
        return await self._reopen(
            LoadSessionRequest,
            self._calls.load_session,
            session_id,
            cwd,
            additional_directories,
            mcp_servers,
            cursor,
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str] | None = None,
        *,
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        mcp_servers: Sequence[McpServer] = (),
        cursor: str | None = None,
    ) -> ClientSession:
        """Reopen an existing session without replay (``session/resume``).

        With ``cursor`` (a :attr:`ClientSession.cursor` from an earlier connection) the agent
        first sends exactly the updates after it (what a reconnect needs); when it cannot
        honour the cursor (:func:`accord.errors.is_cursor_rejection`), the session is loaded
        in full (``session/load``) instead, if the agent offers that.

        Raises:
            LocalProtocolError: the agent does not offer ``session/resume``, or the session
                is already open on this connection.
            RequestError: the agent refused.
        """
        try:
            return await self._reopen(
                ResumeSessionRequest,
                self._calls.resume_session,
                session_id,
                cwd,
                additional_directories,
                mcp_servers,
                cursor,
            )
        except InvalidParams as exc:
            if cursor is None or not is_cursor_rejection(exc):
                raise
            logger.info("session %s: cursor refused (%s); loading it in full", session_id, exc)
        return await self.load_session(
            session_id, cwd, additional_directories=additional_directories, mcp_servers=mcp_servers
        )

    async def fork_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str] | None = None,
        *,
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        mcp_servers: Sequence[McpServer] = (),
    ) -> ClientSession:
        """Fork a session into a new one (``session/fork``, unstable ACP).

        Raises:
            LocalProtocolError: the agent does not offer ``session/fork``, or an MCP server
                of a transport it did not advertise.
            RequestError: the agent refused.
        """
        return await self._reopen(
            ForkSessionRequest,
            self._calls.fork_session,
            session_id,
            cwd,
            additional_directories,
            mcp_servers,
        )

    async def _reopen(
        self,
        request_type: type[_ReopenRequest],
        send: Callable[[Any], Awaitable[_ReopenResponse]],
        session_id: str,
        cwd: str | os.PathLike[str] | None,
        additional_directories: Sequence[str | os.PathLike[str]],
        mcp_servers: Sequence[McpServer],
        cursor: str | None = None,
    ) -> ClientSession:
        """``session/load``, ``session/resume`` or ``session/fork``: one request shape.

        A loaded or resumed session is registered before the request goes out, so the
        updates the agent replays ahead of its answer fold into it (and is dropped again if
        the agent refuses); a fork's id is the agent's to choose, so it is registered once
        the answer names it (its earlier updates wait for it in the router).
        """
        root, extra = self._roots(cwd, additional_directories)
        servers = self._with_hosted(mcp_servers)
        request = request_type(session_id=session_id, cwd=root, mcp_servers=servers)
        if extra:
            request.additional_directories = list(extra)
        if cursor is not None:
            request.meta = {CURSOR_META_KEY: cursor}
        if request_type is ForkSessionRequest:
            response = await send(request)
            assert isinstance(response, ForkSessionResponse)
            session = self._open(response.session_id, root, extra)
        else:
            session = self._open(session_id, root, extra)
            try:
                response = await send(request)
            except InvalidParams as exc:
                self._router.forget(session_id)
                if (
                    cursor is not None
                    and is_cursor_rejection(exc)
                    and request_type is LoadSessionRequest
                ):
                    logger.info("session %s: cursor refused (%s); loading in full", session_id, exc)
                    return await self._reopen(
                        request_type, send, session_id, cwd, additional_directories, mcp_servers
                    )
                raise
            except BaseException:
                self._router.forget(session_id)
                raise
            session.view.observer = _joined(response.meta)
            session.view.joined_turn, session.view.turn_client = _running_turn(response.meta)
        session._apply_setup(response.modes, response.config_options)
        await session._await_announcements(response.meta)
        return session

    async def list_sessions(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        cursor: str | None = None,
        archived: SessionArchiveFilter | None = None,
    ) -> ListSessionsResponse:
        """One page of the agent's sessions (``session/list``), optionally only under ``cwd``;
        ``archived`` (``exclude``, the agent's default, ``include`` or ``only``) needs
        ``sessionCapabilities.archive``: keep the same value with each page's ``cursor``.

        Raises:
            LocalProtocolError: the agent does not offer ``session/list``, or ``archived`` was
                given to an agent that did not advertise ``sessionCapabilities.archive``.
        """
        request = ListSessionsRequest()
        if cwd is not None:
            request.cwd = absolute_path(cwd)
        if cursor is not None:
            request.cursor = cursor
        if archived is not None:
            if not self.supports("sessionCapabilities", "archive"):
                raise LocalProtocolError(
                    "the agent did not advertise sessionCapabilities.archive: session/list"
                    " with an archived filter was not sent"
                )
            request.archived = archived
        return await self._calls.list_sessions(request)

    async def iter_sessions(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        archived: SessionArchiveFilter | None = None,
    ) -> AsyncIterator[SessionInfo]:
        """Every session the agent lists, page after page (``archived``: see
        :meth:`list_sessions`).

        Raises:
            LocalProtocolError: the agent does not offer ``session/list``.
        """
        cursor: str | None = None
        while True:
            page = await self.list_sessions(cwd, cursor=cursor, archived=archived)
            for info in page.sessions:
                yield info
            if not page.next_cursor or page.next_cursor == cursor:
                return
            cursor = page.next_cursor

    async def close_session(self, session_id: str) -> None:
        """Close a session by id (see :meth:`ClientSession.close`).

        Raises:
            LocalProtocolError: the session is not open here and the agent does not offer
                ``session/close``.
        """
        session = self._router.sessions.get(session_id)
        if session is not None:
            await session.close()
        else:
            await self._calls.close_session(CloseSessionRequest(session_id=session_id))

    async def delete_session(self, session_id: str) -> None:
        """Delete a session from the agent's list (``session/delete``).

        Raises:
            LocalProtocolError: the agent does not offer ``session/delete``.
        """
        await self._calls.delete_session(DeleteSessionRequest(session_id=session_id))

    # ------------------------------------------------------------------ session standing

    async def set_session_title(self, session_id: str, title: str) -> str:
        """Retitle a session (unstable ``session/set_title``); return the title the agent
        stored (it may have trimmed it: show that one). The session need not be open here;
        when it is, its :attr:`ClientSession.view` shows the new title.

        Raises:
            LocalProtocolError: the agent did not advertise ``sessionCapabilities.title``
                (nothing is sent).
            RequestError: -32602 (a title the agent refuses), -32002 (no such session).
        """
        response = await self._calls.set_session_title(
            SetSessionTitleRequest(session_id=session_id, title=title)
        )
        session = self._router.sessions.get(session_id)
        if session is not None:
            session.view.title = response.title
        return response.title

    async def archive_session(self, session_id: str) -> None:
        """Archive a session (unstable ``session/archive``): the agent hides it from
        :meth:`list_sessions` (unless ``archived`` asks for it) and shuts it if it was open,
        so a session open here is dropped, its view marked ``archived``. accord's agent refuses
        to load or resume it until :meth:`unarchive_session`.

        Raises:
            LocalProtocolError: the agent did not advertise ``sessionCapabilities.archive``
                (nothing is sent).
            RequestError: -32002 (no such session).
        """
        await self._calls.archive_session(ArchiveSessionRequest(session_id=session_id))
        session = self._router.sessions.get(session_id)
        if session is not None:
            session.view.archived = True
            self._drop(session_id)

    async def unarchive_session(self, session_id: str) -> None:
        """Unarchive a session (unstable ``session/unarchive``): listed again; it is not
        loaded nor resumed (do that next to continue it).

        Raises:
            LocalProtocolError: the agent did not advertise ``sessionCapabilities.archive``
                (nothing is sent).
            RequestError: -32002 (no such session).
        """
        await self._calls.unarchive_session(UnarchiveSessionRequest(session_id=session_id))

    async def session_status(self, session_id: str) -> str:
        """Whether the agent has the session in memory (unstable ``session/status``):
        ``"open"`` or ``"saved"`` (a value this library does not know reads as ``"saved"``,
        as the schema asks). Nothing is loaded or attached.

        Raises:
            LocalProtocolError: the agent did not advertise ``sessionCapabilities.status``
                (nothing is sent).
            RequestError: -32002 (the agent does not know the session).
        """
        response = await self._calls.session_status(SessionStatusRequest(session_id=session_id))
        return "open" if response.status == "open" else "saved"

    # ------------------------------------------------------------------ extensions

    async def ext_request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send an extension request (name starting with ``_``) and return its result.

        Raises:
            LocalProtocolError: the name does not start with ``_``.
            RequestError: the agent answered with an error (-32601 if it does not know it).
        """
        return await self._calls.ext_request(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send an extension notification (name starting with ``_``)."""
        await self._calls.ext_notification(method, params)

    # ------------------------------------------------------------------ internals

    def _roots(
        self,
        cwd: str | os.PathLike[str] | None,
        additional: Sequence[str | os.PathLike[str]],
    ) -> tuple[str, tuple[str, ...]]:
        root = absolute_path(cwd if cwd is not None else self._default_cwd)
        extra = tuple(absolute_path(path) for path in additional)
        if extra and not self.supports("sessionCapabilities", "additionalDirectories"):
            raise LocalProtocolError(
                "the agent did not advertise sessionCapabilities.additionalDirectories"
            )
        return root, extra

    def _with_hosted(self, servers: Sequence[McpServer]) -> list[McpServer]:
        """``servers`` and the MCP servers this connection hosts (``connect(mcp_servers=)``).

        Raises:
            LocalProtocolError: a server of a transport the agent did not advertise.
        """
        capabilities = self._calls.agent_capabilities
        refused = unadvertised_mcp_servers(servers, capabilities)
        if refused:
            message, _ = mcp_refusal(refused, capabilities)
            raise LocalProtocolError(message)
        host = self._router.mcp
        return [*servers, *host.declarations] if host is not None else list(servers)

    def _open(self, session_id: str, cwd: str, extra: Sequence[str]) -> ClientSession:
        if session_id in self._router.sessions:
            raise LocalProtocolError(f"session {session_id!r} is already open on this connection")
        session = ClientSession(self._shared, session_id, cwd, extra)
        self._router.add(session)
        return session

    def _relink(self, calls: ClientSideConnection, transport: Transport) -> None:
        """A new link to the agent (a reconnect): later calls of every session go on it."""
        response = calls.initialize_response
        assert response is not None
        self._calls = calls
        self._shared.calls = calls
        self._transport = transport
        self._initialize_response = response

    def _drop(self, session_id: str, why: str = "it was archived") -> None:
        """Forget a session the agent would not resume after a reconnect (``why``)."""
        session = self._router.sessions.get(session_id)
        if session is not None:
            session._answer_pending_cancelled()
            session._lose_turn(why)
        self._router.forget(session_id)

    def _lost_link(self, why: str) -> None:
        """The link to the agent will not be restored (``why``): turns that lost it end."""
        for session in list(self._router.sessions.values()):
            session._lose_turn(why)

    async def _resume_in_place(self, session_id: str, *, with_cursor: bool) -> None:
        """``session/resume`` of a session this connection tracks, on a new link, from the
        cursor of the last update its view folded (``with_cursor``); its updates go on
        folding into the same :class:`ClientSession`.

        Raises:
            LocalProtocolError: the agent no longer offers ``session/resume``.
            RequestError: the agent refused (the cursor: :func:`is_cursor_rejection`).
        """
        session = self._router.sessions[session_id]
        request = ResumeSessionRequest(
            session_id=session_id, cwd=session.cwd, mcp_servers=self._with_hosted(())
        )
        if session.additional_directories:
            request.additional_directories = list(session.additional_directories)
        if with_cursor and session.cursor is not None:
            request.meta = {CURSOR_META_KEY: session.cursor}
        session._before_resume()
        response = await self._calls.resume_session(request)
        session._apply_setup(response.modes, response.config_options)
        session._resumed(response.meta)

    async def _shutdown(self, owns_terminals: bool) -> None:
        """Leave every session (answering pending permission requests ``cancelled``)."""
        sessions = list(self._router.sessions.values())
        for session in sessions:
            session._answer_pending_cancelled()
        terminals = self._shared.terminals
        if terminals is not None and not owns_terminals:
            with anyio.CancelScope(shield=True):
                for session in sessions:
                    await terminals.release_session(session.session_id)


def _joined(meta: dict[str, Any] | None) -> bool:
    """Whether an accord agent said other clients have the session open too."""
    accord: object = (meta or {}).get("accord")
    if not isinstance(accord, dict):
        return False
    clients = cast(dict[str, Any], accord).get("clients")
    return isinstance(clients, int) and clients > 1


def _running_turn(meta: dict[str, Any] | None) -> tuple[bool, str | None]:
    """Whether an accord agent said a turn runs as this client joined, and whose (the name
    of the client that prompted it, :func:`clean_name`)."""
    accord: object = (meta or {}).get("accord")
    if not isinstance(accord, dict):
        return False, None
    turn = cast(dict[str, Any], accord).get("turn")
    if not isinstance(turn, dict):
        return False, None
    client = cast(dict[str, Any], turn).get("client")
    return True, clean_name(client) if isinstance(client, str) else None


def absolute_path(path: str | os.PathLike[str]) -> str:
    """``path`` made absolute (ACP paths must be), without touching the file system."""
    return os.path.abspath(os.fspath(path))


def _key_headers(api_type: str, key: str) -> dict[str, str]:
    """The header that carries ``key`` for a provider speaking ``api_type``."""
    if api_type == "anthropic":
        return {"x-api-key": key}
    return {"Authorization": f"Bearer {key}"}

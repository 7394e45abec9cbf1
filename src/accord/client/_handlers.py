"""The client's side of incoming traffic: the typed ``Client`` that routes what the agent sends.

:class:`SessionRouter` keeps the connection's open sessions and routes each message from the agent:
``session/update`` to the session's view and running turn, ``session/request_permission`` to the
session (which asks the policy), an accord agent's ``_accord/turn`` (another client's turn
started or ended) to the session, ``fs/*`` and ``terminal/*`` to the host services with the
session's roots. Updates for a session id not known yet (``session/new`` and ``session/fork``
answer after the agent may already have sent updates for the new session) wait in a bounded
buffer and are folded in when the session appears.

Capabilities are derived from the handlers a ``Client`` class overrides
(:mod:`accord.roles`), so a host service is advertised exactly when it is wired: one small
class per combination, chosen by :func:`client_class`. Without a file-system host the agent's
``fs/read_text_file`` is answered -32601, and an accord agent refuses to even send it.

Above: :class:`~accord.client.ConnectedAgent`. Below: :class:`accord.roles.Client`, the
sessions, the host services.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import TURN_NOTICE_METHOD, ResourceNotFound
from ..roles import Client
from ..schema import (
    AuthStatusUpdateNotification,
    ClientCapabilities,
    CompleteElicitationNotification,
    CreateElicitationRequest,
    CreateElicitationResponse,
    CreateTerminalRequest,
    CreateTerminalResponse,
    ElicitationCapabilities,
    Implementation,
    KillTerminalRequest,
    KillTerminalResponse,
    MessageMcpRequest,
    MessageMcpResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    SessionUpdate,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

if TYPE_CHECKING:
    from ._elicitation import ElicitationService
    from ._fs import FileSystemHost
    from ._mcp_host import McpHost
    from ._session import ClientSession
    from ._terminals import TerminalHost

__all__ = ("MAX_EARLY_UPDATES", "MAX_EARLY_UPDATE_BYTES", "SessionRouter", "client_class")

logger = logging.getLogger("accord.client")

#: Updates held for sessions whose id the client does not know yet, over all such sessions.
#: An agent typically sends a handful (its command list, a title) before answering
#: ``session/new``; the bound keeps a confused agent from filling memory.
MAX_EARLY_UPDATES = 1024

#: Bytes (as JSON) of the updates held for sessions the client does not know yet, over all
#: such sessions: the count alone let 1,000 updates of 1 MB each hold 1 GB.
MAX_EARLY_UPDATE_BYTES = 8 * 1024 * 1024


UpdateListener = Callable[[SessionNotification], None]
"""Sees every ``session/update`` as received, before it is folded (e.g. ``accord run --json``)."""


class SessionRouter:
    """The open sessions of a connection, and where each incoming message goes."""

    def __init__(
        self,
        fs: FileSystemHost | None,
        terminals: TerminalHost | None,
        update_listener: UpdateListener | None = None,
    ) -> None:
        self.update_listener = update_listener
        self.sessions: dict[str, ClientSession] = {}
        self.fs = fs
        self.terminals = terminals
        #: Answers ``elicitation/create`` (set by ``connect`` when a policy is given).
        self.elicitation: ElicitationService | None = None
        #: Answers ``mcp/message`` (set by ``connect`` when it hosts MCP servers).
        self.mcp: McpHost | None = None
        self._early: dict[str, list[tuple[SessionUpdate, int]]] = {}
        self._early_count = 0
        self._early_bytes = 0
        #: Updates dropped per unknown session id because the early buffer was full.
        self._early_dropped: dict[str, int] = {}
        self._dropped_total = 0
        #: The agent's last ``auth/status_update`` (``None`` before one), and how many came.
        self.auth_update: AuthStatusUpdateNotification | None = None
        self.auth_updates = 0
        self.auth_changed = anyio.Event()

    @property
    def early_updates(self) -> int:
        """Updates waiting for their session to be known."""
        return self._early_count

    @property
    def early_update_bytes(self) -> int:
        """The size (as JSON) of the updates waiting for their session to be known."""
        return self._early_bytes

    @property
    def dropped_early_updates(self) -> int:
        """Updates for unknown sessions dropped so far, because their buffer was full."""
        return self._dropped_total

    def session(self, session_id: str) -> ClientSession:
        """The open session with that id.

        Raises:
            ResourceNotFound: no such session is open on this connection.
        """
        session = self.sessions.get(session_id)
        if session is None:
            raise ResourceNotFound(
                f"no session {session_id!r} is open on this client", {"sessionId": session_id}
            )
        return session

    def add(self, session: ClientSession) -> None:
        """Register a session and fold in the updates that arrived before it was known."""
        self.sessions[session.session_id] = session
        early = self._early.pop(session.session_id, None)
        if early:
            self._early_count -= len(early)
            self._early_bytes -= sum(size for _, size in early)
            for update, _ in early:
                session.view.apply(update)
                if update.meta:
                    session._note_announcement(update)
        dropped = self._early_dropped.pop(session.session_id, 0)
        if dropped:
            logger.warning(
                "session %r: %d update(s) the agent sent before the session was known were "
                "dropped (the buffer for unknown sessions was full); its view may lack them",
                session.session_id,
                dropped,
            )

    def forget(self, session_id: str) -> None:
        """Stop routing to a session (it was closed)."""
        self.sessions.pop(session_id, None)

    async def on_update(self, notification: SessionNotification) -> None:
        """Route one ``session/update``."""
        if self.update_listener is not None:
            self.update_listener(notification)
        session = self.sessions.get(notification.session_id)
        if session is not None:
            if notification.meta:
                session._note_cursor(notification.meta)
            await session._on_update(notification.update)
            return
        update = notification.update
        size = len(update.model_dump_json(by_alias=True, exclude_unset=True))
        if (
            self._early_count >= MAX_EARLY_UPDATES
            or self._early_bytes + size > MAX_EARLY_UPDATE_BYTES
        ):
            self._drop_early(notification.session_id, size)
            return
        self._early.setdefault(notification.session_id, []).append((update, size))
        self._early_count += 1
        self._early_bytes += size

    def _drop_early(self, session_id: str, size: int) -> None:
        self._dropped_total += 1
        dropped = self._early_dropped.get(session_id, 0)
        if not dropped and len(self._early_dropped) < MAX_EARLY_UPDATES:
            # Once per session id (and a bounded number of ids), not once per update.
            logger.warning(
                "session/update for unknown session %r dropped (%d bytes): %d updates of %d "
                "bytes already wait for sessions this client does not know (limits: %d "
                "updates, %d bytes); later drops for this session are counted, not logged",
                session_id,
                size,
                self._early_count,
                self._early_bytes,
                MAX_EARLY_UPDATES,
                MAX_EARLY_UPDATE_BYTES,
            )
        if dropped or len(self._early_dropped) < MAX_EARLY_UPDATES:
            self._early_dropped[session_id] = dropped + 1

    def roots(self, session_id: str) -> tuple[str, ...]:
        """The directories a session's file and terminal requests are confined to."""
        return self.session(session_id).roots


class _HostClient(Client):
    """Routes updates and permission requests; hosts nothing."""

    def __init__(self, router: SessionRouter, client_info: Implementation | None) -> None:
        self._router = router
        self.client_info = client_info

    async def session_update(self, notification: SessionNotification) -> None:
        """Fold the update into its session (and its running turn's stream)."""
        await self._router.on_update(notification)

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        """Ask the session's policy."""
        return await self._router.session(request.session_id)._on_permission(request)

    async def auth_status_update(self, notification: AuthStatusUpdateNotification) -> None:
        """Keep the agent's authentication state (``ConnectedAgent.auth_update``)."""
        router = self._router
        router.auth_update = notification
        router.auth_updates += 1
        changed, router.auth_changed = router.auth_changed, anyio.Event()
        changed.set()

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """``_accord/turn`` goes to its session (another client's turn started or ended);
        other extension notifications are ignored (logged at debug level)."""
        if method == TURN_NOTICE_METHOD:
            session_id = params.get("sessionId")
            session = self._router.sessions.get(session_id) if isinstance(session_id, str) else None
            if session is not None:
                session._note_turn(params)
            return
        logger.debug("extension notification %r ignored", method)


class _ReadingClient(_HostClient):
    """Also serves ``fs/read_text_file`` from the file-system host (a read-only client:
    ``fs/write_text_file`` is neither advertised nor served, -32601)."""

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        """Read a file inside the session's roots."""
        router = self._router
        assert router.fs is not None
        return await router.fs.read_text_file(request, router.roots(request.session_id))


class _FsClient(_ReadingClient):
    """Also serves ``fs/*`` from the file-system host, inside the session's roots."""

    async def write_text_file(self, request: WriteTextFileRequest) -> WriteTextFileResponse:
        """Write a file inside the session's roots."""
        router = self._router
        assert router.fs is not None
        return await router.fs.write_text_file(request, router.roots(request.session_id))


class _TerminalClient(_HostClient):
    """Also serves ``terminal/*`` from the terminal host."""

    def _host(self, session_id: str) -> TerminalHost:
        self._router.session(session_id)  # refuse sessions this client does not know
        assert self._router.terminals is not None
        return self._router.terminals

    async def create_terminal(self, request: CreateTerminalRequest) -> CreateTerminalResponse:
        """Start a command, its working directory inside the session's roots."""
        host = self._host(request.session_id)
        return await host.create_terminal(request, self._router.roots(request.session_id))

    async def terminal_output(self, request: TerminalOutputRequest) -> TerminalOutputResponse:
        """The command's output so far."""
        return await self._host(request.session_id).terminal_output(request)

    async def wait_for_terminal_exit(
        self, request: WaitForTerminalExitRequest
    ) -> WaitForTerminalExitResponse:
        """Wait for the command to exit."""
        return await self._host(request.session_id).wait_for_terminal_exit(request)

    async def kill_terminal(self, request: KillTerminalRequest) -> KillTerminalResponse:
        """Kill the command; the terminal stays readable."""
        return await self._host(request.session_id).kill_terminal(request)

    async def release_terminal(self, request: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        """Kill the command if it runs and forget the terminal."""
        return await self._host(request.session_id).release_terminal(request)


class _FsTerminalClient(_FsClient, _TerminalClient):
    """Serves both ``fs/*`` and ``terminal/*``."""


class _ElicitationClient(_HostClient):
    """Also answers ``elicitation/*`` through the router's elicitation service (a mixin)."""

    def client_capabilities(self) -> ClientCapabilities:
        """The derived capabilities, advertising only the service's elicitation modes."""
        capabilities = super().client_capabilities()
        assert self._router.elicitation is not None
        advertised = ElicitationCapabilities.model_validate(self._router.elicitation.capability())
        return capabilities.model_copy(update={"elicitation": advertised})

    async def create_elicitation(
        self, request: CreateElicitationRequest
    ) -> CreateElicitationResponse:
        """Ask the elicitation policy (see :mod:`accord.client._elicitation`)."""
        assert self._router.elicitation is not None
        return await self._router.elicitation.create(request)

    async def complete_elicitation(self, notification: CompleteElicitationNotification) -> None:
        """A URL question is done: tell the policy."""
        assert self._router.elicitation is not None
        await self._router.elicitation.complete(notification)


def client_class(
    *,
    fs: bool,
    terminals: bool,
    elicitation: bool = False,
    mcp: bool = False,
    writes: bool = True,
) -> type[_HostClient]:
    """The ``Client`` class that advertises (and serves) exactly the requested services.

    ``writes=False`` is a read-only client: files are read (with ``fs``), never written, and
    no terminal is hosted (``terminals`` must be false).
    """
    if not writes and terminals:
        raise ValueError("a read-only client hosts no terminals")
    if not writes:
        base: type[_HostClient] = _ReadingClient if fs else _HostClient
    elif fs and terminals:
        base = _FsTerminalClient
    elif fs:
        base = _FsClient
    elif terminals:
        base = _TerminalClient
    else:
        base = _HostClient
    base = _with_elicitation(base) if elicitation else base
    return _with_mcp(base) if mcp else base


@functools.cache
def _with_elicitation(base: type[_HostClient]) -> type[_HostClient]:
    """``base`` that also answers elicitation (one class per base, built once)."""
    return type(f"{base.__name__.lstrip('_')}WithElicitation", (_ElicitationClient, base), {})


class _McpClient(_HostClient):
    """Also answers ``mcp/message`` with the MCP servers this connection hosts."""

    async def mcp_message(self, request: MessageMcpRequest) -> MessageMcpResponse:
        """Serve one inner MCP request (see :mod:`accord.client._mcp_host`)."""
        host = self._router.mcp
        assert host is not None
        return await host.handle(request)


@functools.cache
def _with_mcp(base: type[_HostClient]) -> type[_HostClient]:
    """``base`` that also hosts MCP servers (one class per base, built once)."""
    return type(f"{base.__name__.lstrip('_')}WithMcp", (_McpClient, base), {})

"""``connect()``: reach an agent (spawned, over a transport, or in process) and initialize it.

``async with connect(agent) as conn:`` accepts a command line (the agent is spawned, its stderr
drained, and shut down on exit), a :class:`~accord.transports.Transport`, or an in-process
:class:`accord.roles.Agent` (served through the in-memory transport pair: the canonical test
idiom). It negotiates the protocol version and capabilities with ``initialize`` (bounded by a
timeout; slow agents are fine) and yields an :class:`~accord.client.ConnectedAgent`. It owns
the transport, the typed connection, the host services and one task group (streamed turns,
the in-process agent), and closes them in order on exit: the connection, the terminals, the
tasks, the agent process. An exception raised in the block leaves it as itself, not wrapped
in the task groups' ``ExceptionGroup``.

Above: programs. Below: :mod:`accord.roles`, :mod:`accord.transports`, the connection,
session router and host services of this package.
"""

from __future__ import annotations

import itertools
import os
import ssl
from collections.abc import AsyncGenerator, Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import NoReturn, TypeAlias, cast

import anyio

from ..documents import POSITION_ENCODINGS, PositionEncoding
from ..errors import LocalProtocolError
from ..remote import is_remote_url
from ..roles import (
    LATEST_PROTOCOL_VERSION,
    Agent,
    Client,
    ClientSideConnection,
    is_advertised,
    serve_agent,
)
from ..schema import AuthCapabilities, Implementation, InitializeRequest
from ..transports import SubprocessTransport, Transport, memory_transport_pair, spawn_agent
from ._connection import ConnectedAgent, absolute_path
from ._elicitation import (
    ElicitationModeName,
    ElicitationPolicy,
    ElicitationService,
    checked_modes,
)
from ._fs import FileSystemHost
from ._handlers import SessionRouter, UpdateListener, client_class
from ._mcp_host import McpHost
from ._permissions import DenyAll, PermissionPolicy
from ._reconnect import Reconnector
from ._session import _SessionShared
from ._terminals import TerminalHost
from ._turn import TURN_EVENT_BUFFER

__all__ = ("INITIALIZE_TIMEOUT", "AgentSpec", "accord_client_info", "connect")

#: How long ``initialize`` may take. Agents launched through package runners (``npx``,
#: ``uvx``) may download and compile first, so this is generous; pass None to wait forever.
INITIALIZE_TIMEOUT = 120.0

AgentSpec: TypeAlias = Sequence[str] | Transport | Agent
"""What :func:`connect` accepts: a command line, a transport, or an in-process agent."""


def accord_client_info(title: str = "accord") -> Implementation:
    """accord's ``clientInfo``: name ``accord``, its version, and ``title`` (what other
    clients of a shared session are told runs a turn, e.g. ``accord chat``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        accord_version = version("accord")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        accord_version = "0"
    return Implementation(name="accord", title=title, version=accord_version)


@asynccontextmanager
async def connect(
    agent: AgentSpec,
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    fs: bool | FileSystemHost = False,
    terminals: bool | TerminalHost = False,
    read_only: bool = False,
    permission_policy: PermissionPolicy | None = None,
    elicitation_policy: ElicitationPolicy | None = None,
    elicitation_modes: Collection[ElicitationModeName] = ("form", "url"),
    terminal_auth: bool = False,
    client_info: Implementation | None = None,
    initialize_timeout: float | None = INITIALIZE_TIMEOUT,
    event_buffer: int = TURN_EVENT_BUFFER,
    update_listener: UpdateListener | None = None,
    token: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    reconnect: bool = True,
    on_status: Callable[[str], None] | None = None,
    mcp_servers: Sequence[object] = (),
    compaction: bool = True,
    position_encodings: Sequence[PositionEncoding] = (),
) -> AsyncGenerator[ConnectedAgent]:
    """Connect to an agent, initialize it, and yield the connection; close everything on exit.

    Args:
        agent: a command line (``["my-agent", "--acp"]``: spawned, no shell), the URL of a
            served agent (``"ws://host:8765/acp"``, ``wss://``, ``http://``, ``https://``;
            needs the ``remote`` extra), a transport, or an :class:`accord.roles.Agent`
            object (served in this process).
        cwd: the spawned agent's working directory, and the default ``cwd`` of sessions.
        env: variables set for a spawned agent, over this process's environment.
        fs: host ``fs/read_text_file`` and ``fs/write_text_file`` (advertised only then),
            confined to each session's directories; ``True`` for a default
            :class:`~accord.client.FileSystemHost`, or pass one.
        terminals: host ``terminal/*`` (advertised only then); ``True`` for a
            :class:`~accord.client.TerminalHost` owned by this connection, or pass one that
            you have entered (``async with``) yourself. Commands are killed on release, when
            their session closes, and when the connection closes.
        read_only: nothing the agent asks of this client changes anything: with ``fs``, files
            are read but ``fs/write_text_file`` is neither advertised nor served (-32601, "not
            offered by this client"), and no terminal is hosted (``terminals`` must be false).
            An agent that never asks permission still cannot write or run a command through
            this client (``accord run --deny-all`` uses it).
        permission_policy: answers ``session/request_permission``; default
            :class:`~accord.client.DenyAll`.
        elicitation_policy: answers ``elicitation/create``; elicitation is advertised only
            when one is given (see :mod:`accord.client._elicitation`).
        elicitation_modes: the elicitation modes advertised with a policy (``form``,
            ``url``; both by default).
        terminal_auth: advertise ``auth.terminal``: this program can run the agent's
            terminal auth methods (:func:`~accord.client.run_terminal_auth`); only for an
            agent given as a command line.
        client_info: sent as ``clientInfo``; default: accord and its version.
        initialize_timeout: seconds ``initialize`` may take (None: no limit).
        event_buffer: events a turn stream holds before the agent waits.
        update_listener: called with every ``session/update`` as received, before it is
            folded into its session (for logging or raw output); it must not block.
        token: the bearer token of a served agent (default: ``ACCORD_TOKEN``).
        ssl_context: verifies a ``wss://`` / ``https://`` server (default: the system's).
        reconnect: a served agent's dropped connection is reopened and its sessions resumed
            (from their last ``_meta["acp/cursor"]``); requests in flight fail with -32603.
        on_status: told, one line each, when that connection drops and is back.
        mcp_servers: MCP servers of the ``mcp`` package (``MCPServer`` or low-level
            ``Server`` objects) to host in this process and offer to the agent over ACP
            (``acp`` MCP servers, ``mcp/message``): every session this connection opens names
            them (see :mod:`accord.client._mcp_host`). The agent must advertise
            ``mcpCapabilities.acp``.
        compaction: advertise the unstable ``session.compaction`` capability (the
            default): the agent reports a compaction of its context as
            ``compaction_update`` / ``compaction_summary_chunk`` updates, folded into the
            view (:attr:`~accord.client.SessionView.compactions`, the timeline) and streamed
            as :class:`~accord.client.CompactionUpdated` /
            :class:`~accord.client.CompactionSummaryDelta`. ``False``: the agent shows it as
            it would to any client (an accord agent: an agent message, "earlier turns
            summarised").
        position_encodings: the position encodings offered for next edit suggestions
            (``positionEncodings``, in order of preference; ``utf-16``, assumed by every
            side, when empty); the agent picks one and :class:`~accord.client.NesSession`
            speaks it.

    Raises:
        TimeoutError: ``initialize`` took longer than ``initialize_timeout``.
        RemoteProtocolError: the agent speaks an ACP version accord does not.
        AgentProcessExited: the spawned agent exited (with its exit code and stderr tail).
        FileNotFoundError: the agent's program does not exist.
        ConnectionRefused: a served agent refused the connection (401: the token).
        OSError: a served agent cannot be reached.
        ValueError: ``elicitation_modes`` is empty or names an unknown mode,
            ``read_only`` is given with ``terminals``, or ``position_encodings`` names an
            unknown encoding.
        TypeError: an entry of ``mcp_servers`` is not an MCP server of the ``mcp`` package.
        LocalProtocolError: ``mcp_servers`` were given and the agent does not advertise
            ``mcpCapabilities.acp``.
    """
    remote = isinstance(agent, str) and is_remote_url(agent)
    if isinstance(agent, str) and not remote:
        raise TypeError(
            "pass the agent's command line as a list of arguments, not a string "
            "(a string is a ws://, wss://, http:// or https:// URL)"
        )
    if (env is not None or terminal_auth) and remote:
        raise TypeError("env and terminal_auth apply only to an agent given as a command line")
    if env is not None and isinstance(agent, Agent | Transport):
        raise TypeError("env applies only to an agent given as a command line")
    if terminal_auth and isinstance(agent, Agent | Transport):
        raise TypeError(
            "terminal_auth needs the agent as a command line (its auth methods extend it)"
        )
    if elicitation_policy is not None:
        checked_modes(elicitation_modes)
    if read_only and terminals:
        raise ValueError("a read-only client hosts no terminals: pass terminals=False")
    unknown = [e for e in position_encodings if e not in POSITION_ENCODINGS]
    if unknown:
        raise ValueError(
            f"unknown position encoding {unknown[0]!r}: one of {', '.join(POSITION_ENCODINGS)}"
        )
    fs_host = FileSystemHost() if fs is True else (fs or None)
    owns_terminals = terminals is True
    terminal_host = TerminalHost() if terminals is True else (terminals or None)
    default_cwd = absolute_path(cwd if cwd is not None else os.getcwd())
    mcp_host = McpHost(mcp_servers) if mcp_servers else None
    try:
        async with AsyncExitStack() as stack:
            in_process: tuple[Agent, Transport] | None = None
            transport: Transport | None
            if isinstance(agent, Agent):
                transport, agent_side = memory_transport_pair()
                in_process = (agent, agent_side)
            elif isinstance(agent, Transport):
                transport = agent
            elif isinstance(agent, str) and not reconnect:
                from ..remote import open_remote

                transport = await stack.enter_async_context(
                    open_remote(agent, token=token, ssl_context=ssl_context)
                )
            elif isinstance(agent, str):
                transport = None  # the reconnector opens each link (below)
            else:
                transport = await stack.enter_async_context(
                    spawn_agent(list(agent), cwd=cwd, env=env)
                )
            task_group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(task_group.cancel_scope.cancel)
            if owns_terminals and terminal_host is not None:
                await stack.enter_async_context(terminal_host)
            router = SessionRouter(fs_host, terminal_host, update_listener)
            if mcp_host is not None:
                router.mcp = await stack.enter_async_context(mcp_host)
            if elicitation_policy is not None:
                router.elicitation = ElicitationService(
                    elicitation_policy, elicitation_modes, router
                )
            client = client_class(
                fs=fs_host is not None,
                terminals=terminal_host is not None,
                elicitation=router.elicitation is not None,
                mcp=mcp_host is not None,
                writes=not read_only,
            )(router, client_info or accord_client_info())
            client.session_compaction = compaction
            client.position_encodings = tuple(position_encodings)

            async def setup(calls: ClientSideConnection, transport: Transport) -> None:
                if mcp_host is not None:
                    mcp_host.attach(calls.mcp_notification)
                await _initialize(calls, client, transport, initialize_timeout, terminal_auth)
                if mcp_host is not None and not is_advertised(
                    calls.agent_capabilities, ("mcpCapabilities", "acp")
                ):
                    raise LocalProtocolError(
                        "the agent does not take MCP servers over ACP (it did not advertise "
                        "mcpCapabilities.acp), so the mcp_servers given to connect() cannot be "
                        "offered to it"
                    )

            reconnector: Reconnector | None = None
            if transport is None:
                assert isinstance(agent, str)
                reconnector = Reconnector(
                    _remote_opener(agent, token, ssl_context),
                    lambda link: ClientSideConnection(client, link),
                    setup,
                    on_status,
                )
                calls = await task_group.start(reconnector.run)
                stack.push_async_callback(reconnector.aclose)
                assert reconnector.transport is not None
                transport = reconnector.transport
            else:
                calls = await stack.enter_async_context(ClientSideConnection(client, transport))
                if in_process is not None:
                    task_group.start_soon(serve_agent, *in_process, name="in-process agent")
                await setup(calls, transport)
            shared = _SessionShared(
                calls=calls,
                task_group=task_group,
                policy=permission_policy or DenyAll(),
                terminals=terminal_host,
                forget=router.forget,
                permission_ids=itertools.count(1),
                event_buffer=event_buffer,
                relinks=reconnector,
            )
            connection = ConnectedAgent(calls, router, shared, transport, default_cwd, reconnector)
            if reconnector is not None:
                reconnector.serve(connection)
            try:
                yield connection
            finally:
                await connection._shutdown(owns_terminals)
    except BaseExceptionGroup as group:
        single = _single_exception(group)
        if single is None:
            raise
        _reraise_alone(single)


def _remote_opener(
    url: str, token: str | None, ssl_context: ssl.SSLContext | None
) -> Callable[[], AbstractAsyncContextManager[Transport]]:
    """Opens a new plain transport to the served agent at ``url`` each time it is called
    (the token read again each time when ``None``: ``ACCORD_TOKEN``)."""
    from ..remote import open_remote

    return lambda: open_remote(url, token=token, ssl_context=ssl_context)


async def _initialize(
    calls: ClientSideConnection,
    client: Client,
    transport: Transport,
    within: float | None,
    terminal_auth: bool = False,
) -> None:
    capabilities = client.client_capabilities()
    if terminal_auth:
        capabilities = capabilities.model_copy(update={"auth": AuthCapabilities(terminal=True)})
    request = InitializeRequest(
        protocol_version=LATEST_PROTOCOL_VERSION,
        client_capabilities=capabilities,
        client_info=client.client_info,
    )
    try:
        with anyio.fail_after(within):
            await calls.initialize(request)
    except TimeoutError:
        message = f"the agent did not answer initialize within {within} seconds"
        if isinstance(transport, SubprocessTransport) and transport.stderr_tail():
            message += f"; last stderr output:\n{transport.stderr_tail()}"
        raise TimeoutError(message) from None


def _reraise_alone(exc: BaseException) -> NoReturn:
    """Raise ``exc`` (out of the task groups' wrapping) with its own cause and context."""
    cause, context, suppress = exc.__cause__, exc.__context__, exc.__suppress_context__
    try:
        raise exc
    finally:
        exc.__cause__, exc.__context__ = cause, context
        exc.__suppress_context__ = suppress


def _single_exception(exc: BaseException) -> BaseException | None:
    """The one exception inside nested single-member groups, else None."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    members: tuple[BaseException, ...] = cast("BaseExceptionGroup[BaseException]", exc).exceptions
    return _single_exception(members[0]) if len(members) == 1 else None

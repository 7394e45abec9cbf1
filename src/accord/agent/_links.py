"""Client links: one per connection served by a runtime, and what each client may be asked.

One :class:`~accord.agent.AgentRuntime` serves several connections at once
(:meth:`~accord.agent.AgentRuntime.serve` per connection); the sessions, the engine and the
store are shared, and each connection has a :class:`ClientLink`: its
:class:`~accord.roles.AgentSideConnection`, the capabilities its client advertised, its
choice of extended events, the :class:`~._attachment.ClientChannel` that renders events for it,
and its attachments (session id -> :class:`~._attachment.Attachment`). The link of the
connection a handler serves is found through a context variable set when the connection is
created (every task of that connection inherits it): :func:`current_link`.

:class:`OpenQuestion` is one question of a turn (a permission request, an elicitation) put to
every attached client that can answer it: the first valid answer wins and the other clients'
requests are cancelled (``$/cancel_request``); a client that attaches while the question is
open is asked too, once it has received everything published before the question. The
question ends without an answer when the turn is cancelled, or when every client asked has
failed to answer while at least one of them is still attached (a question whose clients all
left stays open for a client that comes back; the grace period bounds the wait).

Below: :mod:`accord.roles`, :mod:`._attachment`. Above: the runtime, the session table, the turn.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, TypeVar

import anyio
from anyio.abc import TaskGroup

from ..errors import RequestCancelled, RequestError, TransportError
from ..schema import ClientCapabilities
from ._attachment import Attachment, ClientChannel
from ._mcp_caller import AcpMcpCaller

if TYPE_CHECKING:
    from ..roles import AgentSideConnection

__all__ = ("AskingSession", "ClientLink", "Host", "OpenQuestion", "current_link", "link_context")

logger = logging.getLogger("accord.agent")

_GONE = (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError)

link_context: ContextVar[ClientLink | None] = ContextVar("accord_client_link", default=None)
"""The link of the connection the current task serves (set when the connection is created)."""


Host: TypeAlias = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
"""Starts a live session's task group (``LiveSession.run``) in a task group that outlives a
request (:attr:`ClientLink.host`)."""


def current_link() -> ClientLink | None:
    """The link of the connection the current task serves, if any."""
    return link_context.get()


def _boolean_options(capabilities: ClientCapabilities) -> bool:
    session = capabilities.session
    return (
        session is not None
        and session.config_options is not None
        and session.config_options.boolean is not None
    )


def _compaction(capabilities: ClientCapabilities) -> bool:
    session = capabilities.session
    return session is not None and session.compaction is not None


class ClientLink:
    """One connection served by the runtime (see the module docstring).

    Args:
        connection: The connection to the client.
        number: A number in order of connection (for logs and ordering).
    """

    __slots__ = (
        "__weakref__",
        "_bound",
        "attachments",
        "capabilities",
        "channel",
        "connection",
        "extended",
        "host",
        "left",
        "mcp",
        "name",
        "number",
    )

    def __init__(self, connection: AgentSideConnection, number: int) -> None:
        """Create the link of ``connection``; see the class docstring for the arguments."""
        self.connection = connection
        self.number = number
        self.capabilities = ClientCapabilities()
        self.extended = False
        #: The client's name as it gave it in ``initialize`` (``clientInfo`` title, else name).
        self.name: str | None = None
        self.channel = ClientChannel(
            connection.connection.notify, extended=False, boolean_options=False
        )
        #: Session id -> this client's attachment to the session's pipeline.
        self.attachments: dict[str, Attachment] = {}
        #: Set once the client has gone and its attachments were dropped.
        self.left = False
        #: Inner MCP requests to the ``acp`` MCP servers this client hosts.
        self.mcp = AcpMcpCaller(connection)
        #: Starts the task group of a session this client makes live (``LiveSession.run``):
        #: the runtime's task group when :meth:`~accord.agent.AgentRuntime.serve` serves the
        #: connection (the session outlives the connection), else the connection's.
        self.host: Host = self._connection_host
        self._bound: set[anyio.CancelScope] = set()

    def _connection_host(self, func: Callable[[], Coroutine[Any, Any, None]]) -> None:
        # A connection not served by AgentRuntime.serve (built directly): no scope outlives it.
        self.connection.connection._start_soon(func, name="accord live session")

    async def bound(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Run ``func(*args)`` until it returns or this client leaves (:meth:`leave`)."""
        with anyio.CancelScope() as scope:
            if self.left:
                return
            self._bound.add(scope)
            try:
                await func(*args)
            finally:
                self._bound.discard(scope)

    def leave(self) -> None:
        """The client has gone: cancel the tasks bound to it (:meth:`bound`)."""
        self.left = True
        for scope in list(self._bound):
            scope.cancel()

    def configure(
        self, capabilities: ClientCapabilities, *, extended: bool, name: str | None = None
    ) -> None:
        """Record what the client advertised in ``initialize`` (before any session)."""
        self.capabilities = capabilities
        self.extended = extended
        self.name = name
        self.channel = ClientChannel(
            self.connection.connection.notify,
            extended=extended,
            boolean_options=_boolean_options(capabilities),
            compaction=_compaction(capabilities),
        )

    @property
    def boolean_options(self) -> bool:
        """Whether the client advertised ``session.configOptions.boolean``."""
        return _boolean_options(self.capabilities)

    @property
    def gone(self) -> bool:
        """Whether the client has gone (its side of the connection closed)."""
        return self.left or self.connection.closed or self.channel.gone

    def __repr__(self) -> str:
        return f"<ClientLink #{self.number}>"


R = TypeVar("R")


class AskingSession(Protocol):
    """What a question sees of the live session whose turn asks it
    (``accord.agent._live_session.LiveSession``)."""

    @property
    def session_id(self) -> str:
        """The session."""
        ...

    @property
    def links(self) -> Mapping[ClientLink, Attachment]:
        """The attached clients and their attachments."""
        ...

    @property
    def questions(self) -> set[OpenQuestion[Any]]:
        """The questions its turn has open (a question adds and removes itself)."""
        ...


class OpenQuestion(Generic[R]):
    """One question put to every attached client that can answer it (module docstring).

    Args:
        session: The session whose turn asks.
        after_seq: The ``seq`` every client must have received before it is asked.
        eligible: Whether a client can be asked (e.g. it advertised elicitation forms).
        send: Asks one client; returns its answer (raises on failure).
        valid: Whether an answer settles the question.
        kind: What is asked, for logs.
        reraise: With no valid answer, raise the last error a client answered with (instead
            of returning ``None``).
    """

    def __init__(
        self,
        session: AskingSession,
        *,
        after_seq: int,
        eligible: Callable[[ClientLink], bool],
        send: Callable[[ClientLink], Awaitable[R]],
        valid: Callable[[R], bool],
        kind: str,
        reraise: bool = False,
    ) -> None:
        """Prepare the question; :meth:`ask` puts it."""
        self._reraise = reraise
        self._error: RequestError | None = None
        self._session = session
        self._after_seq = after_seq
        self._eligible = eligible
        self._send = send
        self._valid = valid
        self._kind = kind
        self._group: TaskGroup | None = None
        self._asked: set[ClientLink] = set()
        self._running = 0
        self._answer: R | None = None
        self._answered = False
        self._changed = anyio.Event()

    async def ask(self) -> R | None:
        """Ask every eligible attached client (and any that attaches meanwhile); return the
        first valid answer, or ``None`` when there will be none."""
        session = self._session
        async with anyio.create_task_group() as group:
            self._group = group
            session.questions.add(self)
            try:
                for link in list(session.links):
                    self.offer(link)
                while not self._answered:
                    if self._running == 0 and self._nobody_left_to_ask():
                        break
                    self._changed = anyio.Event()
                    await self._changed.wait()
            finally:
                session.questions.discard(self)
                self._group = None
                group.cancel_scope.cancel()
        if self._answered:
            return self._answer
        if self._reraise and self._error is not None:
            raise self._error
        return None

    def _nobody_left_to_ask(self) -> bool:
        # Every client asked failed; wait for a client to come back only if none is attached.
        attached = [link for link in self._session.links if not link.gone]
        return bool(attached) or not self._asked

    def offer(self, link: ClientLink) -> None:
        """Ask ``link`` too, if it can answer and was not asked yet (a client attaching)."""
        group = self._group
        if group is None or self._answered or link in self._asked or not self._eligible(link):
            return
        self._asked.add(link)
        self._running += 1
        group.start_soon(self._ask_one, link, name=f"accord {self._kind} to {link!r}")

    async def _ask_one(self, link: ClientLink) -> None:
        try:
            attachment = self._session.links.get(link)
            if attachment is not None:
                await attachment.wait_sent(self._after_seq)
            if link.gone or self._answered:
                return
            answer = await self._send(link)
            if self._answered:
                return
            if self._valid(answer):
                self._answer = answer
                self._answered = True
        except RequestCancelled:
            pass
        except RequestError as exc:
            self._error = exc
            logger.warning(
                "session %s: %r failed a %s: %s", self._session.session_id, link, self._kind, exc
            )
        except _GONE:
            pass
        finally:
            self._running -= 1
            self._changed.set()

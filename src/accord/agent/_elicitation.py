"""Elicitation: an engine asks the user a structured question through the client.

ACP's ``elicitation/create`` (agent to client) shows the user a form (``mode: "form"``, fields
described by an :class:`~accord.schema.ElicitationSchema`) or sends them to a URL
(``mode: "url"``, e.g. a sign-in page; the agent may later send ``elicitation/complete``). The
client answers ``accept`` (with the form's content), ``decline`` or ``cancel``.

An engine asks through its :class:`~accord.engines.TurnContext` (``elicit_form``,
``elicit_url``, ``complete_elicitation``); the runtime builds a :class:`ClientElicitation`
for each turn, scoped to the session (and, when given, a tool call):

* only the modes the client advertised (``clientCapabilities.elicitation.form`` / ``.url``)
  may be used: :attr:`Elicitation.modes` says which, and asking in another one raises
  :class:`~accord.errors.LocalProtocolError` at once, before anything is sent;
* everything the turn published before the question reaches the client first (the tool call
  a question is about is known when it is asked);
* a cancelled turn cancels an open question (``$/cancel_request``) and the engine gets
  ``cancel``; so does a client that disconnects or answers ``-32800``;
* an accepted form's content is checked against the schema that was sent
  (:func:`accord.roles.content_problems`); content that does not match raises
  :class:`~accord.errors.RemoteProtocolError`, so a tool never acts on a malformed answer.
  Actions of a later ACP version are read as ``cancel``.

Form mode must not be used for secrets (passwords, API keys, tokens): use a URL.

Outside a turn, while the runtime handles a client's request (opening a session: ``new``,
``load``, ``resume``, ``fork``), an engine asks through ``SessionContext.elicitation``: a
*request-scoped* :class:`ClientElicitation` (``requestId`` = that request's id, no session:
the client may not know the session yet), valid until the request is answered
(:meth:`ClientElicitation.close`; asking later raises
:class:`~accord.errors.LocalProtocolError`). Cancelling the request cancels its questions.

Below: :mod:`accord.roles` (the connection, the content check), :mod:`accord.schema`. Above:
the turn (:mod:`._turn`). The engine's side (:class:`~accord.engines.Elicitation`, the
answer types) is part of the engine contract, :mod:`accord.engines`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import anyio

from ..engines import ElicitationAction, ElicitationAnswer, ElicitationMode
from ..errors import LocalProtocolError, RemoteProtocolError, RequestCancelled, TransportError
from ..roles import content_problems
from ..schema import (
    CompleteElicitationNotification,
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationContentValue,
    ElicitationSchema,
)

if TYPE_CHECKING:
    from ..jsonrpc import RequestId
    from ..roles import AgentSideConnection

__all__ = ("ClientElicitation", "advertised_modes")

logger = logging.getLogger("accord.agent")

_EMPTY: Final[Mapping[str, ElicitationContentValue]] = MappingProxyType({})
_NO_MODES: Final[frozenset[ElicitationMode]] = frozenset()


class _TurnScopes(Protocol):
    """What :class:`ClientElicitation` needs of the turn: its cancellation and scopes."""

    @property
    def cancelled(self) -> bool: ...

    def add_permission_scope(self, scope: anyio.CancelScope) -> None: ...

    def discard_permission_scope(self, scope: anyio.CancelScope) -> None: ...


def advertised_modes(connection: AgentSideConnection) -> frozenset[ElicitationMode]:
    """The elicitation modes the client advertised in ``initialize``."""
    capabilities = connection.client_capabilities
    elicitation = None if capabilities is None else capabilities.elicitation
    if elicitation is None:
        return _NO_MODES
    modes: set[ElicitationMode] = set()
    if elicitation.form is not None:
        modes.add("form")
    if elicitation.url is not None:
        modes.add("url")
    return frozenset(modes)


class _RequestScopes:
    """The scopes of a request-scoped question: the handler's own cancellation applies."""

    cancelled = False

    def add_permission_scope(self, scope: anyio.CancelScope) -> None:
        """Nothing to track: cancelling the request cancels its handler, and so the question."""

    def discard_permission_scope(self, scope: anyio.CancelScope) -> None:
        """Nothing to forget."""


@final
class ClientElicitation:
    """Asks the client's user, for one session's turn or for one request of the client.

    Args:
        connection: The connection to the client.
        session_id: The session the questions are scoped to (``None``: scoped to
            ``request_id`` instead).
        turn: The turn (its cancellation cancels open questions); ``None`` for a
            request-scoped one.
        before_ask: Awaited before a question is sent (the runtime flushes what the turn
            published, so the client knows everything the question refers to).
        request_id: The client's request the questions are tied to (request-scoped).
        ask: Puts a question instead of sending it on ``connection`` (the runtime asks every
            attached client that advertised the mode; ``None`` means nobody answered). The
            modes offered stay those ``connection``'s client advertised.

    Raises:
        ValueError: neither or both of ``session_id`` and ``request_id`` given.
    """

    __slots__ = (
        "_ask_all",
        "_before_ask",
        "_closed",
        "_connection",
        "_modes",
        "_request_id",
        "_session_id",
        "_turn",
    )

    def __init__(
        self,
        connection: AgentSideConnection,
        session_id: str | None,
        turn: _TurnScopes | None = None,
        *,
        before_ask: Callable[[], Awaitable[None]] | None = None,
        request_id: RequestId | None = None,
        ask: Callable[
            [CreateElicitationRequest, ElicitationMode],
            Awaitable[CreateElicitationResponse | None],
        ]
        | None = None,
    ) -> None:
        """Bind to a session's turn or a request; see the class docstring for the arguments."""
        if (session_id is None) == (request_id is None):
            raise ValueError("an elicitation is scoped to a session or to a request, not both")
        self._connection = connection
        self._ask_all = ask
        self._session_id = session_id
        self._request_id = request_id
        self._turn: _TurnScopes = turn if turn is not None else _RequestScopes()
        self._before_ask = before_ask
        self._modes = advertised_modes(connection)
        self._closed = False

    def close(self) -> None:
        """The request this is scoped to was answered: no more questions (request scope)."""
        self._closed = True

    @property
    def modes(self) -> frozenset[ElicitationMode]:
        """The modes the client advertised."""
        return self._modes

    async def form(
        self, message: str, schema: ElicitationSchema, *, tool_call_id: str | None = None
    ) -> ElicitationAnswer:
        """Show a form and return the (checked) answer.

        Raises:
            LocalProtocolError: the client did not advertise form elicitation.
            RemoteProtocolError: the client accepted with content that does not match.
            RequestError: the client answered with an error (other than -32800).
        """
        self._require("form")
        request = CreateElicitationRequest(
            message=message,
            mode="form",
            requested_schema=schema,
            **self._scope(tool_call_id),
        )
        response = await self._ask(request)
        if response is None:
            return ElicitationAnswer(action="cancel")
        action = _action(response)
        if action != "accept":
            return ElicitationAnswer(action=action)
        problems = content_problems(schema, response.content)
        if problems:
            raise RemoteProtocolError(
                "the client's answer does not match the form it was sent: " + "; ".join(problems)
            )
        return ElicitationAnswer(action="accept", content=MappingProxyType(response.content or {}))

    async def url(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        tool_call_id: str | None = None,
    ) -> ElicitationAnswer:
        """Ask the user to open ``url``; ``accept`` means they agreed to, not that they are done.

        Raises:
            LocalProtocolError: the client did not advertise URL elicitation.
            RequestError: the client answered with an error (other than -32800).
        """
        self._require("url")
        ident = elicitation_id or str(uuid.uuid4())
        request = CreateElicitationRequest(
            message=message,
            mode="url",
            url=url,
            elicitation_id=ident,
            **self._scope(tool_call_id),
        )
        response = await self._ask(request)
        action = "cancel" if response is None else _action(response)
        return ElicitationAnswer(action=action, elicitation_id=ident)

    async def complete(self, elicitation_id: str) -> None:
        """Send ``elicitation/complete`` (the client ignores ids it does not know).

        Raises:
            LocalProtocolError: the client did not advertise URL elicitation.
        """
        self._require("url")
        await self._connection.complete_elicitation(
            CompleteElicitationNotification(elicitation_id=elicitation_id)
        )

    def _scope(self, tool_call_id: str | None) -> dict[str, Any]:
        if self._request_id is not None:
            return {"request_id": self._request_id}
        return {"session_id": self._session_id, "tool_call_id": tool_call_id}

    def _require(self, mode: ElicitationMode) -> None:
        if self._closed:
            raise LocalProtocolError(
                f"the request {self._request_id!r} this question was tied to has been "
                "answered; ask during it, or in a turn"
            )
        if mode not in self._modes:
            advertised = ", ".join(sorted(self._modes)) or "none"
            raise LocalProtocolError(
                f"the client did not advertise elicitation.{mode}, so the user cannot be asked "
                f"in {mode} mode (modes advertised: {advertised}); ask in the reply instead"
            )

    async def _ask(self, request: CreateElicitationRequest) -> CreateElicitationResponse | None:
        """Send the request; ``None`` when it was cancelled or nobody can answer."""
        turn = self._turn
        if turn.cancelled:
            return None
        if self._before_ask is not None:
            await self._before_ask()
        with anyio.CancelScope() as scope:
            turn.add_permission_scope(scope)
            try:
                if self._ask_all is not None:
                    return await self._ask_all(request, request.mode)  # pyright: ignore[reportArgumentType]
                return await self._connection.create_elicitation(request)
            except RequestCancelled:
                return None
            except (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return None  # the client is gone: nobody can answer
            finally:
                turn.discard_permission_scope(scope)
        return None  # the turn was cancelled while the question was open


def _action(response: CreateElicitationResponse) -> ElicitationAction:
    action = response.action
    if action in ("accept", "decline", "cancel"):
        return action
    logger.warning("the client answered an elicitation with unknown action %r: cancel", action)
    return "cancel"

"""Elicitation policies: who answers an agent's ``elicitation/create``, and how.

Designed like the permission policies (:mod:`._permissions`): a policy is a decision, not a
dialogue box. It gets an :class:`ElicitationContext` (the request, its mode, the form's schema
or the URL, the session and tool call it is about) and returns :class:`Accept` (with the
form's content), :class:`Decline`, or :class:`~accord.client.Cancel` (dismissed).

* :class:`DeclineAll` declines every question (what a bot without a person should do).
* :class:`AcceptDefaults` accepts a form with the defaults its schema declares, when they
  cover every required field; otherwise, and for URLs, it declines.
* :class:`ElicitationCallback` hands the question to an async function (a form on a terminal,
  a dialog in a UI, a scripted answer in a test).

The runtime around the policy (:class:`ElicitationService`):

* elicitation is advertised only when a policy is given to :func:`~accord.client.connect`,
  and only the modes asked for (``elicitation_modes``, both by default); a request in another
  mode, without its schema or URL, or scoped to neither a session nor a request, is refused
  with -32602, a session the client does not know with -32002;
* an accepted form's content is checked against the requested schema
  (:func:`accord.roles.content_problems`) before it is sent: a policy's mistake is answered
  -32603 with the problems in ``data`` (and logged), never sent as an answer;
* cancelling the session's turn (:meth:`ClientSession.cancel`) answers its open questions
  ``cancel``, and the agent's ``$/cancel_request`` abandons the question (-32800); either way a
  policy still deciding is cancelled;
* ``elicitation/complete`` for an accepted URL question is handed to the policy's optional
  ``completed(elicitation_id)`` (:class:`CompletionListener`); unknown or already completed
  ids are ignored, as the spec asks.

Above: :func:`~accord.client.connect`, the ``Client`` classes of :mod:`._handlers`. Below:
:mod:`accord.roles` (the content check), :mod:`accord.schema`.
"""

from __future__ import annotations

import itertools
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, Protocol, TypeAlias, runtime_checkable

import anyio

from ..errors import InternalError, InvalidParams
from ..roles import content_problems, default_content
from ..schema import (
    CompleteElicitationNotification,
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationContentValue,
    ElicitationSchema,
)
from ._permissions import Cancel
from ._state import ToolCallState

if TYPE_CHECKING:
    from ._session import ClientSession

__all__ = (
    "MAX_OPEN_URL_ELICITATIONS",
    "Accept",
    "AcceptDefaults",
    "CompletionListener",
    "Decline",
    "DeclineAll",
    "ElicitationCallback",
    "ElicitationContext",
    "ElicitationDecision",
    "ElicitationModeName",
    "ElicitationPolicy",
    "ElicitationService",
    "checked_modes",
)

logger = logging.getLogger("accord.client")

ElicitationModeName: TypeAlias = Literal["form", "url"]
"""An elicitation mode a client can advertise."""

#: Accepted URL questions remembered for ``elicitation/complete``; the oldest are forgotten.
MAX_OPEN_URL_ELICITATIONS: Final = 256


@dataclass(frozen=True, slots=True)
class Accept:
    """Accept: the form's ``content`` (by field name), or consent to open the URL."""

    content: Mapping[str, ElicitationContentValue] | None = None
    kind: Literal["accept"] = "accept"


@dataclass(frozen=True, slots=True)
class Decline:
    """Decline: the user said no."""

    kind: Literal["decline"] = "decline"


ElicitationDecision: TypeAlias = Accept | Decline | Cancel
"""What an elicitation policy answers (:class:`~accord.client.Cancel`: dismissed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationContext:
    """One question from the agent.

    Attributes:
        request: The request as received.
        tool_call: The tool call it is about, as the session's view knows it (``None`` when
            it is about none, or the tool call is unknown).
    """

    request: CreateElicitationRequest
    tool_call: ToolCallState | None = None

    @property
    def mode(self) -> ElicitationModeName:
        """``form`` or ``url`` (other modes never reach a policy)."""
        return "url" if self.request.mode == "url" else "form"

    @property
    def message(self) -> str:
        """What the agent asks, and why."""
        return self.request.message

    @property
    def schema(self) -> ElicitationSchema:
        """The form's fields (an empty form for URL questions)."""
        return self.request.requested_schema or ElicitationSchema()

    @property
    def url(self) -> str | None:
        """The URL to open (URL questions only)."""
        return self.request.url

    @property
    def session_id(self) -> str | None:
        """The session the question belongs to (``None`` when it is tied to a request)."""
        return self.request.session_id

    @property
    def request_id(self) -> str | int | None:
        """The agent's outstanding request it belongs to, when not tied to a session."""
        return self.request.request_id


@runtime_checkable
class ElicitationPolicy(Protocol):
    """Decides an elicitation request; see the module docstring."""

    async def decide(self, context: ElicitationContext) -> ElicitationDecision:
        """Return the answer to one question."""
        ...


@runtime_checkable
class CompletionListener(Protocol):
    """A policy that wants to hear when an accepted URL question is done."""

    async def completed(self, elicitation_id: str) -> None:
        """The agent reported URL question ``elicitation_id`` complete."""
        ...


@dataclass(frozen=True, slots=True)
class DeclineAll:
    """Decline every question."""

    async def decide(self, context: ElicitationContext) -> ElicitationDecision:
        """Decline."""
        return Decline()


@dataclass(frozen=True, slots=True)
class AcceptDefaults:
    """Accept forms with their declared defaults when those cover every required field."""

    async def decide(self, context: ElicitationContext) -> ElicitationDecision:
        """Accept the defaults, or decline (URLs, required fields without a default)."""
        if context.mode != "form":
            return Decline()
        content = default_content(context.schema)
        if content_problems(context.schema, content):
            return Decline()
        return Accept(content)


@dataclass(frozen=True, slots=True)
class ElicitationCallback:
    """Ask an async function (a person, usually) and answer what it returns.

    The function may take as long as it likes: a cancelled turn or the agent withdrawing the
    question cancels it.
    """

    ask: Callable[[ElicitationContext], Awaitable[ElicitationDecision]]

    async def decide(self, context: ElicitationContext) -> ElicitationDecision:
        """Return the callback's answer."""
        return await self.ask(context)


def checked_modes(modes: Collection[str]) -> frozenset[ElicitationModeName]:
    """``modes`` as a set, checked.

    Raises:
        ValueError: no mode, or one that is neither ``form`` nor ``url``.
    """
    if not modes:
        raise ValueError("elicitation needs at least one mode (form, url)")
    unknown = set(modes) - {"form", "url"}
    if unknown:
        raise ValueError(f"unknown elicitation modes: {', '.join(sorted(unknown))}")
    return frozenset(mode for mode in ("form", "url") if mode in modes)


class OpenSessions(Protocol):
    """The connection's open sessions, as the elicitation service reads them."""

    def session(self, session_id: str) -> ClientSession:
        """The open session ``session_id``.

        Raises:
            ResourceNotFound: it is not open on this client.
        """
        ...


class ElicitationService:
    """The client library's side of elicitation: checks, asks the policy, answers.

    Args:
        policy: Decides each question.
        modes: The modes advertised (and accepted).
        sessions: The connection's open sessions (scopes, tool calls, cancellation): anything
            with a ``session(session_id)`` that returns one or raises ``ResourceNotFound``.
    """

    def __init__(
        self,
        policy: ElicitationPolicy,
        modes: Collection[ElicitationModeName],
        sessions: OpenSessions,
    ) -> None:
        self.policy = policy
        self.modes = checked_modes(modes)
        self._sessions = sessions
        self._ids = itertools.count(1)
        self._open_urls: OrderedDict[str, None] = OrderedDict()

    def capability(self) -> dict[str, object]:
        """The ``elicitation`` client capability: one ``{}`` per advertised mode."""
        return {mode: {} for mode in sorted(self.modes)}

    async def create(self, request: CreateElicitationRequest) -> CreateElicitationResponse:
        """Answer one ``elicitation/create``.

        Raises:
            InvalidParams: unadvertised mode, missing schema or URL, no scope (-32602).
            ResourceNotFound: the session is not open on this client (-32002).
            InternalError: the policy accepted with content that does not match the form.
        """
        context = self._context(request)
        session = None if request.session_id is None else self._sessions.session(request.session_id)
        scope = anyio.CancelScope()
        key = -next(self._ids)  # negative: never one of the permission requests' ids
        decision: ElicitationDecision = Cancel()
        if session is None or session.state not in ("cancelling", "closed"):
            if session is not None:
                session._pending_permissions[key] = scope
            try:
                with scope:
                    decision = await self.policy.decide(context)
            finally:
                if session is not None:
                    session._pending_permissions.pop(key, None)
            if scope.cancelled_caught:
                decision = Cancel()
        return self._answer(context, decision)

    def _context(self, request: CreateElicitationRequest) -> ElicitationContext:
        mode = request.mode
        if mode not in self.modes:
            advertised = ", ".join(sorted(self.modes))
            raise InvalidParams(
                f"elicitation mode {mode!r} is not supported by this client "
                f"(it advertised: {advertised})",
                {"mode": mode, "supported": sorted(self.modes)},
            )
        if mode == "form" and request.requested_schema is None:
            raise InvalidParams("a form elicitation needs a requestedSchema", {"mode": mode})
        if mode == "url" and (not request.url or not request.elicitation_id):
            raise InvalidParams("a url elicitation needs a url and an elicitationId")
        if request.session_id is None and request.request_id is None:
            raise InvalidParams("an elicitation must be scoped to a sessionId or a requestId")
        tool_call = None
        if request.session_id is not None and request.tool_call_id is not None:
            session = self._sessions.session(request.session_id)
            tool_call = session.view.tool_calls.get(request.tool_call_id)
        return ElicitationContext(request=request, tool_call=tool_call)

    def _answer(
        self, context: ElicitationContext, decision: ElicitationDecision
    ) -> CreateElicitationResponse:
        match decision:
            case Accept(content=content):
                if context.mode == "url":
                    self._remember_url(context.request.elicitation_id or "")
                    return CreateElicitationResponse(action="accept")
                problems = content_problems(context.schema, content)
                if problems:
                    logger.warning(
                        "the elicitation policy's answer does not match the form: %s",
                        "; ".join(problems),
                    )
                    raise InternalError(
                        "the client's answer does not match the requested form",
                        {"problems": problems},
                    )
                return CreateElicitationResponse(action="accept", content=dict(content or {}))
            case Decline():
                return CreateElicitationResponse(action="decline")
            case Cancel():
                return CreateElicitationResponse(action="cancel")

    def _remember_url(self, elicitation_id: str) -> None:
        self._open_urls[elicitation_id] = None
        while len(self._open_urls) > MAX_OPEN_URL_ELICITATIONS:
            self._open_urls.popitem(last=False)

    async def complete(self, notification: CompleteElicitationNotification) -> None:
        """``elicitation/complete``: tell the policy, once, about a question it accepted."""
        if notification.elicitation_id not in self._open_urls:
            logger.debug("elicitation/complete for unknown id %r", notification.elicitation_id)
            return
        del self._open_urls[notification.elicitation_id]
        if isinstance(self.policy, CompletionListener):
            await self.policy.completed(notification.elicitation_id)

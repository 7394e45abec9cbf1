"""Permission policies: who answers an agent's ``session/request_permission``, and how.

A policy is a decision, not a dialogue box: it gets a :class:`PermissionContext` (the request,
plus what the session already knows about the tool call, since agents often send only its id)
and returns :class:`Select` (one of the offered options) or :class:`Cancel`. The same policy
serves a CI bot, a terminal UI and a test.

* :class:`AllowAll` / :class:`DenyAll` pick an option by its ``kind`` (``allow_once`` /
  ``allow_always``, resp. ``reject_once`` / ``reject_always``), never by its id: ids differ
  from agent to agent. With no option of that kind they cancel.
* An option whose ``kind`` is missing, null or not one the protocol defines is still accepted
  (agents bend the schema): it keeps its id and name and its ``kind`` reads ``"unknown"``.
  No policy picks it by kind, since its meaning is unknown; only a person (or a callback) can
  choose it.
* :class:`Rules` matches the tool call's kind and a glob on its title; the first matching
  :class:`Rule` decides, else the fallback policy.
* :class:`AskCallback` hands the question to an async function (a prompt on a terminal, a
  modal in a UI, a scripted answer in a test).

Cancellation is not the policy's business: when the turn is cancelled the runtime answers every
pending request ``cancelled`` and cancels a policy still deciding.

Above: the client library (:mod:`accord.client._session`), which calls :meth:`decide`.
Below: the wire models of :mod:`accord.schema`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from ..schema import PermissionOption, PermissionOptionKind, RequestPermissionRequest, ToolKind
from ._state import ToolCallState

__all__ = (
    "AllowAll",
    "AskCallback",
    "Cancel",
    "DenyAll",
    "PermissionContext",
    "PermissionDecision",
    "PermissionPolicy",
    "Rule",
    "RuleAction",
    "Rules",
    "Select",
)


@dataclass(frozen=True, slots=True)
class Select:
    """Answer with the option whose ``optionId`` is ``option_id``."""

    option_id: str
    kind: Literal["select"] = "select"


@dataclass(frozen=True, slots=True)
class Cancel:
    """Answer ``cancelled``: neither allowed nor refused (the agent treats it as a refusal)."""

    kind: Literal["cancel"] = "cancel"


PermissionDecision: TypeAlias = Select | Cancel
"""What a policy answers."""

_ALLOW: tuple[PermissionOptionKind, ...] = ("allow_once", "allow_always")
_ALLOW_ALWAYS: tuple[PermissionOptionKind, ...] = ("allow_always", "allow_once")
_REJECT: tuple[PermissionOptionKind, ...] = ("reject_once", "reject_always")
_REJECT_ALWAYS: tuple[PermissionOptionKind, ...] = ("reject_always", "reject_once")


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionContext:
    """One permission question, with what the session knows about the tool call.

    Attributes:
        session_id: the session asking.
        request: the agent's request as received.
        tool_call: the tool call as the session's view knows it, with the request's own
            ``toolCall`` fields laid over it (so ``kind`` and ``title`` are known even when
            the request carries only the id).
    """

    session_id: str
    request: RequestPermissionRequest
    tool_call: ToolCallState

    @property
    def options(self) -> Sequence[PermissionOption]:
        """The options the agent offers, in its order."""
        return self.request.options

    @property
    def kind(self) -> ToolKind:
        """The tool call's kind (``other`` when unknown)."""
        return self.tool_call.kind

    @property
    def title(self) -> str:
        """The tool call's title ("" when unknown)."""
        return self.tool_call.title

    def option(self, *kinds: PermissionOptionKind) -> PermissionOption | None:
        """The first offered option of the first of ``kinds`` that is offered, if any."""
        for kind in kinds:
            for option in self.request.options:
                if option.kind == kind:
                    return option
        return None

    def select(self, *kinds: PermissionOptionKind) -> PermissionDecision:
        """Select the first offered option of ``kinds`` (in preference order), else cancel."""
        option = self.option(*kinds)
        return Cancel() if option is None else Select(option.option_id)


@runtime_checkable
class PermissionPolicy(Protocol):
    """Decides a permission request; see the module docstring."""

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        """Return the answer to one request."""
        ...


@dataclass(frozen=True, slots=True)
class AllowAll:
    """Allow everything: pick ``allow_once`` (or ``allow_always`` first if ``always``)."""

    always: bool = False

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        """Select an allowing option, or cancel when none is offered."""
        return context.select(*(_ALLOW_ALWAYS if self.always else _ALLOW))


@dataclass(frozen=True, slots=True)
class DenyAll:
    """Refuse everything: pick ``reject_once`` (or ``reject_always`` first if ``always``)."""

    always: bool = False

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        """Select a rejecting option, or cancel when none is offered."""
        return context.select(*(_REJECT_ALWAYS if self.always else _REJECT))


@dataclass(frozen=True, slots=True)
class _CancelAll:
    async def decide(self, context: PermissionContext) -> PermissionDecision:
        return Cancel()


RuleAction: TypeAlias = Literal["allow", "allow_always", "deny", "deny_always", "cancel"]
"""Shorthands for a rule's policy: ``AllowAll()``, ``AllowAll(always=True)``, ``DenyAll()``,
``DenyAll(always=True)``, or answering ``cancelled``."""

_ACTIONS: dict[str, PermissionPolicy] = {
    "allow": AllowAll(),
    "allow_always": AllowAll(always=True),
    "deny": DenyAll(),
    "deny_always": DenyAll(always=True),
    "cancel": _CancelAll(),
}


@dataclass(frozen=True, slots=True, init=False)
class Rule:
    """When a tool call matches, ``then`` decides.

    Args:
        then: a :data:`RuleAction` shorthand or any policy.
        kind: the tool kind(s) it applies to; None = any.
        title: a shell-style glob (``fnmatch``, case-sensitive) on the tool call's title;
            None = any.
    """

    then: PermissionPolicy
    kinds: frozenset[str] | None
    title: str | None

    def __init__(
        self,
        then: RuleAction | PermissionPolicy,
        *,
        kind: ToolKind | Collection[ToolKind] | None = None,
        title: str | None = None,
    ) -> None:
        policy = _ACTIONS[then] if isinstance(then, str) else then
        kinds = None if kind is None else frozenset([kind] if isinstance(kind, str) else kind)
        object.__setattr__(self, "then", policy)
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "title", title)

    def matches(self, context: PermissionContext) -> bool:
        """Whether this rule applies to the request."""
        if self.kinds is not None and context.kind not in self.kinds:
            return False
        return self.title is None or fnmatch.fnmatchcase(context.title, self.title)


@dataclass(frozen=True, slots=True)
class Rules:
    """The first :class:`Rule` that matches decides; ``fallback`` decides the rest."""

    rules: Sequence[Rule]
    fallback: PermissionPolicy = DenyAll()

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        """Apply the first matching rule's policy, else the fallback."""
        for rule in self.rules:
            if rule.matches(context):
                return await rule.then.decide(context)
        return await self.fallback.decide(context)


@dataclass(frozen=True, slots=True)
class AskCallback:
    """Ask an async function (a person, usually) and answer what it returns.

    The function may take as long as it likes: a cancelled turn cancels it, and the agent
    gets ``cancelled``.
    """

    ask: Callable[[PermissionContext], Awaitable[PermissionDecision]]

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        """Return the callback's answer."""
        return await self.ask(context)

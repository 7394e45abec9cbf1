"""Elicitation as an engine sees it: the answer types and the runtime's side of a question.

An engine asks the user a structured question through its :class:`~accord.engines.TurnContext`
(``elicit_form``, ``elicit_url``, ``complete_elicitation``), which forwards to an
:class:`Elicitation` the runtime supplies (the agent runtime's is
``accord.agent.ClientElicitation``: ACP ``elicitation/create`` to the client). The answer is
an :class:`ElicitationAnswer`: ``accept`` (with the form's content, checked against its
schema), ``decline`` or ``cancel``.

Part of the engine contract; sits on :mod:`accord.schema`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, Protocol, TypeAlias, final

from ..schema import ElicitationContentValue, ElicitationSchema

__all__ = ("Elicitation", "ElicitationAction", "ElicitationAnswer", "ElicitationMode")

ElicitationMode: TypeAlias = Literal["form", "url"]
"""How a question is asked: a form the client renders, or a URL the user opens."""

ElicitationAction: TypeAlias = Literal["accept", "decline", "cancel"]
"""How the user answered: accepted (a form's content, or consent to open the URL), declined,
or dismissed / cancelled (also when the turn was cancelled or the client is gone)."""

_EMPTY: Final[Mapping[str, ElicitationContentValue]] = MappingProxyType({})


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationAnswer:
    """The user's answer to one question.

    Attributes:
        action: ``accept``, ``decline`` or ``cancel``.
        content: An accepted form's values, by field name, checked against the schema
            (fields the user left empty are absent); empty otherwise.
        elicitation_id: The id of a URL question (pass it to ``complete_elicitation`` when
            the out-of-band step is done); ``None`` for forms.
    """

    action: ElicitationAction
    content: Mapping[str, ElicitationContentValue] = field(default_factory=lambda: _EMPTY)
    elicitation_id: str | None = None

    @property
    def accepted(self) -> bool:
        """Whether the user accepted."""
        return self.action == "accept"


class Elicitation(Protocol):
    """The runtime's side of elicitation for one turn (see the module docstring)."""

    @property
    def modes(self) -> frozenset[ElicitationMode]:
        """The modes the client advertised (empty: it cannot be asked anything)."""
        ...

    async def form(
        self, message: str, schema: ElicitationSchema, *, tool_call_id: str | None = None
    ) -> ElicitationAnswer:
        """Ask ``message`` with a form of ``schema``; see :meth:`TurnContext.elicit_form`."""
        ...

    async def url(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        tool_call_id: str | None = None,
    ) -> ElicitationAnswer:
        """Ask the user to open ``url``; see :meth:`TurnContext.elicit_url`."""
        ...

    async def complete(self, elicitation_id: str) -> None:
        """Tell the client that URL question ``elicitation_id`` is done."""
        ...

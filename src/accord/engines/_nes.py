"""Next edit suggestions, from the engine's side: what it is asked, what it answers.

An engine declaring ``EngineCapabilities.nes`` also implements :class:`EditSuggester`. The
agent runtime keeps the client's open documents (``document/*``, exact, in code points) and,
for each ``nes/suggest``, hands the engine one :class:`EditRequest`: the document's window of
lines around the cursor (not the whole text: a suggestion is a small, fast request), the
cursor and selection as :class:`~accord.documents.Point` / :class:`~accord.documents.Span`
(code points, whatever encoding the client speaks), the session's recent edits and whatever
context the client sent. The engine answers with :class:`SuggestedEdit` values in the same
code points; the runtime checks each against the document, converts it to the negotiated
position encoding and gives it the id the client will accept or reject it by. The client's
verdict comes back as :meth:`EditSuggester.edit_feedback`.

Cancellation is anyio's: a ``$/cancel_request`` for the ``nes/suggest`` (or ``nes/close``,
or the client leaving) cancels the task awaiting :meth:`EditSuggester.suggest_edits`.

Part of the engine contract (:mod:`accord.engines`); sits on :mod:`accord.documents` and
:mod:`accord.schema`. The agent runtime (:mod:`accord.agent`) calls it; the coder
(:mod:`accord.coder`) implements it with its model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, final, runtime_checkable

from ..documents import Point, Span, TextEdit
from ..schema import NesRejectReason, NesSuggestContext, NesTriggerKind

__all__ = (
    "EditFeedback",
    "EditRequest",
    "EditSuggester",
    "RecentEdit",
    "SuggestedEdit",
)


@final
@dataclass(frozen=True, slots=True)
class RecentEdit:
    """One change the client made to a document of the NES session, by whole lines.

    Attributes:
        uri: The document changed.
        first: The first line (0-based) the change touched.
        before: The text of the lines it replaced (without line breaks).
        after: The text of the lines that replaced them.
    """

    uri: str
    first: int
    before: tuple[str, ...]
    after: tuple[str, ...]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class EditRequest:
    """One ``nes/suggest``, as the engine gets it.

    Attributes:
        nes_session_id: The NES session (from ``nes/start``).
        uri: The document to suggest for.
        language_id: Its language, as the client named it in ``document/didOpen``.
        version: The document version the suggestion is for.
        cursor: The cursor, in code points.
        selection: The selection, if any, in code points.
        trigger_kind: Why the client asked (``automatic``, ``manual``, ``diagnostic``).
        first_line: The line number of ``lines[0]``.
        lines: The document's lines around the cursor (without breaks), the cursor's among
            them.
        line_count: How many lines the whole document has.
        recent_edits: The session's latest changes, oldest first.
        context: What the client sent beside the request (``NesSuggestContext``), as is.
        workspace_uri: The workspace the session was started for, if the client named one.
    """

    nes_session_id: str
    uri: str
    language_id: str
    version: int
    cursor: Point
    selection: Span | None
    trigger_kind: NesTriggerKind
    first_line: int
    lines: tuple[str, ...]
    line_count: int
    recent_edits: tuple[RecentEdit, ...] = ()
    context: NesSuggestContext | None = None
    workspace_uri: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SuggestedEdit:
    """One suggestion: edits to the document asked about, applied together.

    Attributes:
        edits: The edits, against the document's text at the version asked (spans must not
            overlap).
        cursor: Where the cursor should go once they are applied, if anywhere in particular.
    """

    edits: tuple[TextEdit, ...]
    cursor: Point | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class EditFeedback:
    """The client's verdict on a suggestion (``nes/accept`` / ``nes/reject``).

    Attributes:
        nes_session_id: The NES session.
        suggestion_id: The id the runtime gave the suggestion.
        uri: The document it was for.
        suggestion: The suggestion as the engine made it.
        accepted: Whether the client accepted it.
        reason: For a rejection, why (``rejected`` when the client gave no reason); ``None``
            for an acceptance.
    """

    nes_session_id: str
    suggestion_id: str
    uri: str
    suggestion: SuggestedEdit
    accepted: bool
    reason: NesRejectReason | None = None


@runtime_checkable
class EditSuggester(Protocol):
    """What an engine declaring ``EngineCapabilities.nes`` implements beside :class:`Engine`."""

    async def suggest_edits(self, request: EditRequest) -> Sequence[SuggestedEdit]:
        """Return the suggestions for ``request`` (none is a fine answer).

        Raises:
            RequestError: to fail the ``nes/suggest`` with that error.
        """
        ...

    async def edit_feedback(self, feedback: EditFeedback) -> None:
        """Take the client's verdict on a suggestion (what to learn from it is the engine's)."""
        ...

"""The runtime's side of next edit suggestions: NES sessions, the client's documents, suggestions.

One :class:`NesSessions` per client connection (a :class:`~._links.ClientLink` holds it). It
answers ``nes/start`` with a session id, keeps each session's documents exactly as the client
holds them (``document/didOpen`` / ``didChange`` / ``didClose``, through
:class:`~accord.documents.TextDocument`, in the position encoding negotiated at
``initialize``), remembers the latest edits, and answers ``nes/suggest`` by asking the
engine's :class:`~accord.engines.EditSuggester` with a window of lines around the cursor.
Suggestions get ids the client's ``nes/accept`` / ``nes/reject`` name; the verdict goes back
to the engine with the suggestion it made.

The document notifications cannot be answered with an error, so a change that does not fit
(a range past the end or inside a character, a version not above the one held, a document too
large) leaves the document *out of sync*: it is logged, and every ``nes/suggest`` for it fails
with -32602 (``data.reason: out_of_sync``, the change's own error beside it) until the client
opens it again. A suggestion asked for a version the runtime does not hold (the client is
ahead or behind) fails with ``version_mismatch``; an unknown session or document with -32002.
Edits the engine makes for a version the document has since left are dropped (the answer is
no suggestion: the client has moved on).

``nes/close``, ``$/cancel_request`` and the client leaving cancel the suggestions running.

Sits on :mod:`accord.documents`, :mod:`accord.engines` (the NES contract) and
:mod:`accord.schema`; used by :mod:`._runtime`.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio

from ..documents import DocumentError, PositionEncoding, Span, TextDocument
from ..engines import EditFeedback, EditRequest, EditSuggester, RecentEdit, SuggestedEdit
from ..errors import InvalidParams, RequestCancelled, ResourceNotFound
from ..schema import (
    AcceptNesNotification,
    CloseNesRequest,
    CloseNesResponse,
    DidChangeDocumentNotification,
    DidCloseDocumentNotification,
    DidFocusDocumentNotification,
    DidOpenDocumentNotification,
    DidSaveDocumentNotification,
    EditNesSuggestion,
    NesRejectReason,
    NesSuggestion,
    NesTextEdit,
    Position,
    RejectNesNotification,
    StartNesRequest,
    StartNesResponse,
    SuggestNesRequest,
    SuggestNesResponse,
)

__all__ = ("MAX_DOCUMENTS", "MAX_NES_SESSIONS", "WINDOW_LINES", "NesSessions")

logger = logging.getLogger(__name__)

MAX_NES_SESSIONS: Final = 16
"""NES sessions one connection may have open at once (``nes/start`` past it: -32602)."""

MAX_DOCUMENTS: Final = 256
"""Documents one NES session keeps open; opening one more forgets the least recently used."""

WINDOW_LINES: Final = 30
"""Lines above and below the cursor an :class:`~accord.engines.EditRequest` carries."""

RECENT_EDITS: Final = 16
"""Changes a session remembers (the newest), for the engine's ``recent_edits``."""

PENDING_SUGGESTIONS: Final = 64
"""Suggestions a session remembers for ``nes/accept`` / ``nes/reject`` (the newest)."""


@dataclass(slots=True)
class _Held:
    """A document as the client holds it; ``broken``: why it fell out of sync."""

    language_id: str
    version: int
    text: TextDocument
    broken: str | None = None


@dataclass(slots=True)
class _Session:
    """One NES session: its documents, latest edits, suggestions and running requests."""

    workspace_uri: str | None
    documents: OrderedDict[str, _Held] = field(default_factory=lambda: OrderedDict[str, _Held]())
    recent: deque[RecentEdit] = field(
        default_factory=lambda: deque[RecentEdit](maxlen=RECENT_EDITS)
    )
    suggestions: OrderedDict[str, tuple[str, SuggestedEdit]] = field(
        default_factory=lambda: OrderedDict[str, tuple[str, SuggestedEdit]]()
    )
    running: set[anyio.CancelScope] = field(default_factory=lambda: set[anyio.CancelScope]())
    focused: str | None = None


class NesSessions:
    """The NES sessions of one client connection (module docstring).

    Args:
        suggester: The engine, asked for suggestions and told the verdicts.
        max_chars: The largest document kept, in code points.
    """

    def __init__(self, suggester: EditSuggester, *, max_chars: int | None = None) -> None:
        """Create the connection's table; see the class docstring for the arguments."""
        self._suggester = suggester
        self._max_chars = max_chars
        self._sessions: dict[str, _Session] = {}
        #: The position encoding negotiated at ``initialize`` (``utf-16`` until then).
        self.encoding: PositionEncoding = "utf-16"

    # ------------------------------------------------------------------ sessions

    def start(self, request: StartNesRequest) -> StartNesResponse:
        """``nes/start``: a new session id.

        Raises:
            InvalidParams: the connection already has :data:`MAX_NES_SESSIONS` open.
        """
        if len(self._sessions) >= MAX_NES_SESSIONS:
            raise InvalidParams(
                f"this connection already has {MAX_NES_SESSIONS} NES sessions open; "
                "close one (nes/close) first",
                {"reason": "too_many_sessions", "limit": MAX_NES_SESSIONS},
            )
        session_id = f"nes-{uuid.uuid4().hex}"
        self._sessions[session_id] = _Session(workspace_uri=request.workspace_uri)
        return StartNesResponse(session_id=session_id)

    def close(self, request: CloseNesRequest) -> CloseNesResponse:
        """``nes/close``: forget the session and cancel its running suggestions.

        Raises:
            ResourceNotFound: no such session on this connection.
        """
        session = self._session(request.session_id)
        del self._sessions[request.session_id]
        for scope in session.running:
            scope.cancel()
        return CloseNesResponse()

    def close_all(self) -> None:
        """The client left: cancel every running suggestion and forget every session."""
        for session in self._sessions.values():
            for scope in session.running:
                scope.cancel()
        self._sessions.clear()

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise ResourceNotFound(
                f"no NES session {session_id!r} on this connection (start one with nes/start)",
                {"sessionId": session_id, "reason": "unknown_session"},
            )
        return session

    @staticmethod
    def _held(session: _Session, uri: str) -> _Held:
        held = session.documents.get(uri)
        if held is None:
            raise ResourceNotFound(
                f"document {uri!r} is not open in this NES session (send document/didOpen)",
                {"uri": uri, "reason": "unknown_document"},
            )
        return held

    # ------------------------------------------------------------------ documents

    def did_open(self, notification: DidOpenDocumentNotification) -> None:
        """``document/didOpen``: keep the text (replacing what was held for the URI).

        Raises:
            ResourceNotFound: an unknown session.
            DocumentError: the text is over the size limit (nothing is kept).
        """
        session = self._session(notification.session_id)
        if self._max_chars is None:
            text = TextDocument(notification.text)
        else:
            text = TextDocument(notification.text, max_chars=self._max_chars)
        documents = session.documents
        documents[notification.uri] = _Held(notification.language_id, notification.version, text)
        documents.move_to_end(notification.uri)
        while len(documents) > MAX_DOCUMENTS:
            documents.popitem(last=False)

    def did_change(self, notification: DidChangeDocumentNotification) -> None:
        """``document/didChange``: apply the changes exactly, or mark the document out of sync.

        Raises:
            ResourceNotFound: an unknown session or document.
            InvalidParams: the version is not above the one held (now out of sync).
            DocumentError: a change does not fit (nothing applied; now out of sync).
        """
        session = self._session(notification.session_id)
        uri = notification.uri
        held = self._held(session, uri)
        if held.broken is not None:
            return
        if notification.version <= held.version:
            error = InvalidParams(
                f"document/didChange for {uri!r} to version {notification.version}, "
                f"not above the version held ({held.version})",
                {"reason": "version_not_increasing", "held": held.version},
            )
            held.broken = str(error)
            raise error
        try:
            changes = held.text.apply_changes(notification.content_changes, self.encoding)
        except DocumentError as error:
            held.broken = f"a change to version {notification.version} did not fit: {error}"
            raise
        held.version = notification.version
        session.documents.move_to_end(uri)
        for change in changes:
            session.recent.append(RecentEdit(uri, change.first, change.before, change.after))

    def did_close(self, notification: DidCloseDocumentNotification) -> None:
        """``document/didClose``: forget the document.

        Raises:
            ResourceNotFound: an unknown session or document.
        """
        session = self._session(notification.session_id)
        self._held(session, notification.uri)
        del session.documents[notification.uri]
        if session.focused == notification.uri:
            session.focused = None

    def did_save(self, notification: DidSaveDocumentNotification) -> None:
        """``document/didSave``: nothing changes in the text; the document must be open.

        Raises:
            ResourceNotFound: an unknown session or document.
        """
        self._held(self._session(notification.session_id), notification.uri)

    def did_focus(self, notification: DidFocusDocumentNotification) -> None:
        """``document/didFocus``: remember the focused document.

        Raises:
            ResourceNotFound: an unknown session or document.
        """
        session = self._session(notification.session_id)
        self._held(session, notification.uri)
        session.focused = notification.uri
        session.documents.move_to_end(notification.uri)

    # ------------------------------------------------------------------ suggestions

    async def suggest(self, request: SuggestNesRequest) -> SuggestNesResponse:
        """``nes/suggest``: ask the engine, check and convert its edits, give them ids.

        Raises:
            ResourceNotFound: an unknown session or document.
            InvalidParams: the document is out of sync, the version is not the one held, or
                the position or selection does not fit the document (``data.reason``).
            RequestCancelled: the session was closed while the engine worked.
        """
        session = self._session(request.session_id)
        uri = request.uri
        held = self._held(session, uri)
        if held.broken is not None:
            raise InvalidParams(
                f"document {uri!r} is out of sync ({held.broken}); send document/didOpen again",
                {"uri": uri, "reason": "out_of_sync"},
            )
        if request.version != held.version:
            raise InvalidParams(
                f"nes/suggest for version {request.version} of {uri!r}, "
                f"but the version held is {held.version}",
                {"uri": uri, "reason": "version_mismatch", "held": held.version},
            )
        text = held.text
        cursor = text.point_of(request.position, self.encoding)
        selection = (
            None if request.selection is None else text.span_of(request.selection, self.encoding)
        )
        first = max(0, cursor.line - WINDOW_LINES)
        stop = min(text.line_count, cursor.line + WINDOW_LINES + 1)
        edit_request = EditRequest(
            nes_session_id=request.session_id,
            uri=uri,
            language_id=held.language_id,
            version=held.version,
            cursor=cursor,
            selection=selection,
            trigger_kind=request.trigger_kind,
            first_line=first,
            lines=tuple(text.lines(first, stop)),
            line_count=text.line_count,
            recent_edits=tuple(session.recent),
            context=request.context,
            workspace_uri=session.workspace_uri,
        )
        made: Sequence[SuggestedEdit] = ()
        with anyio.CancelScope() as scope:
            session.running.add(scope)
            try:
                made = await self._suggester.suggest_edits(edit_request)
            finally:
                session.running.discard(scope)
        if scope.cancel_called:
            raise RequestCancelled(
                "the NES session was closed while the suggestion was being made",
                {"sessionId": request.session_id},
            )
        if held.version != request.version or session.documents.get(uri) is not held:
            return SuggestNesResponse(suggestions=[])  # the document moved on meanwhile
        return SuggestNesResponse(suggestions=self._wire(session, uri, held.text, made))

    def _wire(
        self, session: _Session, uri: str, text: TextDocument, made: Sequence[SuggestedEdit]
    ) -> list[NesSuggestion]:
        out: list[NesSuggestion] = []
        for suggestion in made:
            try:
                wire = self._checked(text, suggestion)
            except DocumentError as error:
                logger.warning("dropped an NES suggestion for %s that does not fit: %s", uri, error)
                continue
            suggestion_id = f"s-{uuid.uuid4().hex}"
            session.suggestions[suggestion_id] = (uri, suggestion)
            while len(session.suggestions) > PENDING_SUGGESTIONS:
                session.suggestions.popitem(last=False)
            out.append(
                EditNesSuggestion(id=suggestion_id, uri=uri, edits=wire[0], cursor_position=wire[1])
            )
        return out

    def _checked(
        self, text: TextDocument, suggestion: SuggestedEdit
    ) -> tuple[list[NesTextEdit], Position | None]:
        """The suggestion's edits on the wire, and its cursor (a place in the text after them).

        Raises:
            DocumentError: an edit or the cursor does not fit, or two edits overlap.
        """
        edits: list[NesTextEdit] = []
        spans: list[tuple[Span, str]] = []
        for edit in suggestion.edits:
            start, end = text.check_span(edit.span)
            span = Span(start, end)
            spans.append((span, edit.new_text))
            edits.append(
                NesTextEdit(range=text.range_of(span, self.encoding), new_text=edit.new_text)
            )
        spans.sort(key=lambda item: (item[0].start.line, item[0].start.column))
        for (before, _), (after, _) in itertools.pairwise(spans):
            if (after.start.line, after.start.column) < (before.end.line, before.end.column):
                raise DocumentError("two edits of one suggestion overlap", "range_reversed")
        if suggestion.cursor is None:
            return edits, None
        edited = TextDocument(text.text, max_chars=text.max_chars * 2)
        for span, new_text in reversed(spans):  # from the end: earlier spans stay where they are
            edited.replace(span, new_text)
        return edits, edited.position_of(edited.check_point(suggestion.cursor), self.encoding)

    async def accept(self, notification: AcceptNesNotification) -> None:
        """``nes/accept``: tell the engine (an unknown id is ignored: it may be forgotten)."""
        await self._feedback(notification.session_id, notification.id, None)

    async def reject(self, notification: RejectNesNotification) -> None:
        """``nes/reject``: tell the engine, with the reason given."""
        await self._feedback(
            notification.session_id, notification.id, notification.reason or "rejected"
        )

    async def _feedback(
        self, session_id: str, suggestion_id: str, rejected: NesRejectReason | None
    ) -> None:
        """Give the engine the verdict (``rejected``: ``None`` for an acceptance)."""
        session = self._session(session_id)
        found = session.suggestions.pop(suggestion_id, None)
        if found is None:
            logger.info("verdict on unknown NES suggestion %r ignored", suggestion_id)
            return
        uri, suggestion = found
        await self._suggester.edit_feedback(
            EditFeedback(
                nes_session_id=session_id,
                suggestion_id=suggestion_id,
                uri=uri,
                suggestion=suggestion,
                accepted=rejected is None,
                reason=rejected,
            )
        )

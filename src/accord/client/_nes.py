"""Next edit suggestions from the client's side: documents kept in sync, suggestions asked.

``nes = await conn.start_nes(workspace_uri=...)`` (:meth:`ConnectedAgent.start_nes`) starts an
NES session on an agent that advertised ``agentCapabilities.nes`` (else
:class:`~accord.errors.LocalProtocolError`, before anything is sent). The :class:`NesSession`
keeps each document it opened as a :class:`~accord.documents.TextDocument`, the same text the
agent holds, and every change goes through it:

* :meth:`NesSession.open` sends ``document/didOpen``; :meth:`NesSession.change` applies edits
  in code points (:class:`~accord.documents.Span`, what Python code works with) to the local
  text, bumps the version and sends them as incremental ``document/didChange`` changes, their
  ranges in the position encoding negotiated at ``initialize``; :meth:`NesSession.set_text`
  sends a whole new text; :meth:`NesSession.close_document`, :meth:`NesSession.save`,
  :meth:`NesSession.focus` the other events (``didSave`` / ``didFocus`` only when the agent
  advertised them: they say nothing the agent needs);
* :meth:`NesSession.suggest` asks ``nes/suggest`` at a cursor for the version held and returns
  :class:`Suggestion` values, their edits back in code points of that version;
  :meth:`NesSession.apply` makes a suggestion's edits a change of the document,
  :meth:`NesSession.accept` / :meth:`NesSession.reject` give the verdict;
* :meth:`NesSession.aclose` (or ``async with``) sends ``nes/close``.

Edits are validated against the local text before anything is sent: a span past the end or
overlapping another raises :class:`~accord.documents.DocumentError` and nothing changes.

Sits on :mod:`accord.documents`, :mod:`accord.roles` (the typed calls) and :mod:`accord.schema`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self, final

from ..documents import DocumentError, Point, PositionEncoding, Span, TextDocument, TextEdit
from ..errors import LocalProtocolError
from ..roles import ClientSideConnection, is_advertised
from ..schema import (
    AcceptNesNotification,
    CloseNesRequest,
    DidChangeDocumentNotification,
    DidCloseDocumentNotification,
    DidFocusDocumentNotification,
    DidOpenDocumentNotification,
    DidSaveDocumentNotification,
    EditNesSuggestion,
    NesRejectReason,
    NesSuggestContext,
    NesSuggestion,
    NesTriggerKind,
    Position,
    RejectNesNotification,
    StartNesRequest,
    SuggestNesRequest,
    TextDocumentContentChangeEvent,
    WorkspaceFolder,
)

__all__ = ("NesSession", "Suggestion")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestion:
    """One suggestion of the agent, in code points of the document version it was made for.

    Attributes:
        id: What :meth:`NesSession.accept` / :meth:`NesSession.reject` name it by.
        uri: The document.
        version: The version it was made for.
        edits: Its edits (not overlapping), against that version.
        cursor: Where the cursor goes once they are applied, if the agent said.
        wire: The suggestion as it came.
    """

    id: str
    uri: str
    version: int
    edits: tuple[TextEdit, ...]
    cursor: Point | None
    wire: NesSuggestion


@dataclass(slots=True)
class _Document:
    language_id: str
    version: int
    text: TextDocument


class NesSession:
    """One NES session on a connection (module docstring); made by
    :meth:`ConnectedAgent.start_nes`."""

    def __init__(self, calls: ClientSideConnection, session_id: str) -> None:
        """Wrap the session ``session_id`` started on ``calls``."""
        self._calls = calls
        self._session_id = session_id
        self._documents: dict[str, _Document] = {}
        self._closed = False

    @property
    def session_id(self) -> str:
        """The NES session id the agent gave."""
        return self._session_id

    @property
    def encoding(self) -> PositionEncoding:
        """The position encoding negotiated at ``initialize`` (positions on the wire)."""
        encoding = self._calls.position_encoding
        assert encoding in ("utf-16", "utf-8", "utf-32")
        return encoding

    def document(self, uri: str) -> TextDocument:
        """The text of ``uri`` as the agent holds it (read it; change it through this session).

        Raises:
            KeyError: the document is not open in this session.
        """
        return self._held(uri).text

    def version(self, uri: str) -> int:
        """The version of ``uri`` last sent.

        Raises:
            KeyError: the document is not open in this session.
        """
        return self._held(uri).version

    def _held(self, uri: str) -> _Document:
        held = self._documents.get(uri)
        if held is None:
            raise KeyError(f"document {uri!r} is not open in NES session {self._session_id}")
        return held

    def _advertised(self, event: str) -> bool:
        return is_advertised(self._calls.agent_capabilities, ("nes", "events", "document", event))

    # ------------------------------------------------------------------ documents

    async def open(self, uri: str, text: str, language_id: str, *, version: int = 1) -> None:
        """``document/didOpen``: keep ``text`` as version ``version`` and send it.

        Raises:
            DocumentError: the text is over the size limit (nothing sent).
            LocalProtocolError: the agent does not take ``didOpen``.
        """
        document = TextDocument(text)
        await self._calls.did_open_document(
            DidOpenDocumentNotification(
                session_id=self._session_id,
                uri=uri,
                language_id=language_id,
                version=version,
                text=text,
            )
        )
        self._documents[uri] = _Document(language_id, version, document)

    async def change(self, uri: str, edits: Sequence[tuple[Span, str]]) -> int:
        """Apply ``edits`` (``(span, new_text)`` in code points of the current text, not
        overlapping) and send them as one incremental ``document/didChange``; the new version.

        Raises:
            KeyError: the document is not open.
            DocumentError: an edit does not fit or two overlap (nothing changes, nothing sent).
        """
        held = self._held(uri)
        spans = sorted(
            ((Span(*held.text.check_span(span)), text) for span, text in edits),
            key=lambda item: (item[0].start.line, item[0].start.column),
        )
        for (before, _), (after, _) in itertools.pairwise(spans):
            if (after.start.line, after.start.column) < (before.end.line, before.end.column):
                raise DocumentError("two edits of one change overlap", "range_reversed")
        changes: list[TextDocumentContentChangeEvent] = []
        encoding = self.encoding
        # From the end: the spans before an applied edit stay where they were, and each change
        # on the wire is against the text the previous ones left (ACP applies them in order).
        for span, text in reversed(spans):
            changes.append(
                TextDocumentContentChangeEvent(range=held.text.range_of(span, encoding), text=text)
            )
            held.text.replace(span, text)
        return await self._send_change(uri, held, changes)

    async def set_text(self, uri: str, text: str) -> int:
        """Replace the whole text (one full-text ``document/didChange``); the new version.

        Raises:
            KeyError: the document is not open.
            DocumentError: the text is over the size limit (nothing changes, nothing sent).
        """
        held = self._held(uri)
        held.text.set_text(text)
        return await self._send_change(
            uri, held, [TextDocumentContentChangeEvent(range=None, text=text)]
        )

    async def _send_change(
        self, uri: str, held: _Document, changes: list[TextDocumentContentChangeEvent]
    ) -> int:
        held.version += 1
        await self._calls.did_change_document(
            DidChangeDocumentNotification(
                session_id=self._session_id,
                uri=uri,
                version=held.version,
                content_changes=changes,
            )
        )
        return held.version

    async def close_document(self, uri: str) -> None:
        """``document/didClose``: forget the document here and there.

        Raises:
            KeyError: the document is not open.
        """
        self._held(uri)
        del self._documents[uri]
        await self._calls.did_close_document(
            DidCloseDocumentNotification(session_id=self._session_id, uri=uri)
        )

    async def save(self, uri: str) -> bool:
        """``document/didSave``, when the agent takes it; whether it was sent.

        Raises:
            KeyError: the document is not open.
        """
        self._held(uri)
        if not self._advertised("didSave"):
            return False
        await self._calls.did_save_document(
            DidSaveDocumentNotification(session_id=self._session_id, uri=uri)
        )
        return True

    async def focus(self, uri: str, cursor: Point, visible: Span | None = None) -> bool:
        """``document/didFocus`` with the cursor and the visible lines (default: the whole
        document), when the agent takes it; whether it was sent.

        Raises:
            KeyError: the document is not open.
            DocumentError: the cursor or the span does not fit the document.
        """
        held = self._held(uri)
        if not self._advertised("didFocus"):
            return False
        text, encoding = held.text, self.encoding
        shown = visible if visible is not None else Span(Point(0, 0), text.end)
        await self._calls.did_focus_document(
            DidFocusDocumentNotification(
                session_id=self._session_id,
                uri=uri,
                version=held.version,
                position=text.position_of(text.check_point(cursor), encoding),
                visible_range=text.range_of(Span(*text.check_span(shown)), encoding),
            )
        )
        return True

    # ------------------------------------------------------------------ suggestions

    async def suggest(
        self,
        uri: str,
        cursor: Point,
        *,
        selection: Span | None = None,
        trigger_kind: NesTriggerKind = "manual",
        context: NesSuggestContext | None = None,
    ) -> list[Suggestion]:
        """``nes/suggest`` at ``cursor`` for the version held; the suggestions in code points.

        A suggestion of a kind other than ``edit`` (this library asks for none) or with an edit
        that does not fit the text is left out.

        Raises:
            KeyError: the document is not open.
            DocumentError: the cursor or selection does not fit the document.
            RequestError: the agent's error (e.g. -32603 when its model failed).
        """
        held = self._held(uri)
        text, encoding, version = held.text, self.encoding, held.version
        response = await self._calls.suggest_nes(
            SuggestNesRequest(
                session_id=self._session_id,
                uri=uri,
                version=version,
                position=text.position_of(text.check_point(cursor), encoding),
                selection=None
                if selection is None
                else text.range_of(Span(*text.check_span(selection)), encoding),
                trigger_kind=trigger_kind,
                context=context,
            )
        )
        if self._documents.get(uri) is not held or held.version != version:
            return []  # changed meanwhile: the suggestions are for a text no longer there
        out: list[Suggestion] = []
        for wire in response.suggestions:
            if not isinstance(wire, EditNesSuggestion) or wire.uri != uri:
                continue
            try:
                edits = tuple(
                    TextEdit(text.span_of(edit.range, encoding), edit.new_text)
                    for edit in wire.edits
                )
            except DocumentError:
                continue
            cursor_after = None
            if wire.cursor_position is not None:
                cursor_after = _after_point(text, edits, wire.cursor_position, encoding)
            out.append(
                Suggestion(
                    id=wire.id,
                    uri=uri,
                    version=version,
                    edits=edits,
                    cursor=cursor_after,
                    wire=wire,
                )
            )
        return out

    async def apply(self, suggestion: Suggestion) -> int:
        """Make ``suggestion``'s edits a change of its document (one ``didChange``); the new
        version. It does not tell the agent the verdict: :meth:`accept` does.

        Raises:
            KeyError: the document is not open.
            ValueError: the document has changed since the suggestion was made.
        """
        held = self._held(suggestion.uri)
        if held.version != suggestion.version:
            raise ValueError(
                f"the suggestion is for version {suggestion.version} of {suggestion.uri!r}, "
                f"the document is at version {held.version}"
            )
        return await self.change(suggestion.uri, [(e.span, e.new_text) for e in suggestion.edits])

    async def accept(self, suggestion: Suggestion | str) -> None:
        """``nes/accept``: the user took the suggestion (by value or id)."""
        suggestion_id = suggestion if isinstance(suggestion, str) else suggestion.id
        await self._calls.accept_nes(
            AcceptNesNotification(session_id=self._session_id, id=suggestion_id)
        )

    async def reject(
        self, suggestion: Suggestion | str, reason: NesRejectReason | None = "rejected"
    ) -> None:
        """``nes/reject``: the user dismissed the suggestion, with ``reason`` (by value or id)."""
        suggestion_id = suggestion if isinstance(suggestion, str) else suggestion.id
        await self._calls.reject_nes(
            RejectNesNotification(session_id=self._session_id, id=suggestion_id, reason=reason)
        )

    async def aclose(self) -> None:
        """``nes/close`` (once); the documents are forgotten."""
        if self._closed:
            return
        self._closed = True
        self._documents.clear()
        await self._calls.close_nes(CloseNesRequest(session_id=self._session_id))

    async def __aenter__(self) -> Self:
        """The session itself; :meth:`aclose` on exit."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the session."""
        await self.aclose()


def _after_point(
    text: TextDocument,
    edits: Sequence[TextEdit],
    position: Position,
    encoding: PositionEncoding,
) -> Point | None:
    """A position in the text the edits leave, in code points (``None`` if it does not fit)."""
    edited = TextDocument(text.text, max_chars=text.max_chars * 2)
    ordered = sorted(edits, key=lambda e: (e.span.start.line, e.span.start.column), reverse=True)
    try:
        for edit in ordered:
            edited.replace(edit.span, edit.new_text)
        return edited.point_of(position, encoding)
    except DocumentError:
        return None


async def start_nes_session(
    calls: ClientSideConnection,
    *,
    workspace_uri: str | None = None,
    workspace_folders: Sequence[WorkspaceFolder] | None = None,
) -> NesSession:
    """``nes/start`` on ``calls`` (see :meth:`ConnectedAgent.start_nes`).

    Raises:
        LocalProtocolError: the agent did not advertise ``nes`` (nothing is sent).
    """
    if not is_advertised(calls.agent_capabilities, ("nes",)):
        raise LocalProtocolError(
            "the agent does not offer next edit suggestions (no agentCapabilities.nes); "
            "nes/start was not sent"
        )
    response = await calls.start_nes(
        StartNesRequest(
            workspace_uri=workspace_uri,
            workspace_folders=None if workspace_folders is None else list(workspace_folders),
        )
    )
    return NesSession(calls, response.session_id)

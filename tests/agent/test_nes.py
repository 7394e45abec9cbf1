"""The runtime's side of next edit suggestions: NES sessions, document sync, suggestions, verdicts.

An engine declaring ``nes`` (and implementing ``EditSuggester``) makes the runtime advertise
``agentCapabilities.nes`` with the five document events and pick a position encoding from the
client's list; the runtime keeps the client's documents exactly, asks the engine with the
lines around the cursor in code points, and sends its edits back in the negotiated encoding.
Bad input: an unknown session or document (-32002), a version the runtime does not hold, a
change that does not fit (the document is then out of sync until opened again), a position
inside a surrogate pair (-32602). Every message is schema-checked by the suite's wire fixture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from _agent_support import RecordingClient, serve
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.documents import Point, Span, TextEdit
from accord.engines import EditFeedback, EditRequest, EngineCapabilities, SuggestedEdit
from accord.errors import RequestCancelled, RequestError
from accord.roles import ClientSideConnection
from accord.schema import (
    AcceptNesNotification,
    CloseNesRequest,
    DidChangeDocumentNotification,
    DidCloseDocumentNotification,
    DidFocusDocumentNotification,
    DidOpenDocumentNotification,
    DidSaveDocumentNotification,
    Position,
    Range,
    RejectNesNotification,
    StartNesRequest,
    SuggestNesRequest,
    TextDocumentContentChangeEvent,
)
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine

pytestmark = pytest.mark.anyio

URI = "file:///work/app.py"
TEXT = "def greet():\n    return '\U0001f600 hi'\n"


@dataclass
class SuggestingEngine(ScriptedEngine):
    """Records each request; answers with ``answer(request)``; may hold until released."""

    requests: list[EditRequest] = field(default_factory=list[EditRequest])
    feedback: list[EditFeedback] = field(default_factory=list[EditFeedback])
    hold: bool = False
    released: anyio.Event = field(default_factory=anyio.Event)
    cancelled: anyio.Event = field(default_factory=anyio.Event)
    started: anyio.Event = field(default_factory=anyio.Event)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.capabilities = EngineCapabilities(nes=True)

    def answer(self, request: EditRequest) -> Sequence[SuggestedEdit]:
        """After the emoji on the cursor's line, insert `` there``; put the cursor after it."""
        line = request.lines[request.cursor.line - request.first_line]
        column = line.index("hi") + 2
        end = Point(request.cursor.line, column)
        return [
            SuggestedEdit(
                edits=(TextEdit(Span.at(end), " there"),), cursor=Point(end.line, column + 6)
            )
        ]

    async def suggest_edits(self, request: EditRequest) -> Sequence[SuggestedEdit]:
        self.requests.append(request)
        self.started.set()
        if self.hold:
            try:
                await self.released.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
        return self.answer(request)

    async def edit_feedback(self, feedback: EditFeedback) -> None:
        self.feedback.append(feedback)


class EncodingClient(RecordingClient):
    """Offers the position encodings given, in that order of preference."""

    def __init__(self, *encodings: str) -> None:
        super().__init__()
        self.position_encodings = encodings


async def start(conn: ClientSideConnection, text: str = TEXT, version: int = 1) -> str:
    """Start an NES session and open :data:`URI` in it."""
    session = (await conn.start_nes(StartNesRequest(workspace_uri="file:///work"))).session_id
    await conn.did_open_document(
        DidOpenDocumentNotification(
            session_id=session, uri=URI, language_id="python", version=version, text=text
        )
    )
    return session


def suggest(session: str, line: int, character: int, version: int = 1) -> SuggestNesRequest:
    return SuggestNesRequest(
        session_id=session,
        uri=URI,
        version=version,
        position=Position(line=line, character=character),
        trigger_kind="automatic",
    )


def change(
    session: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str
) -> DidChangeDocumentNotification:
    span = Range(
        start=Position(line=start[0], character=start[1]),
        end=Position(line=end[0], character=end[1]),
    )
    return DidChangeDocumentNotification(
        session_id=session,
        uri=URI,
        version=version,
        content_changes=[TextDocumentContentChangeEvent(range=span, text=text)],
    )


async def failure(call: Any) -> RequestError:
    with anyio.fail_after(TIMEOUT), pytest.raises(RequestError) as caught:
        await call
    return caught.value


def test_nothing_of_nes_is_advertised_or_served_without_an_engine_that_suggests() -> None:
    runtime = AgentRuntime(ScriptedEngine(), store=MemorySessionStore())
    assert runtime.agent_capabilities().nes is None
    assert not {m for m in runtime.offered_methods() if m.startswith(("nes/", "document/"))}


def test_an_engine_declaring_nes_must_suggest() -> None:
    with pytest.raises(TypeError, match="EditSuggester"):
        AgentRuntime(ScriptedEngine(capabilities=EngineCapabilities(nes=True)))


async def test_nes_is_advertised_with_every_document_event_and_the_clients_encoding() -> None:
    async with serve(SuggestingEngine(), client=EncodingClient("utf-8", "utf-16")) as h:
        wire = h.conn.agent_capabilities
    assert wire is not None
    assert wire["positionEncoding"] == "utf-8"
    assert wire["nes"]["events"]["document"] == {
        "didOpen": {},
        "didChange": {"syncKind": "incremental"},
        "didClose": {},
        "didSave": {},
        "didFocus": {},
    }


async def test_documents_are_kept_exactly_and_suggestions_come_back_in_utf16() -> None:
    engine = SuggestingEngine()
    async with serve(engine) as h:
        with anyio.fail_after(TIMEOUT):
            session = await start(h.conn)
            # After the emoji (two UTF-16 units) and " hi": insert "!" at UTF-16 column 17.
            await h.conn.did_change_document(change(session, 2, (1, 17), (1, 17), "!"))
            await h.conn.did_focus_document(
                DidFocusDocumentNotification(
                    session_id=session,
                    uri=URI,
                    version=2,
                    position=Position(line=1, character=18),
                    visible_range=Range(
                        start=Position(line=0, character=0), end=Position(line=2, character=0)
                    ),
                )
            )
            answer = await h.conn.suggest_nes(suggest(session, 1, 15, version=2))
    request = engine.requests[0]
    assert request.lines == ("def greet():", "    return '\U0001f600 hi!'", "")
    assert request.cursor == Point(1, 14)  # code points: the emoji is one
    assert request.version == 2 and request.language_id == "python"
    assert request.workspace_uri == "file:///work"
    assert [(e.first, e.before, e.after) for e in request.recent_edits] == [
        (1, ("    return '\U0001f600 hi'",), ("    return '\U0001f600 hi!'",))
    ]
    (suggestion,) = answer.to_wire()["suggestions"]
    assert suggestion["kind"] == "edit" and suggestion["uri"] == URI
    assert suggestion["edits"] == [
        {
            "range": {"start": {"line": 1, "character": 17}, "end": {"line": 1, "character": 17}},
            "newText": " there",
        }
    ]
    assert suggestion["cursorPosition"] == {"line": 1, "character": 23}


async def test_positions_are_counted_in_the_negotiated_encoding() -> None:
    engine = SuggestingEngine()
    async with serve(engine, client=EncodingClient("utf-8")) as h:
        with anyio.fail_after(TIMEOUT):
            session = await start(h.conn)
            # The emoji is four UTF-8 bytes: "hi" ends at byte 19 of line 1.
            answer = await h.conn.suggest_nes(suggest(session, 1, 19))
    assert engine.requests[0].cursor == Point(1, 16)
    (suggestion,) = answer.to_wire()["suggestions"]
    assert suggestion["edits"][0]["range"]["start"] == {"line": 1, "character": 19}
    assert suggestion["cursorPosition"] == {"line": 1, "character": 25}


async def test_accept_and_reject_reach_the_engine_with_the_suggestion() -> None:
    engine = SuggestingEngine()
    async with serve(engine) as h:
        with anyio.fail_after(TIMEOUT):
            session = await start(h.conn)
            first = (await h.conn.suggest_nes(suggest(session, 1, 15))).suggestions[0]
            second = (await h.conn.suggest_nes(suggest(session, 1, 15))).suggestions[0]
            await h.conn.accept_nes(AcceptNesNotification(session_id=session, id=first.id))
            await h.conn.reject_nes(
                RejectNesNotification(session_id=session, id=second.id, reason="ignored")
            )
            await h.conn.reject_nes(RejectNesNotification(session_id=session, id="unknown"))
            await h.conn.did_save_document(DidSaveDocumentNotification(session_id=session, uri=URI))
            await h.conn.suggest_nes(suggest(session, 1, 15))  # after the verdicts, in order
    assert first.id != second.id
    verdicts = [(f.suggestion_id, f.accepted, f.reason, f.uri) for f in engine.feedback]
    assert verdicts == [(first.id, True, None, URI), (second.id, False, "ignored", URI)]
    assert engine.feedback[0].suggestion.edits[0].new_text == " there"


async def test_unknown_sessions_and_documents_are_refused() -> None:
    async with serve(SuggestingEngine()) as h:
        session = await start(h.conn)
        error = await failure(h.conn.suggest_nes(suggest("nes-nope", 0, 0)))
        assert error.code == -32002 and error.data["reason"] == "unknown_session"
        other = SuggestNesRequest(
            session_id=session,
            uri="file:///work/other.py",
            version=1,
            position=Position(line=0, character=0),
            trigger_kind="manual",
        )
        error = await failure(h.conn.suggest_nes(other))
        assert error.code == -32002 and error.data["reason"] == "unknown_document"
        assert "document/didOpen" in error.message
        await h.conn.did_close_document(DidCloseDocumentNotification(session_id=session, uri=URI))
        error = await failure(h.conn.suggest_nes(suggest(session, 0, 0)))
        assert error.data["reason"] == "unknown_document"
        await h.conn.close_nes(CloseNesRequest(session_id=session))
        error = await failure(h.conn.close_nes(CloseNesRequest(session_id=session)))
        assert error.code == -32002


async def test_a_version_the_agent_does_not_hold_is_refused() -> None:
    async with serve(SuggestingEngine()) as h:
        session = await start(h.conn, version=3)
        error = await failure(h.conn.suggest_nes(suggest(session, 0, 0, version=5)))
    assert error.code == -32602
    assert error.data == {"uri": URI, "reason": "version_mismatch", "held": 3}


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (lambda s: change(s, 2, (7, 0), (7, 0), "x"), "line_out_of_range"),
        (lambda s: change(s, 2, (1, 13), (1, 13), "x"), "inside_character"),
        (lambda s: change(s, 1, (0, 0), (0, 0), "x"), "not above the version held"),
    ],
    ids=["line-past-the-end", "inside-a-surrogate-pair", "version-not-increasing"],
)
async def test_a_change_that_does_not_fit_leaves_the_document_out_of_sync(
    bad: Any, why: str
) -> None:
    engine = SuggestingEngine()
    async with serve(engine) as h:
        session = await start(h.conn)
        await h.conn.did_change_document(bad(session))
        await h.conn.did_change_document(change(session, 3, (0, 0), (0, 0), "# ok\n"))
        error = await failure(h.conn.suggest_nes(suggest(session, 1, 15, version=3)))
        assert error.code == -32602 and error.data["reason"] == "out_of_sync"
        assert why in error.message and "didOpen" in error.message
        await start_again(h.conn, session)
        answer = await h.conn.suggest_nes(suggest(session, 1, 15, version=9))
    assert len(answer.suggestions) == 1
    assert engine.requests[-1].lines[:2] == ("def greet():", "    return '\U0001f600 hi'")


async def start_again(conn: ClientSideConnection, session: str) -> None:
    await conn.did_open_document(
        DidOpenDocumentNotification(
            session_id=session, uri=URI, language_id="python", version=9, text=TEXT
        )
    )


async def test_positions_out_of_range_or_inside_a_character_are_refused() -> None:
    async with serve(SuggestingEngine()) as h:
        session = await start(h.conn)
        error = await failure(h.conn.suggest_nes(suggest(session, 5, 0)))
        assert error.code == -32602 and error.data["reason"] == "line_out_of_range"
        error = await failure(h.conn.suggest_nes(suggest(session, 1, 13)))  # between surrogates
        assert error.code == -32602 and error.data["reason"] == "inside_character"


async def test_cancel_request_stops_the_engine() -> None:
    engine = SuggestingEngine(hold=True)
    async with serve(engine) as h:
        session = await start(h.conn)
        async with anyio.create_task_group() as group:
            group.start_soon(h.conn.suggest_nes, suggest(session, 1, 15))
            with anyio.fail_after(TIMEOUT):
                await engine.started.wait()
            group.cancel_scope.cancel()  # the caller gives up: $/cancel_request
        with anyio.fail_after(TIMEOUT):
            await engine.cancelled.wait()
        engine.hold = False
        with anyio.fail_after(TIMEOUT):
            assert len((await h.conn.suggest_nes(suggest(session, 1, 15))).suggestions) == 1


async def test_closing_the_session_cancels_its_suggestions() -> None:
    engine = SuggestingEngine(hold=True)
    async with serve(engine) as h:
        session = await start(h.conn)
        outcome: list[BaseException] = []

        async def ask() -> None:
            try:
                await h.conn.suggest_nes(suggest(session, 1, 15))
            except RequestError as error:
                outcome.append(error)

        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            with anyio.fail_after(TIMEOUT):
                await engine.started.wait()
                await h.conn.close_nes(CloseNesRequest(session_id=session))
    assert engine.cancelled.is_set()
    assert isinstance(outcome[0], RequestCancelled) or outcome[0].code == -32800


async def test_edits_for_a_version_the_document_has_left_are_dropped() -> None:
    engine = SuggestingEngine(hold=True)
    async with serve(engine) as h:
        session = await start(h.conn)
        async with anyio.create_task_group() as group:
            answers: list[int] = []

            async def ask() -> None:
                answers.append(len((await h.conn.suggest_nes(suggest(session, 1, 15))).suggestions))

            group.start_soon(ask)
            with anyio.fail_after(TIMEOUT):
                await engine.started.wait()
                await h.conn.did_change_document(change(session, 2, (0, 0), (0, 0), "#\n"))
                await h.conn.start_nes(StartNesRequest())  # answered once the change is applied
                engine.released.set()
    assert answers == [0]

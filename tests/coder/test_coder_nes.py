"""The coder's next edit suggestions over ACP, against the fake OpenAI server on loopback.

One ``nes/suggest`` is one side request marked ``x-accord-purpose: nes`` carrying the lines
around the cursor (the editable region and the cursor marked), the recent edits and the
verdicts on earlier suggestions; the model's rewritten region comes back as edits in the
negotiated (UTF-16) positions. Cancelling the request drops the model's HTTP request; a model
that answers garbage, or fails, gives a -32603 with ``data.reason``; without a model nothing
of NES is advertised.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.coder import CoderConfig, CoderRuntime
from accord.engines import MODEL_PURPOSE_HEADER
from accord.errors import InternalError
from accord.roles import AgentSideConnection, Client, ClientSideConnection
from accord.schema import (
    AcceptNesNotification,
    ClientCapabilities,
    DidChangeDocumentNotification,
    DidOpenDocumentNotification,
    InitializeRequest,
    Position,
    Range,
    RejectNesNotification,
    StartNesRequest,
    SuggestNesRequest,
    TextDocumentContentChangeEvent,
)
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, RecordedRequest, ScriptedError, ScriptedReply
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio

URI = "file:///work/app.py"
#: Line 1 has an emoji (two UTF-16 units, one code point) before where the edit goes.
TEXT = "def greet(name):\n    s = '\U0001f600' + nme\n    return s\n"


class QuietClient(Client):
    """Offers nothing but the position encodings it is given."""


@asynccontextmanager
async def served(server: FakeOpenAIServer, **config: Any) -> AsyncGenerator[ClientSideConnection]:
    """A coder runtime on the fake server, a client connected and initialized."""
    runtime = CoderRuntime(
        CoderConfig(models=("qwen-local",), base_url=server.base_url, **config),
        store=MemorySessionStore(),
    )
    async with connected(runtime) as conn:
        yield conn


@asynccontextmanager
async def connected(runtime: AgentRuntime) -> AsyncGenerator[ClientSideConnection]:
    agent_end, client_end = memory_transport_pair()
    async with (
        AgentSideConnection(runtime, agent_end),
        ClientSideConnection(QuietClient(), client_end) as conn,
    ):
        with anyio.fail_after(TIMEOUT):
            await conn.initialize(
                InitializeRequest(protocol_version=1, client_capabilities=ClientCapabilities())
            )
        yield conn


async def opened(conn: ClientSideConnection, text: str = TEXT) -> str:
    session = (await conn.start_nes(StartNesRequest())).session_id
    await conn.did_open_document(
        DidOpenDocumentNotification(
            session_id=session, uri=URI, language_id="python", version=1, text=text
        )
    )
    return session


def at(line: int, character: int) -> Position:
    return Position(line=line, character=character)


def suggest(session: str, version: int = 1, position: Position | None = None) -> SuggestNesRequest:
    return SuggestNesRequest(
        session_id=session,
        uri=URI,
        version=version,
        position=position or at(1, 18),
        trigger_kind="manual",
    )


def region_reply(*lines: str) -> ScriptedReply:
    """The model's answer: the editable region rewritten as ``lines``."""
    body = "\n".join(["<<<REGION_START>>>", *lines, "<<<REGION_END>>>"])
    return ScriptedReply(text=[body])


def nes_requests(server: FakeOpenAIServer) -> list[RecordedRequest]:
    return [r for r in server.side_requests if r.headers.get(MODEL_PURPOSE_HEADER) == "nes"]


async def until(check: Callable[[], bool]) -> None:
    """Poll ``check`` (the fake server answers in its own threads) until it holds."""
    with anyio.fail_after(TIMEOUT):
        for _ in itertools.count():
            if check():
                return
            await anyio.sleep(0.02)


def user_text(request: RecordedRequest) -> str:
    return str(request.messages[-1]["content"])


FIXED = ("def greet(name):", "    s = '\U0001f600' + name<<<CURSOR>>>", "    return s", "")


async def test_a_suggestion_comes_from_one_marked_request_in_utf16_positions() -> None:
    with FakeOpenAIServer([], side_scripts={"nes": [region_reply(*FIXED)]}) as server:
        async with served(server) as conn:
            assert conn.agent_capabilities is not None
            assert "nes" in conn.agent_capabilities
            session = await opened(conn)
            with anyio.fail_after(TIMEOUT):
                answer = await conn.suggest_nes(suggest(session))
    (suggestion,) = answer.suggestions
    point = {"line": 1, "character": 16}
    wire = suggestion.model_dump(by_alias=True, exclude_none=True)
    assert wire["uri"] == URI
    # "    s = '😀' + nme": the emoji is two UTF-16 units, so "nme" ends at unit 18 (17
    # code points); the edit inserts the missing "a" between "n" and "me".
    assert wire["edits"] == [{"range": {"start": point, "end": point}, "newText": "a"}]
    assert wire["cursorPosition"] == {"line": 1, "character": 19}
    (asked,) = nes_requests(server)
    assert server.requests == ()  # nothing of a turn was asked
    assert "tools" not in asked.body
    assert asked.body["temperature"] == 0
    text = user_text(asked)
    assert "<<<REGION_START>>>\ndef greet(name):" in text
    assert "    s = '\U0001f600' + nme<<<CURSOR>>>\n" in text
    assert "file:///work/app.py (python), lines 1-4 of 4" in text


async def test_recent_edits_and_verdicts_feed_the_next_request() -> None:
    replies = [
        region_reply(*FIXED),
        region_reply(*(line.replace("return s", "return s.strip()") for line in FIXED)),
        region_reply(*TEXT.replace("return s", "return s.strip()").split("\n")),
    ]
    with FakeOpenAIServer([], side_scripts={"nes": replies}) as server:
        async with served(server) as conn:
            session = await opened(conn)
            first = await conn.suggest_nes(suggest(session))
            await conn.reject_nes(
                RejectNesNotification(
                    session_id=session, id=first.suggestions[0].id, reason="rejected"
                )
            )
            await conn.did_change_document(
                DidChangeDocumentNotification(
                    session_id=session,
                    uri=URI,
                    version=2,
                    content_changes=[
                        TextDocumentContentChangeEvent(
                            range=Range(start=at(2, 11), end=at(2, 12)), text="s.strip()"
                        )
                    ],
                )
            )
            second = await conn.suggest_nes(suggest(session, version=2))
            await conn.accept_nes(
                AcceptNesNotification(session_id=session, id=second.suggestions[0].id)
            )
            third = await conn.suggest_nes(suggest(session, version=2))
    assert third.suggestions == []  # the region came back unchanged: nothing to suggest
    first_ask, second_ask, third_ask = (user_text(r) for r in nes_requests(server))
    assert "earlier suggestions" not in first_ask
    assert "recent edits" not in first_ask
    assert "- rejected (rejected): insert 'a' at line 2" in second_ask
    assert "file:///work/app.py line 3:\n-    return s\n+    return s.strip()" in second_ask
    assert "- rejected (rejected): insert 'a' at line 2" in third_ask
    assert "- accepted: insert 'a' at line 2" in third_ask


async def test_cancelling_the_suggestion_drops_the_model_request() -> None:
    hang = ScriptedReply(text=["x"], hang_after=0, hang_timeout=30.0)
    with FakeOpenAIServer([], side_scripts={"nes": [hang]}) as server:
        async with served(server) as conn:
            session = await opened(conn)
            async with anyio.create_task_group() as group:
                group.start_soon(conn.suggest_nes, suggest(session))
                await until(lambda: bool(nes_requests(server)))
                group.cancel_scope.cancel()  # the caller gives up: $/cancel_request
            await until(lambda: nes_requests(server)[0].outcome != "pending")
    assert nes_requests(server)[0].outcome == "disconnected"


@pytest.mark.parametrize(
    ("reply", "reason", "says"),
    [
        (ScriptedReply(text=["Sure! Here is the fix: add an a."]), "unusable_answer", "marker"),
        (
            ScriptedReply(text=["<<<REGION_START>>>\nno end in sight"]),
            "unusable_answer",
            "<<<REGION_END>>>",
        ),
        (
            region_reply(*(["x"] * 200)),
            "unusable_answer",
            "200 lines for a region of 4",
        ),
        (ScriptedReply(error=ScriptedError(status=400, message="bad")), "model_error", "HTTP 400"),
    ],
)
async def test_a_model_answering_garbage_or_failing_gives_a_clear_error(
    reply: ScriptedReply, reason: str, says: str
) -> None:
    with FakeOpenAIServer([], side_scripts={"nes": [reply]}) as server:
        async with served(server) as conn:
            session = await opened(conn)
            with anyio.fail_after(TIMEOUT), pytest.raises(InternalError) as caught:
                await conn.suggest_nes(suggest(session))
            # the connection is fine afterwards: the session still answers
            assert (await conn.start_nes(StartNesRequest())).session_id
    assert caught.value.data is not None
    assert caught.value.data["reason"] == reason
    assert says in caught.value.message


async def test_a_change_far_from_the_cursor_and_a_deleted_line_are_exact_edits() -> None:
    text = "a = 1\nb = 2\nc = 3\nd = 4\n"
    answer = region_reply("a = 1", "c = 30<<<CURSOR>>>", "d = 4", "")
    with FakeOpenAIServer([], side_scripts={"nes": [answer]}) as server:
        async with served(server) as conn:
            session = await opened(conn, text)
            result = await conn.suggest_nes(suggest(session, position=at(1, 0)))
    (suggestion,) = result.suggestions
    wire = suggestion.model_dump(by_alias=True, exclude_none=True)
    edits = [(e["range"]["start"], e["range"]["end"], e["newText"]) for e in wire["edits"]]
    # "b = 2\nc = 3" becomes "c = 30": one edit from (1,0), trimmed to what differs
    assert edits == [({"line": 1, "character": 0}, {"line": 2, "character": 5}, "c = 30")]
    assert wire["cursorPosition"] == {"line": 1, "character": 6}


async def test_without_a_model_nothing_of_nes_is_advertised() -> None:
    runtime = CoderRuntime(CoderConfig(), store=MemorySessionStore())
    assert not {m for m in runtime.offered_methods() if m.startswith(("nes/", "document/"))}
    async with connected(runtime) as conn:
        assert conn.agent_capabilities is not None
        assert "nes" not in conn.agent_capabilities

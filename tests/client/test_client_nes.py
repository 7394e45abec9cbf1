"""accord's client library driving the accord coder through next edit suggestions.

``ConnectedAgent.start_nes`` gives a ``NesSession`` that keeps its documents as the agent does:
edits in code points go out as incremental ``document/didChange`` changes in the negotiated
encoding (UTF-16 by default, UTF-8 when offered first), suggestions come back in code points,
``apply`` makes one a change, accept and reject reach the coder's next request. An agent that
did not advertise ``nes`` is refused before anything is sent; edits that do not fit change
nothing. The model is the fake OpenAI server on loopback; every message is schema-checked.
"""

from __future__ import annotations

import pytest

from accord.client import NesSession, connect
from accord.coder import CoderConfig, CoderRuntime
from accord.documents import DocumentError, Point, PositionEncoding, Span
from accord.engines import MODEL_PURPOSE_HEADER
from accord.errors import LocalProtocolError
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.anyio

URI = "file:///work/app.py"
TEXT = "def greet(name):\n    s = '\U0001f600' + nme\n    return s\n"


@pytest.fixture
def anyio_backend() -> str:
    """pydantic-ai (the coder's model code) runs on asyncio only."""
    return "asyncio"


def coder(server: FakeOpenAIServer | None) -> CoderRuntime:
    if server is None:
        return CoderRuntime(CoderConfig(), store=MemorySessionStore())
    config = CoderConfig(models=("qwen-local",), base_url=server.base_url)
    return CoderRuntime(config, store=MemorySessionStore())


def region(*lines: str) -> ScriptedReply:
    return ScriptedReply(text=["\n".join(["<<<REGION_START>>>", *lines, "<<<REGION_END>>>"])])


def asked(server: FakeOpenAIServer) -> list[str]:
    """The user messages of the suggestion requests the model received."""
    return [
        str(r.messages[-1]["content"])
        for r in server.side_requests
        if r.headers.get(MODEL_PURPOSE_HEADER) == "nes"
    ]


@pytest.mark.parametrize(("offered", "negotiated"), [((), "utf-16"), (("utf-8",), "utf-8")])
async def test_changes_and_suggestions_round_trip_in_the_negotiated_encoding(
    offered: tuple[PositionEncoding, ...], negotiated: str
) -> None:
    fixed = (
        "def greet(name):",
        "    s = '\U0001f600\U0001f600' + name<<<CURSOR>>>",
        "    return s",
    )
    unchanged = region(*(line.replace("<<<CURSOR>>>", "") for line in fixed), "")
    with FakeOpenAIServer([], side_scripts={"nes": [region(*fixed, ""), unchanged]}) as server:
        async with (
            connect(coder(server), position_encodings=offered) as conn,
            await conn.start_nes(workspace_uri="file:///work") as nes,
        ):
            assert isinstance(nes, NesSession)
            assert nes.encoding == negotiated
            await nes.open(URI, TEXT, "python")
            # two edits in one change, in code points: a second emoji after the first, and
            # "nme" -> "nm" (then the model suggests "name")
            version = await nes.change(
                URI,
                [
                    (Span(Point(1, 10), Point(1, 10)), "\U0001f600"),
                    (Span(Point(1, 16), Point(1, 17)), ""),
                ],
            )
            assert version == 2
            assert nes.document(URI).line(1) == "    s = '\U0001f600\U0001f600' + nm"
            (suggestion,) = await nes.suggest(URI, Point(1, 17))
            assert suggestion.version == 2
            assert [(e.span, e.new_text) for e in suggestion.edits] == [
                (Span(Point(1, 16), Point(1, 17)), "ame")
            ]
            assert suggestion.cursor == Point(1, 19)
            assert await nes.apply(suggestion) == 3
            await nes.accept(suggestion)
            assert nes.document(URI).line(1) == "    s = '\U0001f600\U0001f600' + name"
            assert await nes.suggest(URI, Point(1, 19)) == []  # the region came back as is
            assert await nes.save(URI)
            assert await nes.focus(URI, Point(1, 19))
    first, second = asked(server)
    # the agent held exactly what the client did: both emojis, "nm", then "name"
    assert "    s = '\U0001f600\U0001f600' + nm<<<CURSOR>>>\n" in first
    assert "    s = '\U0001f600\U0001f600' + name<<<CURSOR>>>\n" in second


async def test_verdicts_go_to_the_next_request() -> None:
    fixed = ("def greet(name):", "    s = '\U0001f600' + name", "    return s", "")
    with FakeOpenAIServer([], side_scripts={"nes": [region(*fixed), region(*fixed)]}) as server:
        async with connect(coder(server)) as conn, await conn.start_nes() as nes:
            await nes.open(URI, TEXT, "python")
            (first,) = await nes.suggest(URI, Point(1, 17))
            await nes.reject(first, "ignored")
            await nes.suggest(URI, Point(1, 17))
    assert "- rejected (ignored): insert 'a' at line 2" in asked(server)[1]


async def test_an_agent_without_nes_is_refused_before_anything_is_sent() -> None:
    async with connect(coder(None)) as conn:
        assert not conn.supports("nes")
        with pytest.raises(LocalProtocolError, match="does not offer next edit suggestions"):
            await conn.start_nes()


async def test_edits_that_do_not_fit_change_nothing() -> None:
    with FakeOpenAIServer([]) as server:
        async with connect(coder(server)) as conn, await conn.start_nes() as nes:
            await nes.open(URI, TEXT, "python")
            overlapping = [
                (Span(Point(0, 0), Point(0, 5)), "x"),
                (Span(Point(0, 3), Point(0, 6)), "y"),
            ]
            with pytest.raises(DocumentError, match="overlap"):
                await nes.change(URI, overlapping)
            with pytest.raises(DocumentError):
                await nes.change(URI, [(Span(Point(9, 0), Point(9, 1)), "z")])
            assert nes.version(URI) == 1
            assert nes.document(URI).text == TEXT
            with pytest.raises(KeyError, match="not open"):
                await nes.change("file:///work/other.py", [])
            await nes.close_document(URI)
            with pytest.raises(KeyError):
                nes.document(URI)


async def test_a_stale_suggestion_is_not_applied() -> None:
    fixed = ("def greet(name):", "    s = '\U0001f600' + name", "    return s", "")
    with FakeOpenAIServer([], side_scripts={"nes": [region(*fixed)]}) as server:
        async with connect(coder(server)) as conn, await conn.start_nes() as nes:
            await nes.open(URI, TEXT, "python")
            (suggestion,) = await nes.suggest(URI, Point(1, 17))
            await nes.set_text(URI, "pass\n")
            with pytest.raises(ValueError, match=r"version 1 .* at version 2"):
                await nes.apply(suggestion)


async def test_an_unknown_position_encoding_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown position encoding 'utf-7'"):
        async with connect(coder(None), position_encodings=["utf-7"]):  # type: ignore[list-item]
            pass

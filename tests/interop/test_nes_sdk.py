"""Next edit suggestions with the official TypeScript SDK's NES module (2.x, experimental/nes).

``@agentclientprotocol/sdk`` 2.4.0 no longer carries NES in its JSON schema; it keeps it as a
frozen TypeScript module (method table, types, zod validators). accord's NES definitions come
from 1.4.0's JSON schema (``scripts/schema_sources.py``); the first test holds them to that
module, definition by definition. The others drive accord over stdio with the module, in both
roles (``nes_sdk/*.mjs``): the SDK's NES client (1.9.0 and 2.4.0) against the accord coder,
and accord's client (``ConnectedAgent.start_nes``) against an agent on the SDK's NES module.

Install the SDK with ``scripts/fetch_interop_agents.sh``; without it these tests skip.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from _interop_schema_shape import differences, shape
from helpers.acp_schema import load_schema, sources
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.documents import Point, Span, TextEdit
from accord.schema import EditNesSuggestion
from accord.schema.methods import AGENT_METHODS
from accord.store import MemorySessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply
from accord.transports import spawn_agent

pytestmark = [pytest.mark.interop, pytest.mark.subprocess]

Program = Callable[[str], list[str]]


def _is_64_bit_number(ours: tuple[object, ...], theirs: tuple[object, ...]) -> bool:
    """A 64-bit integer of the JSON schema that the SDK's zod takes as a JavaScript number."""
    return (
        ours[:1] == ("integer",) and ours[1:] in (("int64",), ("uint64",)) and theirs == ("number",)
    )


@pytest.mark.anyio
async def test_accords_nes_definitions_match_the_sdk_module(sdk2_program: Program) -> None:
    with anyio.fail_after(TIMEOUT):
        done = await anyio.run_process(sdk2_program("nes_sdk/nes_schema.mjs"), check=False)
    assert done.returncode == 0, done.stderr.decode()
    module = json.loads(done.stdout)
    ours = load_schema()["$defs"]
    found: list[tuple[str, tuple[object, ...], tuple[object, ...]]] = []
    for name, theirs in module["defs"].items():
        assert name in ours, f"the SDK's NES module defines {name}; accord's schema does not"
        found += differences(shape(ours[name], ours), shape(theirs, {}), name)
    [supplement] = [s for s in sources.SUPPLEMENTS if "nes/" in s.methods]
    for side, owner in (("agent", "AgentCapabilities"), ("client", "ClientCapabilities")):
        theirs = module["capabilities"][side]["properties"]
        for prop in supplement.capabilities[owner]:
            mine = ours[owner]["properties"][prop]
            found += differences(shape(mine, ours), shape(theirs[prop], {}), f"{owner}.{prop}")
    # Field for field the same, but for how 64-bit integers are spelled (document versions,
    # timestamps): `integer` with an int64 / uint64 format here, a JavaScript number there.
    other = [(path, a, b) for path, a, b in found if not _is_64_bit_number(a, b)]
    assert other == []
    spelled = {path.rsplit(".", 1)[-1] for path, _, _ in found}
    assert spelled == {"version", "timestampMs", "lastFocusedMs"}


def test_the_sdk_module_has_the_methods_of_accords_tables(sdk2_nes_types: Path) -> None:
    text = sdk2_nes_types.read_text(encoding="utf-8")
    kinds = {
        method: "request" if kind == "Request" else "notification"
        for method, kind in re.findall(
            r'"((?:nes|document)/\w+)": acp\.Agent(Request|Notification)Handler', text
        )
    }
    ours = {m: s.kind for m, s in AGENT_METHODS.items() if m.startswith(("nes/", "document/"))}
    assert kinds == ours
    assert len(ours) == 10


def test_the_schema_files_are_the_pinned_ones() -> None:
    cached = Path(sources.CACHE)
    assert (cached / sources.PRIMARY_VERSION / "v1" / "schema.unstable.json").exists()
    for supplement in sources.SUPPLEMENTS:
        assert supplement.file.exists(), f"run scripts/fetch_schema.sh ({supplement.file})"


def _region(*lines: str) -> ScriptedReply:
    return ScriptedReply(text=["\n".join(["<<<REGION_START>>>", *lines, "<<<REGION_END>>>"])])


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["1.9.0", "2.4.0"])
async def test_the_sdks_nes_client_drives_the_accord_coder(
    version: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    programs: Program = request.getfixturevalue(
        "sdk1_program" if version == "1.9.0" else "sdk2_program"
    )
    command = programs("nes_sdk/nes_client.mjs")
    result = tmp_path / "result.json"
    now = ("def greet(name):", "    s = '\U0001f600' + nme", "    return s.strip()", "")
    fixed = (
        "def greet(name):",
        "    s = '\U0001f600' + name<<<CURSOR>>>",
        "    return s.strip()",
        "",
    )
    side = {"nes": [_region(*fixed), _region(*now)]}
    with FakeOpenAIServer([], side_scripts=side) as model:
        config = CoderConfig(models=("qwen-local",), base_url=model.base_url)
        runtime = CoderRuntime(config, store=MemorySessionStore())
        try:
            with anyio.fail_after(TIMEOUT):
                # The SDK client on the other end of the pipes; the coder served on them here.
                async with spawn_agent([*command, str(result)]) as pipes:
                    await runtime.serve(pipes)
        finally:
            await runtime.aclose()
        asked = [str(r.messages[-1]["content"]) for r in model.side_requests]
    answer = json.loads(result.read_text())
    nes = answer["agentCapabilities"]["nes"]
    assert set(nes["events"]["document"]) == {
        "didOpen",
        "didChange",
        "didClose",
        "didSave",
        "didFocus",
    }
    assert nes["events"]["document"]["didChange"]["syncKind"] == "incremental"
    assert answer["agentCapabilities"]["positionEncoding"] == "utf-16"
    (suggestion,) = answer["first"]["suggestions"]
    assert suggestion["kind"] == "edit"
    assert suggestion["uri"] == "file:///work/app.py"
    # the emoji is two UTF-16 units: "nme" ends at unit 18, the "a" goes in at unit 16
    point = {"line": 1, "character": 16}
    assert suggestion["edits"] == [{"range": {"start": point, "end": point}, "newText": "a"}]
    assert suggestion["cursorPosition"] == {"line": 1, "character": 19}
    assert answer["second"] == {"suggestions": []}
    assert answer["stale"]["code"] == -32602
    assert answer["stale"]["data"]["reason"] == "version_mismatch"
    # the coder held the SDK client's text exactly (the didChange applied), and the verdict
    # reached the second request
    assert "    return s.strip()\n" in asked[0]
    assert "- accepted: insert 'a' at line 2" in asked[1]


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["1.9.0", "2.4.0"])
async def test_accords_nes_client_against_an_sdk_nes_agent(
    version: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # accord's client (ConnectedAgent.start_nes, NesSession: code points) against an agent on
    # the SDK's NES module (nes_sdk/nes_agent.mjs: UTF-16 units, as JavaScript strings are).
    programs: Program = request.getfixturevalue(
        "sdk1_program" if version == "1.9.0" else "sdk2_program"
    )
    log = tmp_path / "log.json"
    uri = "file:///work/app.py"
    text = "def greet(name):\n    s = '\U0001f600' + nm\n    return s\n"
    with anyio.fail_after(TIMEOUT):
        async with (
            connect([*programs("nes_sdk/nes_agent.mjs"), str(log)]) as conn,
            await conn.start_nes(workspace_uri="file:///work") as nes,
        ):
            assert nes.encoding == "utf-16"
            assert nes.session_id == "sdk-nes-1"
            await nes.open(uri, text, "python")
            # in code points: the emoji is one; "nm" -> "nme", and a second emoji before it
            changed = await nes.change(
                uri,
                [
                    (Span(Point(1, 10), Point(1, 10)), "\U0001f600"),
                    (Span(Point(1, 16), Point(1, 16)), "e"),
                ],
            )
            assert changed == 2
            (dismissed,) = await nes.suggest(uri, Point(1, 18), trigger_kind="automatic")
            await nes.reject(dismissed)
            (suggestion,) = await nes.suggest(uri, Point(1, 18))
            # the agent said UTF-16 (each emoji two units: "a" at unit 18): code points here
            # the one edit value of both sides (the engines' SuggestedEdit holds the same)
            assert suggestion.edits == (TextEdit(Span.at(Point(1, 16)), "a"),)
            assert suggestion.cursor == Point(1, 19)
            wire = suggestion.wire
            assert isinstance(wire, EditNesSuggestion)
            assert wire.edits[0].range.start.character == 18
            assert await nes.apply(suggestion) == 3
            await nes.accept(suggestion)
            assert nes.document(uri).line(1) == "    s = '\U0001f600\U0001f600' + name"
            assert await nes.suggest(uri, Point(1, 19)) == []
            assert await nes.save(uri)
            assert await nes.focus(uri, Point(1, 19))
            await nes.close_document(uri)
    held = json.loads(log.read_text())
    # The SDK does not run its handlers in the order the messages came (a reject sent before
    # the second suggest, a didClose sent after didFocus, were seen handled the other way
    # round): what arrived, each once, as a multiset.
    methods = [method for method, _ in held["events"]]
    assert sorted(methods) == sorted(
        [
            "nes/start",
            "document/didOpen",
            "document/didChange",
            "nes/suggest",
            "nes/reject",
            "nes/suggest",
            "document/didChange",
            "nes/accept",
            "nes/suggest",
            "document/didSave",
            "document/didFocus",
            "document/didClose",
            "nes/close",
        ]
    )
    params = dict(held["events"])
    assert params["nes/reject"] == {
        "sessionId": "sdk-nes-1",
        "id": "sdk-suggestion-1",
        "reason": "rejected",
    }
    assert params["nes/accept"] == {"sessionId": "sdk-nes-1", "id": "sdk-suggestion-2"}
    first, second, third = [p for m, p in held["events"] if m == "nes/suggest"]
    assert (first["version"], first["position"]) == (2, {"line": 1, "character": 20})
    assert (first["triggerKind"], second["triggerKind"]) == ("automatic", "manual")
    assert (third["version"], third["position"]) == (3, {"line": 1, "character": 21})
    # the agent applied accord's incremental changes (UTF-16 ranges) to exactly its text
    [(_, opened), *_] = [e for e in held["events"] if e[0] == "document/didOpen"]
    assert opened["text"] == text
    changes = [p for m, p in held["events"] if m == "document/didChange"]
    assert [c["version"] for c in changes] == [2, 3]
    assert held["documents"] == {}

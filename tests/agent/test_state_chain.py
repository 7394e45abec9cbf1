"""Engine state stored as it grows: a snapshot that appends to the one before is stored as the
items it appends (``state_appended``), so a conversation's stored size grows linearly, and
load, resume and fork still hand the engine exactly the history it last yielded."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from _agent_support import CWD, serve
from helpers.timeouts import TIMEOUT
from pydantic import JsonValue

from accord.agent import AgentRuntime
from accord.agent._kept_state import KeptState
from accord.engines import (
    EngineCapabilities,
    EngineSession,
    SessionContext,
    StateSnapshot,
    TextChunk,
    TurnContext,
    TurnOutput,
    new_id,
)
from accord.errors import RequestError
from accord.events import (
    STATE_APPENDED,
    StateChainError,
    appended_part,
    apply_appended,
    event_from_json,
    stamp,
)
from accord.schema import (
    ContentBlock,
    ForkSessionRequest,
    LoadSessionRequest,
    ResumeSessionRequest,
    TextContentBlock,
)
from accord.store import SessionStore, SqliteSessionStore, StoredEvent

pytestmark = pytest.mark.anyio

#: Makes each history item big enough that stored sizes are dominated by the history.
_PADDING = "x" * 400


class _HistorySession(EngineSession):
    """Keeps a model-like history (a list), or the coder's shape (``{"engine": [...]}``)."""

    def __init__(self, engine: _HistoryEngine, history: list[JsonValue]) -> None:
        self.engine = engine
        self.history = history
        #: How many items the runtime holds (appended mode): ``None`` before the first yield.
        self.yielded_count: int | None = len(history) if history else None

    def _state(self) -> JsonValue:
        if self.engine.wrapped:
            return {"format": 1, "systemPrompt": "be brief", "engine": list(self.history)}
        return list(self.history)

    async def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        rewritten = text == "rewrite"
        if rewritten:
            # What a refused prompt does: the history loses its last exchange.
            del self.history[-2:]
        self.history.append({"role": "user", "text": text, "pad": _PADDING})
        reply = f"reply {len(self.history)}"
        self.history.append({"role": "model", "text": reply, "pad": _PADDING})
        yield TextChunk(message_id=new_id(), content=TextContentBlock(text=reply))
        state = self._state()
        self.engine.yielded.append(state)
        base = self.yielded_count
        if not self.engine.appended or base is None or rewritten:
            yield StateSnapshot(state=state)
        else:
            path = ("engine",) if self.engine.wrapped else ()
            base += self.engine.miscount
            yield StateSnapshot.appended(tuple(self.history[base:]), base=base, path=path)
        self.yielded_count = len(self.history)


class _HistoryEngine:
    """An engine whose state grows by appending, like a model's message history."""

    def __init__(self, *, wrapped: bool = False, appended: bool = False, miscount: int = 0) -> None:
        self.wrapped = wrapped
        #: Yield only what each turn added (``StateSnapshot.appended``) once it yielded whole.
        self.appended = appended
        #: Added to the count an appended snapshot names (an engine that miscounts).
        self.miscount = miscount
        self.yielded: list[JsonValue] = []
        self.opened: dict[str, JsonValue] = {}

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities()

    async def open_session(self, context: SessionContext) -> EngineSession:
        self.opened[context.session_id] = context.history
        stored = context.history
        if isinstance(stored, dict):
            stored = stored["engine"]
        history = list(stored) if isinstance(stored, list) else []
        return _HistorySession(self, history)


def _runtime(engine: _HistoryEngine, store: SessionStore) -> AgentRuntime:
    return AgentRuntime(engine, store=store)


async def _run_turns(store: SessionStore, engine: _HistoryEngine, prompts: Sequence[str]) -> str:
    async with serve(store=store, runtime=_runtime(engine, store)) as h:
        session_id = await h.new_session()
        for prompt in prompts:
            await h.prompt(session_id, prompt)
    return session_id


_STATE_KINDS = ("state_snapshot", STATE_APPENDED)


def _state_events(events: Sequence[StoredEvent]) -> list[StoredEvent]:
    return [e for e in events if e.kind in _STATE_KINDS]


def _fold_each(events: Sequence[StoredEvent]) -> list[JsonValue]:
    """The state after each stored state event, folded from the start of the chain."""
    states: list[JsonValue] = []
    state: JsonValue = None
    for stored in _state_events(events):
        if stored.kind == STATE_APPENDED:
            state = apply_appended(state, orjson.loads(stored.payload))
        else:
            event = event_from_json(stored.payload)
            assert isinstance(event, StateSnapshot)
            state = event.state
        states.append(state)
    return states


async def _size(store: SessionStore, session_id: str) -> int:
    return sum(len(e.payload) for e in await store.read_events(session_id))


@pytest.mark.parametrize("appended", [False, True], ids=["whole", "appended"])
@pytest.mark.parametrize("wrapped", [False, True], ids=["list", "coder-shape"])
async def test_load_resume_and_fork_give_the_engine_exactly_its_last_history(
    store: SessionStore, wrapped: bool, appended: bool
) -> None:
    engine = _HistoryEngine(wrapped=wrapped, appended=appended)
    prompts = [f"prompt {i}" for i in range(12)] + ["rewrite"] + [f"later {i}" for i in range(12)]
    session_id = await _run_turns(store, engine, prompts)
    events = await store.read_events(session_id)
    states = _state_events(events)
    # The first snapshot and the one after the rewrite are whole; every other one appends.
    assert [e.kind for e in states] == (
        ["state_snapshot"] + [STATE_APPENDED] * 11 + ["state_snapshot"] + [STATE_APPENDED] * 12
    )
    # Folding the stored chain gives, at every point, exactly what the engine yielded then.
    assert _fold_each(events) == engine.yielded
    last = engine.yielded[-1]

    later = _HistoryEngine(wrapped=wrapped, appended=appended)
    async with serve(store=store, runtime=_runtime(later, store)) as h:
        with anyio.fail_after(TIMEOUT):
            await h.conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
        assert later.opened[session_id] == last
        with anyio.fail_after(TIMEOUT):
            forked = await h.conn.fork_session(ForkSessionRequest(session_id=session_id, cwd=CWD))
        assert later.opened[forked.session_id] == last
        # The loaded session goes on appending, and so does the fork.
        await h.prompt(session_id, "after load")
        await h.prompt(forked.session_id, "in the fork")
    resumed = _HistoryEngine(wrapped=wrapped, appended=appended)
    async with serve(store=store, runtime=_runtime(resumed, store)) as h:
        with anyio.fail_after(TIMEOUT):
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
            await h.conn.resume_session(ResumeSessionRequest(session_id=forked.session_id, cwd=CWD))
        assert resumed.opened[session_id] == later.yielded[0]
        assert resumed.opened[forked.session_id] == later.yielded[1]
    for sid, expected in ((session_id, later.yielded[0]), (forked.session_id, later.yielded[1])):
        assert _fold_each(await store.read_events(sid))[-1] == expected


async def test_clients_see_the_same_wire_for_a_compact_snapshot(store: SessionStore) -> None:
    engine = _HistoryEngine()
    async with serve(store=store, runtime=_runtime(engine, store), extended=True) as h:
        session_id = await h.new_session()
        for prompt in ("one", "two", "three"):
            await h.prompt(session_id, prompt)
        live = [e["kind"] for e in h.client.ext_events() if e["kind"] in _STATE_KINDS]
        h.client.ext.clear()
        with anyio.fail_after(TIMEOUT):
            await h.conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
        await h.client.wait_until(
            lambda: sum(e["kind"] in _STATE_KINDS for e in h.client.ext_events()) >= 3
        )
        replayed = [e["kind"] for e in h.client.ext_events() if e["kind"] in _STATE_KINDS]
    stored = [e.kind for e in _state_events(await store.read_events(session_id))]
    assert stored == ["state_snapshot", STATE_APPENDED, STATE_APPENDED]
    # The extension names the event as before; no session/update is sent for it either way.
    assert live == replayed == ["state_snapshot"] * 3


async def test_an_old_chain_of_whole_snapshots_still_restores(store: SessionStore) -> None:
    engine = _HistoryEngine()
    session_id = await _run_turns(store, engine, [])
    # What databases written before the compact form hold: every snapshot whole.
    history: list[JsonValue] = []
    envelopes: list[StoredEvent] = []
    for turn in range(5):
        history = [*history, {"role": "user", "text": f"old {turn}"}]
        for event in (
            TextChunk(message_id=new_id(), content=TextContentBlock(text=f"old {turn}")),
            StateSnapshot(state=list(history)),
        ):
            envelopes.append(
                stamp(
                    event,
                    session_id=session_id,
                    seq=len(envelopes) + 1,
                    epoch=0,
                    turn_id=f"turn-{turn}",
                    agent_id="root",
                )
            )
    await store.append_events(envelopes)
    later = _HistoryEngine()
    async with serve(store=store, runtime=_runtime(later, store)) as h:
        with anyio.fail_after(TIMEOUT):
            await h.conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
        assert later.opened[session_id] == history
        await h.prompt(session_id, "new")
    assert _fold_each(await store.read_events(session_id))[-1] == later.yielded[-1]
    assert later.yielded[-1] == [*history, *later.yielded[-1][-2:]]  # type: ignore[index]


async def test_stored_size_grows_linearly_with_the_conversation(tmp_path: Path) -> None:
    sizes: dict[int, tuple[int, int]] = {}
    for turns in (20, 40):
        path = tmp_path / f"sessions-{turns}.sqlite3"
        async with SqliteSessionStore(path) as store:
            session_id = await _run_turns(store, _HistoryEngine(), [f"p{i}" for i in range(turns)])
            payload = await _size(store, session_id)
        found = [p async for p in anyio.Path(tmp_path).glob(f"sessions-{turns}.sqlite3*")]
        files = sum([(await p.stat()).st_size for p in found])
        sizes[turns] = (payload, files)
    # Twice the turns, about twice the bytes (whole snapshots every turn: about four times).
    assert sizes[40][0] < 2.5 * sizes[20][0]
    assert sizes[40][1] < 2.5 * sizes[20][1]


class _RecordSizes(SqliteSessionStore):
    """A SQLite store that remembers the size of every state record saved to it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.saved: list[int] = []

    async def update_session(self, session_id: str, **fields: Any) -> Any:
        if "state" in fields:
            self.saved.append(len(orjson.dumps(fields["state"])))
        return await super().update_session(session_id, **fields)


@pytest.mark.parametrize("appended", [False, True], ids=["whole", "appended"])
async def test_the_saved_state_record_does_not_grow_with_the_conversation(
    tmp_path: Path, appended: bool
) -> None:
    # The record is saved after every turn: it names where the chain holds the engine state
    # (engineSeq) instead of holding the history, so turn 60 saves as few bytes as turn 5.
    async with _RecordSizes(tmp_path / "sessions.sqlite3") as store:
        engine = _HistoryEngine(appended=appended)
        session_id = await _run_turns(store, engine, [f"p{i}" for i in range(60)])
        record = await store.get_session(session_id)
        history = len(orjson.dumps(engine.yielded[-1]))
    assert record is not None and "engine" not in record.state
    assert len(store.saved) >= 60
    assert store.saved[-1] <= store.saved[5] + 8  # a longer seq number at most
    assert store.saved[-1] < history / 50


async def test_a_record_that_holds_the_engine_state_itself_still_restores(
    store: SessionStore,
) -> None:
    # Records written before engineSeq hold the state itself; they restore as before.
    engine = _HistoryEngine(appended=True)
    session_id = await _run_turns(store, engine, ["one", "two", "three"])
    record = await store.get_session(session_id)
    assert record is not None
    state = {k: v for k, v in record.state.items() if k != "engineSeq"}
    await store.update_session(session_id, state={**state, "engine": engine.yielded[-1]})
    later = _HistoryEngine(appended=True)
    async with serve(store=store, runtime=_runtime(later, store)) as h:
        with anyio.fail_after(TIMEOUT):
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        assert later.opened[session_id] == engine.yielded[-1]
        await h.prompt(session_id, "four")
    assert _fold_each(await store.read_events(session_id))[-1] == later.yielded[-1]


async def test_a_record_naming_no_whole_snapshot_is_refused_loudly(store: SessionStore) -> None:
    engine = _HistoryEngine(appended=True)
    session_id = await _run_turns(store, engine, ["one", "two", "three"])
    events = await store.read_events(session_id)
    appended = [e.seq for e in events if e.kind == STATE_APPENDED]
    record = await store.get_session(session_id)
    assert record is not None and appended
    # A record naming an appended event (a damaged record) is refused, not restored wrong.
    await store.update_session(session_id, state={**record.state, "engineSeq": appended[0]})
    later = _HistoryEngine()
    async with serve(store=store, runtime=_runtime(later, store)) as h:
        with anyio.fail_after(TIMEOUT), pytest.raises(RequestError) as raised:
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        assert session_id not in later.opened
    assert "engineSeq" in str(raised.value.data) + raised.value.message


async def test_a_chain_that_does_not_fit_is_refused_loudly(store: SessionStore) -> None:
    engine = _HistoryEngine()
    session_id = await _run_turns(store, engine, [])
    whole = StateSnapshot(state=[{"n": 1}])
    appended = stamp(
        StateSnapshot(state=[{"n": 1}, {"n": 2}, {"n": 3}]),
        session_id=session_id,
        seq=2,
        epoch=0,
        turn_id="t",
        agent_id="root",
        state_before=[{"n": 1}, {"n": 2}],  # not what the chain holds before it
    )
    assert appended.kind == STATE_APPENDED
    first = stamp(whole, session_id=session_id, seq=1, epoch=0, turn_id="t", agent_id="root")
    await store.append_events([first, appended])
    later = _HistoryEngine()
    async with serve(store=store, runtime=_runtime(later, store)) as h:
        with anyio.fail_after(TIMEOUT), pytest.raises(RequestError) as raised:
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        assert session_id not in later.opened
    assert "inconsistent" in str(raised.value.data) + raised.value.message


@pytest.mark.parametrize("miscount", [-1, 1])
async def test_an_appended_snapshot_that_miscounts_fails_the_turn(
    store: SessionStore, miscount: int
) -> None:
    engine = _HistoryEngine(appended=True, miscount=miscount)
    async with serve(store=store, runtime=_runtime(engine, store)) as h:
        session_id = await h.new_session()
        await h.prompt(session_id, "one")
        with pytest.raises(RequestError) as raised:
            await h.prompt(session_id, "two")
    assert raised.value.code == -32603
    # Nothing wrong was stored: the chain still folds to the first turn's history.
    assert _fold_each(await store.read_events(session_id)) == engine.yielded[:1]


def test_an_appended_snapshot_holds_items_or_state_not_both() -> None:
    with pytest.raises(ValueError, match="not both"):
        StateSnapshot(state=[1], items=(2,))
    with pytest.raises(ValueError, match="base must be >= 0"):
        StateSnapshot.appended((1,), base=-1)


def test_appended_part_takes_only_pure_appends() -> None:
    assert appended_part([1, 2], [1, 2, 3]) == {"path": [], "base": 2, "items": [3]}
    assert appended_part({"a": 1, "h": [1]}, {"a": 1, "h": [1, 2]}) == {
        "path": ["h"],
        "base": 1,
        "items": [2],
    }
    assert appended_part([1, 2], [1, 3, 4]) is None  # rewritten
    assert appended_part([1, 2], [1]) is None  # shortened
    assert appended_part({"a": 1, "h": [1]}, {"a": 2, "h": [1, 2]}) is None  # another key
    assert appended_part({"a": 1, "h": [1]}, {"h": [1, 2], "a": 1}) is None  # reordered
    assert appended_part({"n": 1}, {"n": 2}) is None  # not a list
    assert appended_part(None, [1]) is None


@pytest.mark.parametrize(
    ("before", "part", "says"),
    [
        ([1], [2], "JSON object"),
        ([1], {"path": [], "base": 1}, "items"),
        ([1], {"path": "h", "base": 1, "items": []}, "path"),
        ([1], {"path": [], "base": True, "items": []}, "base"),
        ([1], {"path": [], "base": 2, "items": [3]}, "2 items"),
        ({"h": 5}, {"path": ["h"], "base": 0, "items": [3]}, "int"),
        ({"h": []}, {"path": ["g"], "base": 0, "items": [3]}, "does not have"),
        ([1], {"path": ["h"], "base": 0, "items": [3]}, "does not have"),
    ],
)
def test_a_malformed_or_misplaced_append_is_refused(
    before: JsonValue, part: Any, says: str
) -> None:
    with pytest.raises(StateChainError, match=says):
        apply_appended(before, part)
    # The state it was given is left as it was.
    assert before in ([1], {"h": 5}, {"h": []})


def test_folding_does_not_change_the_state_before() -> None:
    before: JsonValue = {"p": "x", "h": [1, 2]}
    after = apply_appended(before, {"path": ["h"], "base": 2, "items": [3]})
    assert after == {"p": "x", "h": [1, 2, 3]}
    assert before == {"p": "x", "h": [1, 2]}


#: Instructions of a few hundred words that do not compress much on their own.
_INSTRUCTIONS = " ".join(f"rule{index * 7919 % 10007}" for index in range(300))


def test_a_kept_append_costs_what_is_new_in_it_and_reads_back_whole() -> None:
    # Each kept append is compressed against the end of the one before: a turn that repeats
    # the last one's instructions and keys costs a fraction of what it costs compressed
    # alone, and the whole state still reads back exactly as the appends folded make it.
    kept = KeptState()
    expected: JsonValue = {"messages": []}
    kept.replace(expected, chained=True, seq=1)
    costs: list[int] = []
    alone: list[int] = []
    for turn in range(40):
        items: list[JsonValue] = [
            {"kind": "request", "instructions": _INSTRUCTIONS, "content": f"prompt {turn}"},
            {"kind": "response", "content": f"reply {turn}", "model_name": "fake-model"},
        ]
        part = {"kind": "state_appended", "path": ["messages"], "base": 2 * turn, "items": items}
        payload = orjson.dumps(part)
        kept.check_append(("messages",), 2 * turn)
        before = kept.packed_bytes
        kept.append(payload, ("messages",), len(items), seq=turn + 2)
        costs.append(kept.packed_bytes - before)
        alone.append(len(zlib.compress(payload, 1)))
        expected = apply_appended(expected, part)
    assert max(costs[1:]) * 4 < min(alone)
    assert kept.pieces == 40
    assert kept.whole() == expected
    assert kept.pieces == 0 and kept.count(("messages",)) == 80
    assert kept.whole() == expected

"""One copy of the history per live session: once the store has committed a session's engine
state, the runtime holds none of its bytes (the engine keeps the history it runs on), reads it
back from the stored chain on the rare paths that need it whole, and loses nothing when the
store fails before committing it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import orjson
import pytest
from _agent_support import CWD, Harness, serve
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
from accord.events import STATE_APPENDED, apply_appended, event_from_json
from accord.schema import (
    ContentBlock,
    ForkSessionRequest,
    LoadSessionRequest,
    ResumeSessionRequest,
    TextContentBlock,
)
from accord.store import SessionStore, StoredEvent, StoreError

pytestmark = pytest.mark.anyio

#: Makes each history item a few hundred bytes, as a model's messages are.
_PADDING = "history " * 50


class _AppendingSession(EngineSession):
    """A model-like history in the coder's shape; yields only what each turn added once the
    runtime holds the rest (counted when yielded, stored or not, as engines must)."""

    def __init__(self, engine: _AppendingEngine, history: list[JsonValue]) -> None:
        self.engine = engine
        self.history = history
        self.yielded_count: int | None = len(history) if history else None

    async def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        if text == "rewrite":
            del self.history[-2:]  # a whole snapshot after appends: compared with the last
        self.history.append({"role": "user", "text": text, "pad": _PADDING})
        self.history.append({"role": "model", "text": f"reply {len(self.history)}"})
        yield TextChunk(message_id=new_id(), content=TextContentBlock(text="ok"))
        state: JsonValue = {"format": 1, "engine": list(self.history)}
        self.engine.yielded.append(state)
        base, self.yielded_count = self.yielded_count, len(self.history)
        if base is None or text == "rewrite":
            yield StateSnapshot(state=state)
        else:
            yield StateSnapshot.appended(tuple(self.history[base:]), base=base, path=("engine",))


class _AppendingEngine:
    def __init__(self) -> None:
        self.yielded: list[JsonValue] = []
        self.opened: dict[str, JsonValue] = {}

    @property
    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities()

    async def open_session(self, context: SessionContext) -> EngineSession:
        self.opened[context.session_id] = context.history
        stored = context.history
        engine = stored.get("engine") if isinstance(stored, dict) else None
        history: list[JsonValue] = list(engine) if isinstance(engine, list) else []
        return _AppendingSession(self, history)


class _FailingStore:
    """A real store whose appends fail while ``failing`` is set and the batch holds an engine
    state event (everything else delegated)."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.failing = False
        self.failed = 0

    async def append_events(self, events: Sequence[StoredEvent]) -> None:
        if self.failing and any(e.kind in _STATE_KINDS for e in events):
            self.failed += 1
            raise StoreError("disk full")
        await self.inner.append_events(events)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


_STATE_KINDS = ("state_snapshot", STATE_APPENDED)


def _kept(h: Harness, session_id: str) -> KeptState:
    return h.runtime._sessions.live[session_id].pipeline.kept_state


async def _read_back(h: Harness, session_id: str) -> JsonValue:
    return await h.runtime._sessions.live[session_id].read_engine_state()


async def _stored_states(store: SessionStore, session_id: str) -> list[tuple[str, JsonValue]]:
    """Each stored state event's kind and the state folded up to it."""
    found: list[tuple[str, JsonValue]] = []
    state: JsonValue = None
    for stored in await store.read_events(session_id, limit=10_000):
        if stored.kind == STATE_APPENDED:
            state = apply_appended(state, orjson.loads(stored.payload))
        elif stored.kind == "state_snapshot":
            event = event_from_json(stored.payload)
            assert isinstance(event, StateSnapshot)
            state = event.state
        else:
            continue
        found.append((stored.kind, state))
    return found


async def test_a_committed_session_keeps_no_history_bytes_and_reads_it_back(
    store: SessionStore,
) -> None:
    engine = _AppendingEngine()
    async with serve(store=store, runtime=AgentRuntime(engine, store=store)) as h:
        session_id = await h.new_session()
        await h.prompt(session_id, "first")
        for turn in range(30):
            await h.prompt(session_id, f"turn {turn}")
            kept = _kept(h, session_id)
            # Committed: nothing of the history is held here, whatever its length.
            assert kept.packed_bytes == 0 and not kept.in_memory
            assert kept.count(("engine",)) == 2 * (turn + 2)
        assert await _read_back(h, session_id) == engine.yielded[-1]
        # The record still names the chain, not the state.
        record = await store.get_session(session_id)
        seq = _kept(h, session_id).seq
        assert record is not None and seq is not None and record.state["engineSeq"] == seq
        # A whole snapshot after appends is compared with the state read back from the store.
        await h.prompt(session_id, "rewrite")
        await h.prompt(session_id, "after the rewrite")
        assert _kept(h, session_id).packed_bytes == 0
    states = await _stored_states(store, session_id)
    assert [kind for kind, _ in states[-2:]] == ["state_snapshot", STATE_APPENDED]
    assert [state for _, state in states] == engine.yielded


async def test_load_resume_and_fork_of_a_session_whose_state_is_only_stored(
    store: SessionStore,
) -> None:
    engine = _AppendingEngine()
    async with serve(store=store, runtime=AgentRuntime(engine, store=store)) as h:
        session_id = await h.new_session()
        for turn in range(8):
            await h.prompt(session_id, f"turn {turn}")
        assert _kept(h, session_id).packed_bytes == 0
        last = engine.yielded[-1]
        # The same runtime forks and reloads it: both from the store.
        with anyio.fail_after(TIMEOUT):
            forked = await h.conn.fork_session(ForkSessionRequest(session_id=session_id, cwd=CWD))
        assert engine.opened[forked.session_id] == last
        with anyio.fail_after(TIMEOUT):
            await h.conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
        assert engine.opened[session_id] == last
        await h.prompt(session_id, "after load")
        await h.prompt(forked.session_id, "in the fork")
        await h.prompt(forked.session_id, "again in the fork")
        assert _kept(h, forked.session_id).packed_bytes == 0
        assert await _read_back(h, forked.session_id) == engine.yielded[-1]
        expected = {session_id: engine.yielded[-3], forked.session_id: engine.yielded[-1]}
    resumed = _AppendingEngine()
    async with serve(store=store, runtime=AgentRuntime(resumed, store=store)) as h:
        for sid, state in expected.items():
            with anyio.fail_after(TIMEOUT):
                await h.conn.resume_session(ResumeSessionRequest(session_id=sid, cwd=CWD))
            assert resumed.opened[sid] == state


async def test_a_failed_store_loses_nothing_of_the_state(store: SessionStore) -> None:
    failing = _FailingStore(store)
    engine = _AppendingEngine()
    runtime = AgentRuntime(engine, store=failing)  # type: ignore[arg-type]
    async with serve(store=failing, runtime=runtime) as h:  # type: ignore[arg-type]
        session_id = await h.new_session()
        for turn in range(5):
            await h.prompt(session_id, f"turn {turn}")
        assert _kept(h, session_id).packed_bytes == 0
        failing.failing = True
        with pytest.raises(RequestError):
            await h.prompt(session_id, "lost by the store")
        assert failing.failed
        # What the store did not commit is still held, and the rest reads back from it.
        kept = _kept(h, session_id)
        assert kept.packed_bytes > 0 and kept.seq is None
        assert await _read_back(h, session_id) == engine.yielded[-1]
        failing.failing = False
        await h.prompt(session_id, "back")
        await h.prompt(session_id, "and on")
        assert _kept(h, session_id).packed_bytes == 0
        last = engine.yielded[-1]
    states = await _stored_states(store, session_id)
    # The turn after the failure was stored whole: the stored chain has every turn.
    assert [kind for kind, _ in states[-2:]] == ["state_snapshot", STATE_APPENDED]
    assert states[-1][1] == last
    assert len(last["engine"]) == 2 * 8  # type: ignore[index, arg-type]
    resumed = _AppendingEngine()
    async with serve(store=store, runtime=AgentRuntime(resumed, store=store)) as h:
        with anyio.fail_after(TIMEOUT):
            await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        assert resumed.opened[session_id] == last


def test_an_engine_yielding_whole_states_keeps_the_last_in_memory() -> None:
    # Its next whole snapshot is compared with it (to be stored as an append): reading the
    # whole history back from the store every turn would cost what the append saves.
    kept = KeptState()
    kept.replace({"h": [1]}, chained=True, seq=3, newest=3, compares=True)
    kept.release(10)
    assert kept.in_memory and kept.whole() == {"h": [1]}
    kept.append(b'{"path":["h"],"base":1,"items":[2]}', ("h",), 1, seq=4)
    kept.release(3)  # not committed yet: kept
    assert kept.in_memory and kept.packed_bytes > 0
    kept.release(4)
    assert not kept.in_memory and kept.packed_bytes == 0
    with pytest.raises(RuntimeError):
        kept.whole()

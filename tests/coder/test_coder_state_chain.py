"""The coder's history in the store: after the first turn each turn stores only the messages
it added (``state_appended``), and load and fork give the model the whole conversation."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from _coder_support import system_text
from pydantic import JsonValue

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.engines import StateSnapshot
from accord.events import STATE_APPENDED, apply_appended, event_from_json
from accord.store import SqliteSessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = pytest.mark.anyio


async def test_each_turn_stores_only_what_it_added_and_load_and_fork_get_it_all(
    project: Path, tmp_path: Path
) -> None:
    script = [
        ScriptedReply(text=["one"]),
        ScriptedReply(tool_calls=[ScriptedToolCall(name="grep", arguments={"pattern": "add"})]),
        ScriptedReply(text=["two"]),
        ScriptedReply(text=["three"]),
        ScriptedReply(text=["after load"]),
        ScriptedReply(text=["in the fork"]),
    ]
    async with SqliteSessionStore(tmp_path / "sessions.sqlite3") as store:
        with FakeOpenAIServer(script) as server:
            config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
            first = CoderRuntime(config, store=store)
            try:
                async with connect(first, cwd=project) as connection:
                    session = await connection.new_session(project)
                    for prompt in ("first", "where is add?", "third"):
                        await session.prompt(prompt)
            finally:
                await first.aclose()
            session_id = session.session_id
            events = await store.read_events(session_id)
            states = [e for e in events if e.kind in ("state_snapshot", STATE_APPENDED)]
            assert [e.kind for e in states] == ["state_snapshot", STATE_APPENDED, STATE_APPENDED]
            # The record names the chain's whole snapshot instead of holding the state; the
            # chain folds from it to the engine's last state (what load and fork restore).
            first_event = event_from_json(states[0].payload)
            assert isinstance(first_event, StateSnapshot)
            folded: JsonValue = first_event.state
            for stored in states[1:]:
                folded = apply_appended(folded, orjson.loads(stored.payload))
            record = await store.get_session(session_id)
            assert record is not None and "engine" not in record.state
            assert record.state["engineSeq"] == states[0].seq
            assert isinstance(folded, dict) and folded["engine"] is not None
            # Each appended event is smaller than the whole history it stands for.
            assert all(len(e.payload) < len(orjson.dumps(folded)) / 2 for e in states[2:])

            second = CoderRuntime(config, store=store)
            try:
                async with connect(second, cwd=project) as connection:
                    loaded = await connection.load_session(session_id, project)
                    await loaded.prompt("after load")
                    forked = await connection.fork_session(session_id, project)
                    await forked.prompt("in the fork")
            finally:
                await second.aclose()
        requests = server.requests
    # The model saw the whole conversation after the load, and in the fork.
    for request, last in ((requests[-2], "after load"), (requests[-1], "in the fork")):
        body = orjson.dumps(request.body).decode()
        for said in ("first", "where is add?", "third", "one", "two", "three", last):
            assert said in body
        assert system_text(request) == system_text(requests[0])

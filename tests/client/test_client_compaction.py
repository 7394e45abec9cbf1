"""Compaction updates in the client library: the capability, the view's fold, the events.

The unstable ``compaction_update`` / ``compaction_summary_chunk`` updates fold into
:class:`~accord.client.SessionView` (one :class:`~accord.client.CompactionState` per id, in
the timeline where it first appeared; ACP's patch rule for ``summary`` and ``error``) and
stream as :class:`~accord.client.CompactionUpdated` /
:class:`~accord.client.CompactionSummaryDelta`. ``connect`` advertises
``session.compaction`` unless told not to. Against accord's coder on the wire:
``tests/coder/test_compaction.py``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _client_agents import TIMEOUT, ScriptedAgent, chunk

from accord.client import (
    CompactionState,
    CompactionSummaryDelta,
    CompactionUpdated,
    Message,
    SessionView,
    TurnRenderer,
    connect,
    render_event,
)
from accord.roles import Client
from accord.schema import (
    ClientCapabilities,
    CompactionSummaryChunkSessionUpdate,
    CompactionUpdateSessionUpdate,
    ImageContentBlock,
    InitializeRequest,
    InitializeResponse,
    TextContentBlock,
)

pytestmark = pytest.mark.anyio


def update(**fields: Any) -> CompactionUpdateSessionUpdate:
    return CompactionUpdateSessionUpdate.model_validate(
        {"sessionUpdate": "compaction_update", **fields}
    )


def summary_chunk(compaction_id: str, text: str) -> CompactionSummaryChunkSessionUpdate:
    return CompactionSummaryChunkSessionUpdate.model_validate(
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": compaction_id,
            "content": {"type": "text", "text": text},
        }
    )


def test_a_compaction_folds_in_place_and_streams_as_typed_events() -> None:
    view = SessionView("s")
    view.apply(chunk("before"))
    started = view.apply(update(compactionId="c1", status="in_progress"))
    assert isinstance(started, CompactionUpdated)
    assert started.compaction == CompactionState(compaction_id="c1", status="in_progress")
    assert started.changed == frozenset({"status"})
    first = view.apply(summary_chunk("c1", "the user "))
    second = view.apply(summary_chunk("c1", "wants tests"))
    assert isinstance(first, CompactionSummaryDelta) and first.text == "the user "
    assert isinstance(second, CompactionSummaryDelta)
    assert second.compaction.summary_text == "the user wants tests"
    assert first.compaction.summary_text == "the user "  # a snapshot never changes
    view.apply(chunk("after", message_id="m2"))
    done = view.apply(update(compactionId="c1", status="completed"))
    assert isinstance(done, CompactionUpdated) and done.compaction.finished
    # Omitted summary: unchanged (ACP's patch rule).
    assert done.compaction.summary_text == "the user wants tests"
    [state] = view.compactions.values()
    assert state is done.compaction
    kinds = [type(item).__name__ for item in view.timeline]
    assert kinds == ["Message", "CompactionState", "Message"]  # placed by its first update
    assert [m.text for m in view.messages] == ["before", "after"]  # no message of its own


def test_summary_and_error_follow_the_patch_rule() -> None:
    view = SessionView("s")
    view.apply(
        update(compactionId="c", status="in_progress", summary=[{"type": "text", "text": "a"}])
    )
    assert view.compactions["c"].summary_text == "a"
    cleared = view.apply(update(compactionId="c", status="in_progress", summary=None))
    assert isinstance(cleared, CompactionUpdated)
    assert cleared.changed == frozenset({"status", "summary"})
    assert view.compactions["c"].summary == ()
    view.apply(
        update(compactionId="c", status="in_progress", summary=[{"type": "text", "text": "b"}])
    )
    view.apply(update(compactionId="c", status="in_progress", summary=[]))
    assert view.compactions["c"].summary == ()
    failed = view.apply(update(compactionId="c", status="failed", error="model down"))
    assert isinstance(failed, CompactionUpdated) and failed.changed == {"status", "error"}
    assert view.compactions["c"].error == "model down"
    view.apply(update(compactionId="c", status="failed", error=None))
    assert view.compactions["c"].error is None


def test_a_chunk_with_a_new_id_starts_a_compaction_and_unknown_statuses_are_kept() -> None:
    view = SessionView("s")
    event = view.apply(summary_chunk("new", "x"))
    assert isinstance(event, CompactionSummaryDelta)
    assert event.compaction.status == "in_progress" and not event.compaction.finished
    view.apply(update(compactionId="new", status="paused_by_agent"))
    assert view.compactions["new"].status == "paused_by_agent"
    assert view.compactions["new"].finished
    image = CompactionSummaryChunkSessionUpdate(
        compaction_id="new", content=ImageContentBlock(data="AA==", mime_type="image/png")
    )
    delta = view.apply(image)
    assert isinstance(delta, CompactionSummaryDelta) and delta.text == ""
    assert render_event(delta) == "[compaction summary] [image]"
    assert [type(item) for item in view.timeline] == [CompactionState]


def test_two_compactions_are_two_entries() -> None:
    view = SessionView("s")
    for name in ("one", "two"):
        view.apply(update(compactionId=name, status="in_progress"))
        view.apply(update(compactionId=name, status="completed"))
    assert list(view.compactions) == ["one", "two"]
    assert len(view.timeline) == 2
    assert not any(isinstance(item, Message) for item in view.timeline)


def test_compactions_render_one_line_each_neutralised() -> None:
    view = SessionView("s")
    lines = [
        render_event(view.apply(update(compactionId="c", status="in_progress"))),
        render_event(view.apply(summary_chunk("c", "kept:\nthe plan"))),
        render_event(view.apply(update(compactionId="c", status="completed"))),
        render_event(view.apply(update(compactionId="d", status="failed", error="bad\x1b[2J"))),
    ]
    assert lines == [
        "[compaction in_progress] summarising earlier turns",
        "[compaction summary] kept:",
        "[compaction completed] earlier turns summarised: kept:",
        "[compaction failed] bad^[[2J; history kept as it was",
    ]
    renderer = TurnRenderer()
    shown = renderer.render(view.apply(chunk("text")))
    shown += renderer.render(view.apply(update(compactionId="e", status="completed")))
    assert shown == "text\n[compaction completed] earlier turns summarised\n"


class RecordingAgent(ScriptedAgent):
    """Remembers the client's initialize request."""

    seen: InitializeRequest | None = None

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        self.seen = request
        return await super().initialize(request)


async def test_connect_advertises_session_compaction_unless_told_not_to() -> None:
    seen: list[ClientCapabilities] = []
    for advertised in (True, False):
        agent = RecordingAgent()
        with anyio.fail_after(TIMEOUT):
            async with connect(agent, compaction=advertised):
                pass
        assert agent.seen is not None
        seen.append(agent.seen.client_capabilities)
    wire = [c.to_wire().get("session", {}) for c in seen]
    assert wire[0] == {"configOptions": {"boolean": {}}, "compaction": {}}
    assert wire[1] == {"configOptions": {"boolean": {}}}


def test_the_role_client_advertises_compaction_only_when_it_says_so() -> None:
    class Plain(Client):
        boolean_config_options = False

    class Compacting(Plain):
        session_compaction = True

    assert Plain().client_capabilities().to_wire().get("session") is None
    assert Compacting().client_capabilities().to_wire()["session"] == {"compaction": {}}


def test_the_summary_text_joins_its_text_blocks_only() -> None:
    state = CompactionState(
        compaction_id="c",
        summary=(TextContentBlock(text="a"), ImageContentBlock(data="AA==", mime_type="image/png")),
    )
    assert state.summary_text == "a"

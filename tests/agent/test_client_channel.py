"""A client's channel: the one mapping to ``session/update``, the extended notification."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from accord.agent import ClientChannel
from accord.agent._cursor import encode_cursor
from accord.engines import ROOT_AGENT_ID, Event, ModelCallStarted, TextChunk, TurnCompleted
from accord.events import EXT_EVENT_METHOD, stamp, wants_extended_events
from accord.schema import TextContentBlock

pytestmark = pytest.mark.anyio


def envelope(event: Event, seq: int = 1, *, agent_id: str = ROOT_AGENT_ID) -> Any:
    return stamp(event, session_id="s-1", seq=seq, epoch=0, turn_id="t-1", agent_id=agent_id)


def cursor(seq: int) -> dict[str, str]:
    """The ``_meta`` of a notification that brings the client to ``seq`` (epoch 0)."""
    return {"acp/cursor": encode_cursor("s-1", 0, seq)}


def _text(text: str, message_id: str = "m") -> TextChunk:
    return TextChunk(message_id=message_id, content=TextContentBlock(text=text))


class Recorder:
    """Senders for a sink that record what a client would receive, optionally gated."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.gate: anyio.Event | None = None

    async def notify(self, method: str, params: Any) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.received.append((method, params))

    def updates(self) -> list[str]:
        return [p["update"]["sessionUpdate"] for m, p in self.received if m == "session/update"]


async def test_a_standard_client_gets_root_updates_only() -> None:
    client = Recorder()
    sink = ClientChannel(client.notify, extended=False, boolean_options=False)
    await sink.deliver(envelope(_text("hi")))
    await sink.deliver(envelope(_text("hidden"), agent_id="sub-1"))
    await sink.deliver(envelope(TurnCompleted(stop_reason="end_turn")))
    await sink.deliver(envelope(ModelCallStarted(call_id="c", model="m")))
    assert client.received == [
        (
            "session/update",
            {
                "sessionId": "s-1",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "hi"},
                    "messageId": "m",
                },
                "_meta": cursor(1),
            },
        )
    ]


async def test_an_extended_client_gets_the_header_before_the_update() -> None:
    client = Recorder()
    sink = ClientChannel(client.notify, extended=True, boolean_options=False)
    await sink.deliver(envelope(_text("hi"), seq=3))
    await sink.deliver(envelope(_text("nested"), seq=4, agent_id="sub-1"))
    await sink.deliver(envelope(TurnCompleted(stop_reason="end_turn"), seq=5))
    header = {"sessionId": "s-1", "epoch": 0, "turnId": "t-1", "layer": "render"}
    assert client.received == [
        (
            EXT_EVENT_METHOD,
            {**header, "seq": 3, "agentId": "root", "kind": "text_chunk", "_meta": cursor(3)},
        ),
        (
            "session/update",
            {
                "sessionId": "s-1",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "hi"},
                    "messageId": "m",
                },
                "_meta": cursor(3),
            },
        ),
        (
            EXT_EVENT_METHOD,
            {
                **header,
                "seq": 4,
                "agentId": "sub-1",
                "kind": "text_chunk",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "nested"},
                    "messageId": "m",
                },
                "_meta": cursor(4),
            },
        ),
        (
            EXT_EVENT_METHOD,
            {
                **header,
                "seq": 5,
                "agentId": "root",
                "layer": "state",
                "kind": "turn_completed",
                "_meta": cursor(5),
            },
        ),
    ]


async def test_observe_events_reach_extended_clients_only() -> None:
    standard, extended = Recorder(), Recorder()
    observed = envelope(ModelCallStarted(call_id="c", model="m"), seq=2)
    for client, opted_in in ((standard, False), (extended, True)):
        channel = ClientChannel(client.notify, extended=opted_in, boolean_options=False)
        assert channel.wants(observed) is opted_in
        await channel.deliver(observed)
    assert standard.received == []
    assert extended.received == [
        (
            EXT_EVENT_METHOD,
            {
                "sessionId": "s-1",
                "seq": 2,
                "epoch": 0,
                "turnId": "t-1",
                "agentId": "root",
                "layer": "observe",
                "kind": "model_call_started",
                "_meta": cursor(2),
            },
        )
    ]


async def test_a_gone_client_is_skipped_silently() -> None:
    async def closed(method: str, params: Any) -> None:
        raise anyio.ClosedResourceError

    channel = ClientChannel(closed, extended=False, boolean_options=False)
    await channel.deliver(envelope(_text("hi")))
    assert channel.gone
    await channel.deliver(envelope(_text("again")))  # no error: skipped


def test_opt_in_detection() -> None:
    assert wants_extended_events({"accord": {"events": True}})
    assert not wants_extended_events({"accord": {"events": "yes"}})
    assert not wants_extended_events({"accord": True})
    assert not wants_extended_events(None)
    assert not wants_extended_events({})

"""Sinks and the event bus: ordering, lossy observers, epochs, the extended notification."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from accord.events import (
    EXT_EVENT_METHOD,
    EventBus,
    ExtendedSink,
    ModelCallStarted,
    ObserverChannel,
    StandardSink,
    TextChunk,
    TurnCompleted,
    wants_extended_events,
)
from accord.schema import SessionNotification, TextContentBlock

from ._samples import envelope

pytestmark = pytest.mark.anyio


def _text(text: str, message_id: str = "m") -> TextChunk:
    return TextChunk(message_id=message_id, content=TextContentBlock(text=text))


class Recorder:
    """Senders for a sink that record what a client would receive, optionally gated."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.gate: anyio.Event | None = None

    async def send_update(self, notification: SessionNotification) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.received.append(("session/update", notification.to_wire()))

    async def send_ext(self, method: str, params: dict[str, Any]) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.received.append((method, params))

    def updates(self) -> list[str]:
        return [p["update"]["sessionUpdate"] for m, p in self.received if m == "session/update"]


async def test_standard_sink_sends_root_updates_only() -> None:
    client = Recorder()
    sink = StandardSink(client.send_update)
    await sink.deliver(envelope(_text("hi")))
    await sink.deliver(envelope(_text("hidden"), agent_id="sub-1"))
    await sink.deliver(envelope(TurnCompleted(stop_reason="end_turn")))
    sink.offer(envelope(ModelCallStarted(call_id="c", model="m")))
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
            },
        )
    ]


async def test_extended_sink_sends_the_header_before_the_update() -> None:
    client = Recorder()
    sink = ExtendedSink(client.send_update, client.send_ext)
    await sink.deliver(envelope(_text("hi"), seq=3))
    await sink.deliver(envelope(_text("nested"), seq=4, agent_id="sub-1"))
    await sink.deliver(envelope(TurnCompleted(stop_reason="end_turn"), seq=5))
    header = {"sessionId": "s-1", "epoch": 0, "turnId": "t-1", "layer": "render"}
    assert client.received == [
        (EXT_EVENT_METHOD, {**header, "seq": 3, "agentId": "root", "kind": "text_chunk"}),
        (
            "session/update",
            {
                "sessionId": "s-1",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "hi"},
                    "messageId": "m",
                },
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
            },
        ),
        (
            EXT_EVENT_METHOD,
            {**header, "seq": 5, "agentId": "root", "layer": "state", "kind": "turn_completed"},
        ),
    ]


async def test_extended_sink_forwards_observe_events_from_its_queue() -> None:
    client = Recorder()
    sink = ExtendedSink(client.send_update, client.send_ext, max_buffer=2)
    client.gate = anyio.Event()
    for seq in range(1, 6):
        sink.offer(envelope(ModelCallStarted(call_id=str(seq), model="m"), seq=seq))
    stats = sink.statistics()
    assert (stats.offered, stats.skipped, stats.buffered) == (5, 3, 2)
    sink.close()
    client.gate.set()
    with anyio.fail_after(5):
        await sink.run()
    assert [p["seq"] for _, p in client.received] == [1, 2]
    assert {p["layer"] for _, p in client.received} == {"observe"}


async def test_render_precedes_state_and_the_prompt_response() -> None:
    client = Recorder()
    client.gate = anyio.Event()
    bus = EventBus("s-1")
    bus.attach(ExtendedSink(client.send_update, client.send_ext))

    async def turn(turn_id: str) -> None:
        # What the runtime does: publish the turn's events, then answer session/prompt.
        await bus.publish(_text(turn_id, f"m-{turn_id}"), epoch=0, turn_id=turn_id)
        await bus.publish(TurnCompleted(stop_reason="end_turn"), epoch=0, turn_id=turn_id)
        client.received.append(("prompt response", {"turnId": turn_id}))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(turn, "t1")
            await anyio.wait_all_tasks_blocked()
            assert client.received == []  # the slow client holds the turn back...
            observed = await bus.publish(
                ModelCallStarted(call_id="c", model="m"), epoch=0, turn_id="t1"
            )
            assert observed is not None  # ...but never the observe layer
            client.gate.set()
        await turn("t2")
    seen = [(p["turnId"], p.get("kind", m)) for m, p in client.received if "turnId" in p]
    assert seen == [
        ("t1", "text_chunk"),
        ("t1", "turn_completed"),
        ("t1", "prompt response"),
        ("t2", "text_chunk"),
        ("t2", "turn_completed"),
        ("t2", "prompt response"),
    ]
    assert client.updates() == ["agent_message_chunk", "agent_message_chunk"]


async def test_concurrent_publishers_are_delivered_in_seq_order() -> None:
    client = Recorder()
    client.gate = anyio.Event()
    bus = EventBus("s-1")
    bus.attach(ExtendedSink(client.send_update, client.send_ext))

    async def publish(n: int) -> None:
        await bus.publish(_text(str(n), f"m{n}"), epoch=0, turn_id="t")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for n in range(10):
                tg.start_soon(publish, n)
            await anyio.wait_all_tasks_blocked()
            client.gate.set()
    seqs = [p["seq"] for m, p in client.received if m == EXT_EVENT_METHOD]
    assert seqs == list(range(1, 11))
    texts = [p["update"]["content"]["text"] for m, p in client.received if m == "session/update"]
    ext_ids = [p["update"]["messageId"] for m, p in client.received if m == "session/update"]
    assert [f"m{t}" for t in texts] == ext_ids


async def test_a_slow_observer_skips_without_blocking_the_publisher() -> None:
    bus = EventBus("s-1")
    slow = bus.observe(max_buffer=4)
    fast = bus.observe(max_buffer=100)
    with anyio.fail_after(5):
        for i in range(20):
            await bus.publish(_text(str(i)), epoch=0, turn_id="t")
        await bus.publish(ModelCallStarted(call_id="c", model="m"), epoch=0, turn_id="t")
    slow_stats = slow.statistics()
    assert (slow_stats.offered, slow_stats.skipped, slow_stats.buffered) == (21, 17, 4)
    assert fast.statistics().skipped == 0
    bus.close()
    seen = [env.session_seq async for env in slow]
    assert seen == [1, 2, 3, 4]
    assert [env.session_seq async for env in fast] == list(range(1, 22))
    assert bus.statistics().observers == 0


async def test_seq_increases_and_late_events_of_an_old_epoch_are_dropped() -> None:
    client = Recorder()
    bus = EventBus("s-1", epoch=2, next_seq=10)
    bus.attach(StandardSink(client.send_update))
    old = bus.epoch
    first = await bus.publish(_text("a"), epoch=old, turn_id="t")
    assert first is not None
    assert (first.session_seq, first.session_epoch) == (10, 2)
    assert bus.new_epoch() == 3
    assert await bus.publish(_text("late"), epoch=old, turn_id="t") is None
    assert (
        await bus.publish(ModelCallStarted(call_id="c", model="m"), epoch=old, turn_id="t") is None
    )
    second = await bus.publish(_text("b"), epoch=bus.epoch, turn_id="t2")
    assert second is not None
    assert (second.session_seq, second.session_epoch) == (11, 3)
    stats = bus.statistics()
    assert (stats.published, stats.stale_dropped, stats.next_seq) == (2, 2, 12)
    assert len(client.received) == 2


async def test_detached_sink_gets_nothing_more() -> None:
    client = Recorder()
    bus = EventBus("s-1")
    sink = StandardSink(client.send_update)
    bus.attach(sink)
    await bus.publish(_text("a"), epoch=0, turn_id="t")
    bus.detach(sink)
    bus.detach(sink)
    await bus.publish(_text("b"), epoch=0, turn_id="t")
    assert len(client.received) == 1


async def test_observer_channel_basics() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ObserverChannel(0)
    channel = ObserverChannel(1)
    with pytest.raises(anyio.WouldBlock):
        channel.receive_nowait()
    assert channel.offer(envelope(_text("a")))
    assert not channel.offer(envelope(_text("full")))
    assert (await channel.receive()).session_seq == 1
    channel.close()
    assert not channel.offer(envelope(_text("b")))
    assert channel.closed
    with pytest.raises(anyio.EndOfStream):
        await channel.receive()


async def test_observer_channel_wakes_a_waiting_reader() -> None:
    channel = ObserverChannel()
    got: list[int] = []

    async def read() -> None:
        got.extend([env.session_seq async for env in channel])

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.wait_all_tasks_blocked()
            channel.offer(envelope(_text("a"), seq=1))
            await anyio.wait_all_tasks_blocked()
            channel.offer(envelope(_text("b"), seq=2))
            channel.close()
    assert got == [1, 2]


def test_bus_refuses_a_seq_below_one() -> None:
    with pytest.raises(ValueError, match="starts at 1"):
        EventBus("s", next_seq=0)


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (None, False),
        ({}, False),
        ({"accord": {"events": True}}, True),
        ({"accord": {"events": "yes"}}, False),
        ({"accord": True}, False),
        ({"other": {"events": True}}, False),
    ],
)
def test_opt_in_through_meta(meta: dict[str, Any] | None, expected: bool) -> None:
    assert wants_extended_events(meta) is expected

"""``AgentSideConnection.send_chunk``: the model-free fast path of streamed message chunks."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from _roles_support import MinimalAgent, MinimalClient, connect
from helpers.timeouts import TIMEOUT

from accord.roles import ChunkKind
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    ImageContentBlock,
    SessionNotification,
    TextContentBlock,
    UserMessageChunkSessionUpdate,
)

pytestmark = pytest.mark.anyio


async def _wait_for(client: MinimalClient, count: int) -> None:
    """Wait until ``client`` has handled ``count`` updates."""
    with anyio.fail_after(TIMEOUT):
        while len(client.updates) < count:
            await anyio.lowlevel.checkpoint()


async def test_a_text_chunk_is_the_same_message_as_the_typed_call() -> None:
    client = MinimalClient()
    async with connect(MinimalAgent(), client) as pair:
        await pair.agent.send_chunk("session-1", "Hello, ", message_id="m1")
        await pair.agent.session_update(
            SessionNotification(
                session_id="session-1",
                update=AgentMessageChunkSessionUpdate(
                    content=TextContentBlock(text="Hello, "), message_id="m1"
                ),
            )
        )
        await _wait_for(client, 2)
        fast, typed = (m for m in pair.agent_wire.sent if m.get("method") == "session/update")
    assert fast == typed
    assert client.updates[0] == client.updates[1]
    update = client.updates[0].update
    assert isinstance(update, AgentMessageChunkSessionUpdate)
    assert update.content == TextContentBlock(text="Hello, ")
    assert update.message_id == "m1"


@pytest.mark.parametrize(
    ("kind", "variant"),
    [
        ("agent_message_chunk", AgentMessageChunkSessionUpdate),
        ("agent_thought_chunk", AgentThoughtChunkSessionUpdate),
        ("user_message_chunk", UserMessageChunkSessionUpdate),
    ],
)
async def test_each_chunk_kind_arrives_as_its_variant(kind: ChunkKind, variant: type) -> None:
    client = MinimalClient()
    async with connect(MinimalAgent(), client) as pair:
        await pair.agent.send_chunk("session-1", "thinking", kind=kind)
        await _wait_for(client, 1)
    update = client.updates[0].update
    assert type(update) is variant
    assert update.content == TextContentBlock(text="thinking")


async def test_a_content_block_is_sent_as_is_and_no_message_id_is_left_out() -> None:
    client = MinimalClient()
    image = ImageContentBlock(data="iVBORw0KGgo=", mime_type="image/png")
    async with connect(MinimalAgent(), client) as pair:
        await pair.agent.send_chunk("session-1", image)
        await _wait_for(client, 1)
        sent = next(m for m in pair.agent_wire.sent if m.get("method") == "session/update")
    assert sent["params"]["update"] == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
    }
    assert client.updates[0].update.content == image  # type: ignore[union-attr]


async def test_an_unknown_kind_is_refused_before_anything_is_sent() -> None:
    client = MinimalClient()
    async with connect(MinimalAgent(), client) as pair:
        with pytest.raises(ValueError, match="tool_call"):
            await pair.agent.send_chunk("session-1", "x", kind="tool_call")  # type: ignore[arg-type]
        assert not [m for m in pair.agent_wire.sent if m.get("method") == "session/update"]


async def test_content_that_is_not_a_block_is_refused_with_a_clear_error() -> None:
    client = MinimalClient()
    async with connect(MinimalAgent(), client) as pair:
        with pytest.raises(TypeError, match="str or a content block model, not dict"):
            await pair.agent.send_chunk("session-1", {"type": "text", "text": "x"})  # type: ignore[arg-type]
        assert not [m for m in pair.agent_wire.sent if m.get("method") == "session/update"]

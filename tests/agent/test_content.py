"""Prompt content: one mapping both ways, and only advertised block types are accepted."""

from __future__ import annotations

import base64

import pytest
from _agent_support import FULL, scripted, serve

from accord.engines import (
    AudioPart,
    BlobResourcePart,
    EngineCapabilities,
    ImagePart,
    ResourceLinkPart,
    TextPart,
    TextResourcePart,
    accepted_block_types,
    check_prompt,
    part_from_block,
    part_to_block,
    prompt_parts,
)
from accord.errors import InvalidParams, RequestError
from accord.schema import (
    Annotations,
    AudioContentBlock,
    BlobResourceContents,
    ContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    ResourceLinkContentBlock,
    TextContentBlock,
    TextResourceContents,
)
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine

PNG = b"\x89PNG\r\n\x1a\n\x00\x01binary\xff"
WAV = b"RIFF\x00\x00WAVE\xfe"
B64_PNG = base64.b64encode(PNG).decode()
B64_WAV = base64.b64encode(WAV).decode()

BLOCKS: list[ContentBlock] = [
    TextContentBlock(text="hello ✓", annotations=Annotations(priority=0.5)),
    ImageContentBlock(data=B64_PNG, mime_type="image/png", uri="file:///a.png"),
    AudioContentBlock(data=B64_WAV, mime_type="audio/wav"),
    ResourceLinkContentBlock(uri="file:///w/a.py", name="a.py", mime_type="text/x-python", size=12),
    ResourceContentBlock(
        resource=TextResourceContents(
            uri="file:///w/b.py", text="print(1)\n", mime_type="text/x-python"
        )
    ),
    ResourceContentBlock(resource=BlobResourceContents(uri="file:///w/c.bin", blob=B64_PNG)),
]


def test_parts_carry_text_literally_and_binaries_as_bytes() -> None:
    parts = prompt_parts(BLOCKS)
    assert parts == (
        TextPart(text="hello ✓", annotations=Annotations(priority=0.5)),
        ImagePart(data=PNG, mime_type="image/png", uri="file:///a.png"),
        AudioPart(data=WAV, mime_type="audio/wav"),
        ResourceLinkPart(uri="file:///w/a.py", name="a.py", mime_type="text/x-python", size=12),
        TextResourcePart(uri="file:///w/b.py", text="print(1)\n", mime_type="text/x-python"),
        BlobResourcePart(uri="file:///w/c.bin", data=PNG),
    )


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.type)
def test_the_mapping_round_trips_on_the_wire(block: ContentBlock) -> None:
    assert part_to_block(part_from_block(block)).to_wire() == block.to_wire()


def test_binary_parts_become_base64_on_the_wire() -> None:
    wire = part_to_block(ImagePart(data=b"\x00\x01\x02", mime_type="image/gif")).to_wire()
    assert wire == {"type": "image", "data": "AAEC", "mimeType": "image/gif"}


def test_accepted_types_follow_the_engine() -> None:
    assert accepted_block_types(EngineCapabilities()) == {"text", "resource_link"}
    assert accepted_block_types(EngineCapabilities(image=True)) == {
        "text",
        "resource_link",
        "image",
    }
    assert accepted_block_types(FULL) == {"text", "resource_link", "image", "audio", "resource"}


@pytest.mark.parametrize(("index", "name"), [(1, "image"), (2, "audio"), (4, "resource")])
def test_an_undeclared_type_is_refused_with_a_descriptive_message(index: int, name: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        check_prompt([BLOCKS[0], BLOCKS[index]], EngineCapabilities())
    assert f"'{name}'" in caught.value.message
    assert "accepts: resource_link, text" in caught.value.message
    assert caught.value.data["errors"][0]["field"] == "prompt[1]"


def test_bad_base64_is_refused() -> None:
    bad = ImageContentBlock(data="not base64!", mime_type="image/png")
    with pytest.raises(InvalidParams, match=r"prompt\[0\]\.data is not valid base64"):
        check_prompt([bad], FULL)


pytestmark_anyio = pytest.mark.anyio


@pytestmark_anyio
async def test_the_engine_gets_every_declared_type_with_bytes_inside() -> None:
    engine = ScriptedEngine([[Say("seen")]], capabilities=FULL)
    async with serve(engine) as h:
        session_id = await h.new_session()
        await h.prompt(session_id, BLOCKS)
        assert engine.session(session_id).prompt_parts == [prompt_parts(BLOCKS)]
        capabilities = h.conn.agent_capabilities
        assert capabilities is not None
        assert capabilities["promptCapabilities"] == {
            "image": True,
            "audio": True,
            "embeddedContext": True,
        }


@pytestmark_anyio
async def test_a_prompt_with_undeclared_content_is_refused_and_leaves_no_trace() -> None:
    store = MemorySessionStore()
    engine = scripted([Say("never")], capabilities=EngineCapabilities(image=True))
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        h.client.clear()
        with pytest.raises(RequestError) as caught:
            await h.prompt(session_id, [BLOCKS[0], BLOCKS[1], BLOCKS[2]])
        assert caught.value.code == -32602
        assert "'audio'" in caught.value.message
        assert await store.read_events(session_id) == []
        assert h.client.notifications == []
        assert engine.session(session_id).prompts == []
        capabilities = h.conn.agent_capabilities
        assert capabilities is not None
        assert capabilities["promptCapabilities"] == {
            "image": True,
            "audio": False,
            "embeddedContext": False,
        }

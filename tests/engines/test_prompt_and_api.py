"""Prompt conversion, tool behaviour helpers, and the public surface of the package."""

from __future__ import annotations

import base64
import importlib

import pytest
from _engines_support import ModelCounter, Turn, opened, run_turn
from pydantic_ai import Agent
from pydantic_ai.messages import BinaryContent

import accord.engines
import accord.engines.pydantic_ai as adapter
from accord.engines.pydantic_ai import (
    RUN_METADATA_KEY,
    PydanticAIEngine,
    ToolBehaviour,
    ToolCallInput,
    path_locations,
    path_title,
    replace_diff,
    user_content,
)
from accord.schema import (
    AudioContentBlock,
    BlobResourceContents,
    DiffToolCallContent,
    ImageContentBlock,
    ResourceContentBlock,
    ResourceLinkContentBlock,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
)
from accord.testing import FakeOpenAIServer, ScriptedReply

PNG = b"\x89PNG\r\n\x1a\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_every_block_type_converts() -> None:
    content = user_content(
        [
            TextContentBlock(text="look"),
            ImageContentBlock(data=b64(PNG), mime_type="image/png"),
            AudioContentBlock(data=b64(b"RIFF"), mime_type="audio/wav"),
            ResourceLinkContentBlock(uri="file:///p/a.py", name="a.py"),
            ResourceContentBlock(
                resource=TextResourceContents(uri="file:///p/b.py", text="print(1)")
            ),
            ResourceContentBlock(
                resource=BlobResourceContents(uri="file:///p/c.bin", blob=b64(b"\0"))
            ),
        ]
    )
    assert isinstance(content, list)
    text, image, audio, link, resource, blob = content
    assert text == "look"
    assert image == BinaryContent(data=PNG, media_type="image/png")
    assert audio == BinaryContent(data=b"RIFF", media_type="audio/wav")
    assert link == "[a.py](file:///p/a.py)"
    assert resource == '<resource uri="file:///p/b.py">\nprint(1)\n</resource>'
    assert blob == BinaryContent(data=b"\0", media_type="application/octet-stream")


def test_a_single_text_block_is_a_plain_string() -> None:
    assert user_content([TextContentBlock(text="hi")]) == "hi"


def test_behaviour_helpers() -> None:
    call = ToolCallInput(
        name="edit",
        args={"path": "src/a.py", "line": 4, "old_text": "a", "new_text": "b"},
        cwd="/w",
    )
    assert path_title("Edit")(call) == "Edit src/a.py"
    assert path_locations(line_arg="line")(call) == (ToolCallLocation(path="/w/src/a.py", line=4),)
    assert replace_diff()(call) == DiffToolCallContent(
        path="/w/src/a.py", old_text="a", new_text="b"
    )
    assert replace_diff(old_arg=None)(call) == DiffToolCallContent(
        path="/w/src/a.py", old_text=None, new_text="b"
    )
    empty = ToolCallInput(name="edit", args={"path": 3}, cwd="/w")
    assert path_title("Edit")(empty) == "Edit"
    assert path_locations()(empty) == ()
    assert replace_diff()(empty) is None
    assert ToolBehaviour().title(empty) == "edit"


@pytest.mark.anyio
async def test_runs_carry_session_turn_and_mode_metadata() -> None:
    seen: list[object] = []
    agent: Agent[None, str] = Agent()

    @agent.instructions
    def capture(ctx: object) -> str:
        seen.append(getattr(ctx, "metadata", None))
        return "Be brief."

    with FakeOpenAIServer([ScriptedReply(text=["ok"])]) as server:
        engine = PydanticAIEngine(agent, models=[ModelCounter().choice(server, "m")])
        async with opened(engine, session_id="s-1") as session:
            turn = Turn(mode_id="plan")
            await run_turn(session, turn=turn)
    [metadata] = seen
    assert isinstance(metadata, dict)
    assert metadata[RUN_METADATA_KEY] == {
        "session_id": "s-1",
        "turn_id": turn.context.turn_id,
        "mode_id": "plan",
    }


@pytest.mark.parametrize("module", [accord.engines, adapter])
def test_all_is_sorted_complete_and_public(module: object) -> None:
    names = getattr(module, "__all__")  # noqa: B009 - `object` has no `__all__`
    assert list(names) == sorted(names, key=lambda n: (not n.isupper(), n))
    assert all(not n.startswith("_") for n in names)
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, type(accord))
        and name != "annotations"
    }
    assert public == set(names)


@pytest.mark.subprocess
def test_importing_accord_engines_does_not_import_pydantic_ai() -> None:
    import subprocess
    import sys

    code = "import sys, accord.engines; print('pydantic_ai' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
    assert importlib.import_module("accord.engines.pydantic_ai") is adapter

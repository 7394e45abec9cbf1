"""The prompt: multi-line input, history, slash commands, @file mentions, images, Ctrl-C."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from _tui_support import SIZE, RawAgent, chat_app, until
from textual import events

from accord.schema import (
    AvailableCommand,
    AvailableCommandsUpdateSessionUpdate,
    ImageContentBlock,
    PromptCapabilities,
    ResourceContentBlock,
    ResourceLinkContentBlock,
    TextContentBlock,
    TextResourceContents,
)
from accord.tui import ChatApp
from accord.tui._prompt import PromptArea

pytestmark = pytest.mark.anyio

COMMANDS = AvailableCommandsUpdateSessionUpdate(
    available_commands=[
        AvailableCommand(name="review", description="Review the diff"),
        AvailableCommand(name="test", description="Run the tests"),
        AvailableCommand(name="explain", description="Explain the code"),
    ]
)
#: The smallest valid PNG (1x1).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def texts(agent: RawAgent) -> list[str]:
    return [
        "".join(b.text for b in p.prompt if isinstance(b, TextContentBlock)) for p in agent.prompts
    ]


def idle(app: ChatApp) -> bool:
    pane = app.active_pane
    return pane is not None and pane.session.state == "idle"


async def test_multi_line_prompts_and_history(tmp_path: Path) -> None:
    agent = RawAgent()
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        area = app.query_one(PromptArea)
        await pilot.press(*"one", "ctrl+j", *"two", "enter")
        await until(
            pilot, lambda: len(agent.prompts) == 1 and app.active_pane.session.state == "idle"
        )  # type: ignore[union-attr]
        await pilot.press(*"three", "enter")
        await until(
            pilot, lambda: len(agent.prompts) == 2 and app.active_pane.session.state == "idle"
        )  # type: ignore[union-attr]
        assert texts(agent) == ["one\ntwo", "three"]
        assert area.text == ""
        await pilot.press(*"draft", "up")
        assert area.text == "three"
        await pilot.press("up")
        assert area.text == "one\ntwo"
        await pilot.press("down")  # a recalled prompt puts the cursor at its end
        assert area.text == "three"
        await pilot.press("down")
        assert area.text == "draft"
        await pilot.press("enter")
        await until(pilot, lambda: len(agent.prompts) == 3)
        assert texts(agent)[-1] == "draft"


async def test_slash_commands_from_the_agent_complete_with_tab(tmp_path: Path) -> None:
    agent = RawAgent([[COMMANDS]])
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        await pilot.press(*"hi", "enter")
        await until(pilot, lambda: app.active_pane.session.view.available_commands)  # type: ignore[union-attr]
        await until(pilot, lambda: app.active_pane.session.state == "idle")  # type: ignore[union-attr]
        area = app.query_one(PromptArea)
        await pilot.press("/")
        assert [c.text for c in area.completions] == ["/review ", "/test ", "/explain "]
        await pilot.press(*"ex")
        assert area.completions[0].text == "/explain "
        await pilot.press("tab")
        assert area.text == "/explain "
        assert area.completions == []
        await pilot.press(*"main.py", "enter")
        await until(pilot, lambda: len(agent.prompts) == 2)
        assert texts(agent)[-1] == "/explain main.py"


async def test_file_mentions_complete_fuzzily_and_go_as_resource_links(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "parser.py").write_text("def parse(): ...\n")
    (tmp_path / "README.md").write_text("hello\n")
    agent = RawAgent()
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        area = app.query_one(PromptArea)
        await pilot.press(*"look at @prs")
        await until(pilot, lambda: area.completions)
        assert area.completions[0].text == "@src/parser.py "
        await pilot.press("tab", *"please", "enter")
        await until(pilot, lambda: agent.prompts)
    (prompt,) = agent.prompts
    text, link = prompt.prompt
    assert isinstance(text, TextContentBlock) and text.text == "look at @src/parser.py please"
    assert isinstance(link, ResourceLinkContentBlock)
    assert link.uri == (tmp_path / "src" / "parser.py").resolve().as_uri()
    assert link.name == "src/parser.py"


async def test_mentions_are_embedded_when_the_agent_accepts_embedded_context(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("remember this\n")
    outside = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    outside.write_text("not yours\n")
    agent = RawAgent(prompt_capabilities=PromptCapabilities(embedded_context=True))
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        await pilot.press(*f"@notes.txt and @../{outside.name}", "escape", "enter")
        await until(pilot, lambda: agent.prompts)
    (prompt,) = agent.prompts
    assert len(prompt.prompt) == 2  # the file outside the session's directory is not sent
    embedded = prompt.prompt[1]
    assert isinstance(embedded, ResourceContentBlock)
    assert isinstance(embedded.resource, TextResourceContents)
    assert embedded.resource.text == "remember this\n"


async def test_a_pasted_image_path_is_sent_as_an_image_only_if_the_agent_takes_images(
    tmp_path: Path,
) -> None:
    image = tmp_path / "shot.png"
    image.write_bytes(PNG)
    refusing = RawAgent()
    app = chat_app(refusing, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        area = app.query_one(PromptArea)
        area.post_message(events.Paste(str(image)))
        await pilot.pause()
        assert area.text == ""  # not pasted as text either
        await pilot.press(*"see", "enter")
        await until(pilot, lambda: refusing.prompts)
    assert all(not isinstance(b, ImageContentBlock) for b in refusing.prompts[0].prompt)

    taking = RawAgent(prompt_capabilities=PromptCapabilities(image=True))
    app = chat_app(taking, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        area = app.query_one(PromptArea)
        area.post_message(events.Paste(f"'{image}'"))
        await pilot.pause()
        assert "shot.png" in str(app.query_one("#attachments").render())
        await pilot.press(*"see", "enter")
        await until(pilot, lambda: taking.prompts)
    sent = taking.prompts[0].prompt[-1]
    assert isinstance(sent, ImageContentBlock)
    assert base64.b64decode(sent.data) == PNG and sent.mime_type == "image/png"


async def test_ctrl_c_cancels_the_turn_and_a_second_one_quits(tmp_path: Path) -> None:
    agent = RawAgent([["wait_cancel"]])
    app = chat_app(agent, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.active_pane is not None)
        await pilot.press(*"work", "enter")
        await until(pilot, lambda: app.active_pane.session.state == "running")  # type: ignore[union-attr]
        await pilot.press("ctrl+c")
        await until(pilot, lambda: agent.cancelled.is_set())
        await until(pilot, lambda: app.last_stop_reason)
        assert app.last_stop_reason == {"raw-1": "cancelled"}
        assert app.is_running
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running)

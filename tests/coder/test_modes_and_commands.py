from __future__ import annotations

import pytest

from accord.coder import COMMANDS, DEFAULT_MODE_ID, MODES, needs_approval, tool_allowed
from accord.coder._commands import Command, decide, parse_command
from accord.coder._modes import (
    EDIT_FILE,
    GREP,
    MUTATING_TOOLS,
    READ_FILE,
    READ_ONLY_TOOLS,
    RUN_COMMAND,
    WRITE_FILE,
    mode_spec,
    session_modes,
)
from accord.schema import ImageContentBlock, TextContentBlock

MCP_TOOL = "github_create_issue"


@pytest.mark.parametrize(
    ("mode", "tool", "offered", "asks"),
    [
        ("ask", READ_FILE, True, False),
        ("ask", GREP, True, False),
        ("ask", EDIT_FILE, False, False),
        ("ask", WRITE_FILE, False, False),
        ("ask", RUN_COMMAND, False, False),
        ("ask", MCP_TOOL, False, False),
        ("code", READ_FILE, True, False),
        ("code", EDIT_FILE, True, True),
        ("code", RUN_COMMAND, True, True),
        ("code", MCP_TOOL, True, True),
        ("auto", EDIT_FILE, True, False),
        ("auto", RUN_COMMAND, True, False),
        ("auto", MCP_TOOL, True, False),
    ],
)
def test_the_mode_table(mode: str, tool: str, offered: bool, asks: bool) -> None:
    assert tool_allowed(tool, mode) is offered
    assert needs_approval(tool, {}, mode) is asks


def test_every_tool_is_classified_once() -> None:
    assert not READ_ONLY_TOOLS & MUTATING_TOOLS
    for mode in MODES.values():
        assert all(mode.offers_tool(tool) for tool in READ_ONLY_TOOLS)
        assert not any(mode.asks_for(tool) for tool in READ_ONLY_TOOLS)


def test_unknown_or_missing_modes_are_code() -> None:
    assert DEFAULT_MODE_ID == "code"
    assert mode_spec(None).id == "code"
    assert mode_spec("nonsense").id == "code"
    assert [m.id for m in session_modes()] == ["ask", "code", "auto"]
    assert all(m.description for m in session_modes())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/mode ask", Command("mode", "ask")),
        ("  /mode   auto  ", Command("mode", "auto")),
        ("/clear", Command("clear")),
        ("/help me", Command("help", "me")),
        ("/unknown thing", None),
        ("please /clear", None),
        ("", None),
    ],
)
def test_parse_command(text: str, expected: Command | None) -> None:
    assert parse_command([TextContentBlock(text=text)]) == expected


def test_only_a_leading_text_block_can_be_a_command() -> None:
    image = ImageContentBlock(data="AA==", mime_type="image/png")
    assert parse_command([image, TextContentBlock(text="/clear")]) is None
    assert parse_command([]) is None


def test_mode_command_decisions() -> None:
    assert decide(Command("mode", "ask"), "code").switch_mode == "ask"
    assert decide(Command("mode", "ASK"), "code").switch_mode == "ask"
    same = decide(Command("mode", "code"), "code")
    assert same.switch_mode is None and "Already" in same.reply
    unknown = decide(Command("mode", "yolo"), "code")
    assert unknown.switch_mode is None and "Unknown mode 'yolo'" in unknown.reply
    assert decide(Command("mode"), "auto").reply.startswith("The mode is auto")


def test_clear_and_help() -> None:
    clear = decide(Command("clear"), "code")
    assert clear.clear and clear.switch_mode is None
    help_text = decide(Command("help"), "ask").reply
    for command in COMMANDS:
        assert f"/{command.name}" in help_text
    assert "ask (current)" in help_text

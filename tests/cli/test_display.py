"""``Display``: how a turn looks, in process (fast); the real terminal is in the pty tests.

Events are built by folding wire updates through a ``SessionView``, as ``accord run`` gets
them; the output goes to a ``StringIO`` marked as a terminal or not.
"""

from __future__ import annotations

import io

import pyte
import pytest

from accord.cli._display import Display, Style, colour_wanted, command_line_of, unified_diff
from accord.client import SessionView, TurnFinished
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    CompactionSummaryChunkSessionUpdate,
    CompactionUpdateSessionUpdate,
    ContentToolCallContent,
    DiffToolCallContent,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdateSessionUpdate,
    Usage,
)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def fed(display: Display, *updates: object) -> None:
    view = SessionView("s")
    for update in updates:
        display.show(view.apply(update))  # type: ignore[arg-type]


def screen(text: str) -> list[str]:
    shown = pyte.Screen(100, 30)
    pyte.Stream(shown).feed(text.replace("\n", "\r\n"))
    return [line.rstrip() for line in shown.display if line.strip()]


def tool(status: str, **fields: object) -> ToolCallUpdateSessionUpdate:
    return ToolCallUpdateSessionUpdate(tool_call_id="t1", status=status, **fields)  # type: ignore[arg-type]


def test_on_a_terminal_one_tool_call_is_one_line_changing_in_place() -> None:
    out = Terminal()
    display = Display(out, terminal=True, colour=False)
    fed(
        display,
        ToolCallSessionUpdate(tool_call_id="t1", title="Read a.py", kind="read", status="pending"),
        tool("in_progress"),
        tool("completed"),
    )
    display.end()
    assert screen(out.getvalue()) == ["+ read: Read a.py"]  # ASCII marks: not UTF-8
    assert out.getvalue().count("\r\x1b[2K") == 2  # rewritten twice, never a new line


def test_piped_a_tool_call_is_one_line_once_it_ends_with_its_diff() -> None:
    out = io.StringIO()
    display = Display(out, terminal=False, colour=False)
    diff = DiffToolCallContent(path="/p/a.py", old_text="x = 1\n", new_text="x = 2\n")
    fed(
        display,
        ToolCallSessionUpdate(tool_call_id="t1", title="Edit a.py", kind="edit", status="pending"),
        tool("in_progress"),
        tool("completed", content=[diff]),
    )
    assert out.getvalue().splitlines() == [
        "[tool completed] edit: Edit a.py",
        "--- a/p/a.py",
        "+++ b/p/a.py",
        "@@ -1 +1 @@",
        "-x = 1",
        "+x = 2",
    ]


def test_a_failed_call_says_why() -> None:
    out = io.StringIO()
    display = Display(out, terminal=False, colour=False)
    text = TextContentBlock(text="permission denied\nmore")
    fed(
        display,
        ToolCallSessionUpdate(tool_call_id="t1", title="Run ls", kind="execute"),
        tool("failed", content=[ContentToolCallContent(content=text)]),
    )
    assert out.getvalue() == "[tool failed] execute: Run ls: permission denied\n"


def test_the_thinking_block_has_a_clear_end() -> None:
    out = io.StringIO()
    display = Display(out, terminal=False, colour=False)
    fed(
        display,
        AgentThoughtChunkSessionUpdate(content=TextContentBlock(text="hmm")),
        AgentMessageChunkSessionUpdate(content=TextContentBlock(text="Answer.")),
    )
    display.end()
    assert out.getvalue() == "(thinking)\nhmm\n(end of thinking)\nAnswer.\n"
    assert display.final_text == "Answer."


TOKENS = "30 tokens (20 in, 10 out)"
END = f"session s1, {TOKENS}]"


@pytest.mark.parametrize(
    ("stop", "words"),
    [
        ("end_turn", f"[done, session s1, {TOKENS}]"),
        ("max_tokens", f"[stopped: the model reached its output token limit (max_tokens), {END}"),
        ("cancelled", f"[cancelled, session s1, {TOKENS}]"),
        ("refusal", f"[the agent refused the prompt (refusal), {END}"),
    ],
)
def test_the_summary_gives_the_stop_reason_in_words_and_the_usage(stop: str, words: str) -> None:
    display = Display(io.StringIO(), terminal=False, colour=False)
    usage = Usage(total_tokens=30, input_tokens=20, output_tokens=10)
    display.show(TurnFinished(stop_reason=stop, usage=usage))  # type: ignore[arg-type]
    assert display.summary(stop, "s1") == words  # type: ignore[arg-type]


def test_colour_follows_no_color_dumb_terminals_and_pipes() -> None:
    assert colour_wanted(Terminal(), {})
    assert not colour_wanted(Terminal(), {"NO_COLOR": "1"})
    assert colour_wanted(Terminal(), {"NO_COLOR": ""})  # empty: not set, says no-color.org
    assert not colour_wanted(Terminal(), {"TERM": "dumb"})
    assert not colour_wanted(io.StringIO(), {})


def test_a_new_file_diffs_against_dev_null_and_long_diffs_are_cut() -> None:
    created = DiffToolCallContent(path="new.txt", new_text="a\n")
    assert unified_diff(created, Style(False))[:2] == ["--- /dev/null", "+++ new.txt"]
    big = DiffToolCallContent(path="b.txt", old_text="", new_text="x\n" * 500)
    lines = unified_diff(big, Style(False), limit=10)
    assert len(lines) == 11 and lines[-1] == "... 493 more lines of diff"


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        ({"command": "ls -la"}, "ls -la"),
        ({"command": ["rm", "-rf", "my dir"]}, "rm -rf 'my dir'"),
        ({"command": "git", "args": ["commit", "-m", "a b"]}, "git commit -m 'a b'"),
        ({"path": "x"}, None),
        ("ls", None),
    ],
)
def test_the_command_line_of_a_tool_call(raw: object, line: str | None) -> None:
    assert command_line_of(raw) == line


def test_accord_run_prints_one_line_when_a_compaction_ends() -> None:
    out = io.StringIO()
    display = Display(out, terminal=False, colour=False)
    fed(
        display,
        CompactionUpdateSessionUpdate(compaction_id="c", status="in_progress"),
        CompactionSummaryChunkSessionUpdate(
            compaction_id="c", content=TextContentBlock(text="the summary")
        ),
        CompactionUpdateSessionUpdate(compaction_id="c", status="completed"),
        CompactionUpdateSessionUpdate(compaction_id="d", status="in_progress"),
        CompactionUpdateSessionUpdate(compaction_id="d", status="failed", error="down\x1b[2J"),
    )
    display.end()
    assert out.getvalue().splitlines() == [
        "[compaction] earlier turns summarised",
        "[compaction failed] down^[[2J; the history is kept as it was",
    ]

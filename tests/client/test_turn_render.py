"""Turn events as text: one line per event, and a whole turn printed readably."""

from __future__ import annotations

from _client_agents import text_content

import accord.client
from accord.client import (
    Cancel,
    CommandsUpdated,
    ConfigUpdated,
    ModeUpdated,
    OtherUpdate,
    PermissionRequested,
    PermissionResolved,
    PlanUpdated,
    Select,
    TextDelta,
    ThoughtDelta,
    TitleUpdated,
    ToolCallAdded,
    ToolCallState,
    ToolCallUpdated,
    TurnEvent,
    TurnFinished,
    TurnRenderer,
    UsageUpdated,
    UserMessageDelta,
    render_event,
)
from accord.schema import (
    AvailableCommand,
    BooleanSessionConfigOption,
    Cost,
    DiffToolCallContent,
    ImageContentBlock,
    NoticeSessionUpdate,
    PermissionOption,
    PlanEntry,
    SelectSessionConfigOption,
    SessionConfigSelectOption,
    TextContentBlock,
    Usage,
)

READ = ToolCallState(tool_call_id="t1", title="Read a.py", kind="read", status="in_progress")
ALLOW = PermissionOption(option_id="y", name="Allow once", kind="allow_once")


def text(value: str) -> TextDelta:
    return TextDelta(text=value, content=TextContentBlock(text=value))


def test_one_line_per_event() -> None:
    diff = DiffToolCallContent(path="/w/a.py", old_text="a", new_text="b")
    edited = ToolCallState(tool_call_id="t2", title="Edit", kind="edit", content=(diff,))
    done = ToolCallState(tool_call_id="t3", title="Run", content=(text_content("ok\nmore"),))
    plan = (
        PlanEntry(content="read", priority="high", status="completed"),
        PlanEntry(content="fix", priority="high", status="in_progress"),
    )
    options = (
        SelectSessionConfigOption(
            id="m",
            name="Model",
            current_value="fast",
            options=[SessionConfigSelectOption(value="fast", name="Fast")],
        ),
        BooleanSessionConfigOption(id="b", name="Brave", current_value=False),
    )
    image = ImageContentBlock(data="aGk=", mime_type="image/png")
    cases: list[tuple[TurnEvent, str]] = [
        (text("Hello"), "Hello"),
        (TextDelta(text="", content=image), "[image]"),
        (TextDelta(text="", content=TextContentBlock(text="")), ""),
        (ThoughtDelta(text="hmm", content=TextContentBlock(text="hmm")), "hmm"),
        (ToolCallAdded(tool_call=READ), "[tool in_progress] read: Read a.py"),
        (
            ToolCallUpdated(tool_call=edited, changed=frozenset({"content"})),
            "[tool pending] edit: Edit (edits /w/a.py)",
        ),
        (
            ToolCallUpdated(tool_call=done, changed=frozenset({"content"})),
            "[tool pending] Run (ok)",
        ),
        (
            ToolCallUpdated(tool_call=READ, changed=frozenset({"status"})),
            "[tool in_progress] read: Read a.py",
        ),
        (
            ToolCallUpdated(
                tool_call=ToolCallState(tool_call_id="t4"), changed=frozenset({"content"})
            ),
            "[tool pending] t4",
        ),
        (PlanUpdated(entries=plan), "[plan 1/2 done] now: fix"),
        (PlanUpdated(entries=plan[:1]), "[plan 1/1 done]"),
        (UsageUpdated(used=50, size=200), "[usage] 50/200 tokens (25%)"),
        (
            UsageUpdated(used=50, size=0, cost=Cost(amount=0.25, currency="USD")),
            "[usage] 50/0 tokens, 0.25 USD",
        ),
        (ModeUpdated(mode_id="code"), "[mode] code"),
        (ConfigUpdated(config_options=options), "[config] Model=fast, Brave=off"),
        (
            CommandsUpdated(commands=(AvailableCommand(name="test", description="t"),)),
            "[commands] /test",
        ),
        (TitleUpdated(title="Fix it", updated_at=None), "[title] Fix it"),
        (TitleUpdated(title=None, updated_at=None), "[title cleared]"),
        (OtherUpdate(update=NoticeSessionUpdate(severity="info", title="x")), "[notice]"),
        (
            PermissionRequested(request_id=1, tool_call=READ, options=(ALLOW,)),
            "[permission?] read: Read a.py (Allow once)",
        ),
        (
            PermissionResolved(request_id=1, decision=Select("y"), option=ALLOW),
            "[permission] Allow once",
        ),
        (
            PermissionResolved(request_id=1, decision=Cancel(), option=None),
            "[permission] cancelled",
        ),
        (TurnFinished(stop_reason="end_turn"), "[end_turn]"),
        (
            TurnFinished(
                stop_reason="max_tokens",
                usage=Usage(total_tokens=9, input_tokens=4, output_tokens=5),
            ),
            "[max_tokens, 9 tokens]",
        ),
        (UserMessageDelta(text="hi", content=TextContentBlock(text="hi")), "hi"),
    ]
    for event, expected in cases:
        assert render_event(event) == expected, event


def test_a_turn_prints_text_inline_and_other_events_on_their_own_lines() -> None:
    renderer = TurnRenderer()
    events: list[TurnEvent] = [
        UserMessageDelta(text="question", content=TextContentBlock(text="question")),
        ThoughtDelta(text="thinking", content=TextContentBlock(text="thinking")),
        text("Let me "),
        text("read.\n"),
        ToolCallAdded(tool_call=READ),
        text("Done"),
        TurnFinished(stop_reason="end_turn"),
    ]
    out = "".join(renderer.render(event) for event in events)
    assert out == (
        "> question\n"
        "(thinking)\nthinking\n"
        "Let me read.\n"
        "[tool in_progress] read: Read a.py\n"
        "Done\n"
        "[end_turn]\n"
    )


def test_thoughts_can_be_left_out() -> None:
    renderer = TurnRenderer(show_thoughts=False)
    thought = ThoughtDelta(text="secret", content=TextContentBlock(text="secret"))
    out = "".join(
        renderer.render(e) for e in (thought, text("answer"), TurnFinished(stop_reason="end_turn"))
    )
    assert out == "answer\n[end_turn]\n"


def test_the_public_surface() -> None:
    names = accord.client.__all__

    def isort_style(name: str) -> tuple[int, str]:  # constants, classes, functions
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert list(names) == sorted(names, key=isort_style)
    assert all(not name.startswith("_") for name in names)
    assert all(hasattr(accord.client, name) for name in names)
    public = {
        name
        for name, value in vars(accord.client).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("accord.client")
    }
    assert public <= set(names)


def test_what_an_agent_wrote_is_rendered_harmless_for_a_terminal() -> None:
    attack = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x1b\\\x1b[2J\x1b[H\x9b31m\x07\u202e\r"
    hostile_call = ToolCallState(
        tool_call_id=f"t{attack}", title=f"Read{attack}\nfake line", kind="read"
    )
    option = PermissionOption(option_id="y", name=f"Allow{attack}", kind="allow_once")
    events: list[TurnEvent] = [
        text(f"reply{attack}\nsecond line"),
        ThoughtDelta(text=f"think{attack}", content=TextContentBlock(text=f"think{attack}")),
        UserMessageDelta(text=f"me{attack}", content=TextContentBlock(text=f"me{attack}")),
        ToolCallAdded(tool_call=hostile_call),
        ToolCallUpdated(tool_call=hostile_call, changed=frozenset({"title"})),
        PlanUpdated(
            entries=(PlanEntry(content=f"fix{attack}", priority="high", status="in_progress"),)
        ),
        ModeUpdated(mode_id=f"code{attack}"),
        TitleUpdated(title=f"title{attack}", updated_at=None),
        PermissionRequested(request_id=1, tool_call=hostile_call, options=(option,)),
        PermissionResolved(request_id=1, decision=Select("y"), option=option),
    ]
    for event in events:
        rendered = render_event(event)
        prose = isinstance(event, TextDelta | ThoughtDelta | UserMessageDelta)
        unsafe = [
            c
            for c in rendered
            if (ord(c) < 0x20 and not (prose and c == "\n"))
            or 0x7F <= ord(c) <= 0x9F
            or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
        ]
        assert unsafe == [], (type(event).__name__, rendered)
        assert "^[" in rendered  # shown, not obeyed
    # Prose keeps its lines; one-line fields cannot pose as several lines.
    assert render_event(events[0]).splitlines()[1] == "second line"
    assert "\n" not in render_event(events[3])
    # The raw text stays on the event.
    assert events[3].tool_call.title == f"Read{attack}\nfake line"  # type: ignore[union-attr]

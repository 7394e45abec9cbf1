"""SessionView folding: message grouping, tool-call upserts and patches, plan, usage, state."""

from __future__ import annotations

import tracemalloc

from _client_agents import chunk, text_content, thought, tool_call, tool_update, user_chunk

from accord.client import (
    CommandsUpdated,
    ConfigUpdated,
    Message,
    ModeUpdated,
    OtherUpdate,
    PlanUpdated,
    SessionView,
    TextDelta,
    ThoughtDelta,
    TitleUpdated,
    ToolCallAdded,
    ToolCallState,
    ToolCallUpdated,
    UsageUpdated,
    UserMessageDelta,
)
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    Annotations,
    AvailableCommand,
    AvailableCommandsUpdateSessionUpdate,
    ConfigOptionUpdateSessionUpdate,
    Cost,
    CurrentModeUpdateSessionUpdate,
    DiffToolCallContent,
    ImageContentBlock,
    NoticeSessionUpdate,
    PlanEntry,
    PlanSessionUpdate,
    SelectSessionConfigOption,
    SessionConfigSelectOption,
    SessionInfoUpdateSessionUpdate,
    SessionUpdate,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallSessionUpdate,
    ToolCallUpdateSessionUpdate,
    UsageUpdateSessionUpdate,
    UserMessageChunkSessionUpdate,
)


def fold(*updates: SessionUpdate) -> SessionView:
    view = SessionView("s")
    for update in updates:
        view.apply(update)
    return view


def texts(view: SessionView) -> list[tuple[str, str | None, str]]:
    return [(m.role, m.message_id, m.text) for m in view.messages]


# --- messages --------------------------------------------------------------------------------


def test_the_echo_of_a_prompt_sent_folds_into_the_local_copy() -> None:
    view = SessionView("s")
    image = ImageContentBlock(data="aGk=", mime_type="image/png")
    view._add_prompt([TextContentBlock(text="Fix it"), image])
    view.apply(user_chunk("Fix it", "u1"))
    view.apply(UserMessageChunkSessionUpdate(content=image, message_id="u1"))
    view.apply(chunk("Done", "a1"))
    assert texts(view) == [("user", "u1", "Fix it"), ("agent", "a1", "Done")]
    assert view.messages[0].content == (TextContentBlock(text="Fix it"), image)


def test_an_echo_that_differs_from_the_prompt_is_a_message_of_its_own() -> None:
    view = SessionView("s")
    view._add_prompt([TextContentBlock(text="/mode ask")])
    view.apply(user_chunk("Switch to ask mode", "u1"))
    view._forget_echo()
    view._add_prompt([TextContentBlock(text="again")])
    view._forget_echo()  # the turn ended without an echo
    view.apply(user_chunk("again", "u2"))
    assert texts(view) == [
        ("user", None, "/mode ask"),
        ("user", "u1", "Switch to ask mode"),
        ("user", None, "again"),
        ("user", "u2", "again"),
    ]


def test_chunks_with_the_same_message_id_form_one_message() -> None:
    view = fold(chunk("Hel", "m1"), chunk("lo", "m1"), chunk("Bye", "m2"))
    assert texts(view) == [("agent", "m1", "Hello"), ("agent", "m2", "Bye")]


def test_a_known_message_id_joins_its_message_even_after_another_one() -> None:
    view = fold(chunk("a", "m1"), chunk("X", "m2"), chunk("b", "m1"))
    assert texts(view) == [("agent", "m1", "ab"), ("agent", "m2", "X")]


def test_chunks_without_id_continue_the_current_message_of_that_role() -> None:
    view = fold(chunk("one "), chunk("two"), thought("hmm"), chunk("three"))
    assert texts(view) == [
        ("agent", None, "one two"),
        ("thought", None, "hmm"),
        ("agent", None, "three"),
    ]


def test_a_tool_call_ends_the_current_message_for_chunks_without_id() -> None:
    view = fold(chunk("before"), tool_call("t1", "Read"), chunk("after"))
    assert texts(view) == [("agent", None, "before"), ("agent", None, "after")]
    kinds = [type(item).__name__ for item in view.timeline]
    assert kinds == ["Message", "ToolCallState", "Message"]


def test_roles_are_kept_apart_for_the_same_message_id() -> None:
    view = fold(user_chunk("question", "m1"), chunk("answer", "m1"))
    assert texts(view) == [("user", "m1", "question"), ("agent", "m1", "answer")]


def test_the_events_carry_the_chunk() -> None:
    view = SessionView("s")
    assert view.apply(chunk("hi", "m")) == TextDelta(
        text="hi", content=TextContentBlock(text="hi"), message_id="m"
    )
    assert isinstance(view.apply(thought("t")), ThoughtDelta)
    assert isinstance(view.apply(user_chunk("u")), UserMessageDelta)


def test_non_text_chunks_are_kept_as_blocks() -> None:
    image = ImageContentBlock(data="aGk=", mime_type="image/png")
    annotated = TextContentBlock(text="!", annotations=Annotations(priority=0.5))
    view = fold(
        chunk("look: "),
        AgentMessageChunkSessionUpdate(content=image),
        AgentMessageChunkSessionUpdate(content=annotated),
        chunk("done"),
    )
    (message,) = view.messages
    assert message.text == "look: !done"
    assert message.content == (
        TextContentBlock(text="look: "),
        image,
        annotated,
        TextContentBlock(text="done"),
    )
    event = SessionView("s").apply(AgentMessageChunkSessionUpdate(content=image))
    assert isinstance(event, TextDelta)
    assert event.text == ""


def test_message_text_is_joined_once_and_kept_as_one_string() -> None:
    message = Message("agent")
    for piece in ("a", "b", "c"):
        message._append(TextContentBlock(text=piece))
    assert message.chunk_count == 3
    assert message.text == "abc"
    assert message.chunk_count == 1  # collapsed after reading
    message._append(TextContentBlock(text="d"))
    assert message.text == "abcd"
    assert "abcd" in repr(message)


def test_agent_text_since_a_message_index() -> None:
    view = fold(chunk("old", "m1"), user_chunk("q", "u"), chunk("new", "m2"), thought("x"))
    assert view.agent_text() == "oldnew"
    assert view.agent_text(2) == "new"


# --- tool calls ------------------------------------------------------------------------------


def test_tool_call_then_updates_patch_only_the_fields_given() -> None:
    view = SessionView("s")
    started = view.apply(
        tool_call(
            "t1",
            "Read app.py",
            kind="read",
            locations=[ToolCallLocation(path="/w/app.py", line=3)],
            raw_input={"path": "/w/app.py"},
        )
    )
    assert isinstance(started, ToolCallAdded)
    assert started.tool_call.status == "pending"
    updated = view.apply(tool_update("t1", status="in_progress"))
    assert isinstance(updated, ToolCallUpdated)
    assert updated.changed == {"status"}
    state = view.tool_calls["t1"]
    assert state.status == "in_progress"
    assert state.title == "Read app.py"
    assert state.kind == "read"
    assert state.locations == (ToolCallLocation(path="/w/app.py", line=3),)
    assert state.raw_input == {"path": "/w/app.py"}
    # content and locations replace the whole collection
    view.apply(tool_update("t1", content=[text_content("one")]))
    view.apply(tool_update("t1", content=[text_content("two")], locations=[]))
    final = view.apply(tool_update("t1", status="completed", raw_output={"ok": True}))
    assert isinstance(final, ToolCallUpdated)
    assert final.tool_call.text == "two"
    assert final.tool_call.locations == ()
    assert final.tool_call.raw_output == {"ok": True}
    assert final.tool_call.finished


def test_snapshots_in_events_do_not_change_afterwards() -> None:
    view = SessionView("s")
    started = view.apply(tool_call("t1", "Run"))
    view.apply(tool_update("t1", status="completed"))
    assert isinstance(started, ToolCallAdded)
    assert started.tool_call.status == "pending"
    assert view.tool_calls["t1"].status == "completed"


def test_a_repeated_tool_call_is_an_upsert() -> None:
    view = SessionView("s")
    view.apply(tool_call("t1", "Edit", kind="edit", content=[text_content("draft")]))
    event = view.apply(
        ToolCallSessionUpdate(tool_call_id="t1", title="Edit main.py", status="in_progress")
    )
    assert isinstance(event, ToolCallUpdated)
    state = view.tool_calls["t1"]
    assert (state.title, state.kind, state.status) == ("Edit main.py", "edit", "in_progress")
    assert state.text == "draft"  # not carried by the repeat: kept
    assert len(view.tool_calls) == 1
    assert len(view.timeline) == 1


def test_an_update_for_an_unknown_tool_call_creates_it() -> None:
    view = SessionView("s")
    event = view.apply(tool_update("t9", title="Search", kind="search", status="in_progress"))
    assert isinstance(event, ToolCallAdded)
    assert event.tool_call == ToolCallState(
        tool_call_id="t9", title="Search", kind="search", status="in_progress"
    )


def test_tool_call_diffs_and_terminals() -> None:
    diff = DiffToolCallContent(path="/w/a.py", old_text="x", new_text="y")
    terminal = TerminalToolCallContent(terminal_id="term-1")
    view = fold(tool_call("t1", "Edit", kind="edit", content=[diff, terminal, text_content("ok")]))
    state = view.tool_calls["t1"]
    assert state.diffs == (diff,)
    assert state.terminal_ids == ("term-1",)
    assert state.text == "ok"


def test_cancel_marks_unfinished_tool_calls_and_later_updates_still_apply() -> None:
    view = fold(
        tool_call("done", "A", status="completed"),
        tool_call("open", "B", status="in_progress"),
        tool_call("new", "C"),
    )
    view._cancel_unfinished()
    assert {k: v.status for k, v in view.tool_calls.items()} == {
        "done": "completed",
        "open": "cancelled",
        "new": "cancelled",
    }
    view.apply(tool_update("open", status="failed"))
    assert view.tool_calls["open"].status == "failed"


# --- the rest of the state -------------------------------------------------------------------


def test_plan_is_replaced_whole() -> None:
    first = [
        PlanEntry(content="a", priority="high", status="pending"),
        PlanEntry(content="b", priority="low", status="pending"),
    ]
    second = [PlanEntry(content="a", priority="high", status="completed")]
    view = SessionView("s")
    view.apply(PlanSessionUpdate(entries=first))
    event = view.apply(PlanSessionUpdate(entries=second))
    assert event == PlanUpdated(entries=tuple(second))
    assert view.plan == tuple(second)


def test_latest_usage_mode_config_commands_title() -> None:
    option = SelectSessionConfigOption(
        id="model",
        name="Model",
        current_value="fast",
        options=[SessionConfigSelectOption(value="fast", name="Fast")],
    )
    view = SessionView("s")
    view.apply(UsageUpdateSessionUpdate(used=10, size=100))
    usage = view.apply(
        UsageUpdateSessionUpdate(used=20, size=100, cost=Cost(amount=0.5, currency="USD"))
    )
    assert usage == UsageUpdated(used=20, size=100, cost=Cost(amount=0.5, currency="USD"))
    assert (view.usage_used, view.usage_size) == (20, 100)
    assert view.usage_cost == Cost(amount=0.5, currency="USD")
    assert view.apply(CurrentModeUpdateSessionUpdate(current_mode_id="code")) == ModeUpdated(
        mode_id="code"
    )
    assert view.current_mode_id == "code"
    assert isinstance(
        view.apply(ConfigOptionUpdateSessionUpdate(config_options=[option])), ConfigUpdated
    )
    assert view.config_options == (option,)
    command = AvailableCommand(name="test", description="run the tests")
    event = view.apply(AvailableCommandsUpdateSessionUpdate(available_commands=[command]))
    assert event == CommandsUpdated(commands=(command,))
    view.apply(SessionInfoUpdateSessionUpdate(title="Fix bug", updated_at="2026-01-01T00:00:00Z"))
    event = view.apply(SessionInfoUpdateSessionUpdate(title=None))
    assert event == TitleUpdated(title=None, updated_at="2026-01-01T00:00:00Z")
    assert view.updates_applied == 7


def test_updates_the_view_does_not_model_are_reported() -> None:
    notice = NoticeSessionUpdate(severity="info", title="heads up")
    assert SessionView("s").apply(notice) == OtherUpdate(update=notice)


def test_repr() -> None:
    assert "messages=1" in repr(fold(chunk("x")))


# --- cost ------------------------------------------------------------------------------------


def test_ten_thousand_chunk_session_is_small() -> None:
    """A 10,000-event session (mostly short chunks) costs little more than its text."""
    updates: list[SessionUpdate] = []
    for turn in range(100):
        updates.append(user_chunk(f"question {turn}", f"u{turn}"))
        updates.append(tool_call(f"t{turn}", "Read", status="completed"))
        updates.extend(chunk("word ", f"a{turn}") for _ in range(98))
    tracemalloc.start()
    try:
        view = SessionView("s")
        before = tracemalloc.get_traced_memory()[0]
        for update in updates:
            view.apply(update)
        _ = [m.text for m in view.messages]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert view.updates_applied == 10_000
    assert len(view.messages) == 200
    assert after - before < 2_000_000


def test_accord_s_cancelled_marker_shows_a_tool_call_cancelled() -> None:
    marked = ToolCallUpdateSessionUpdate(
        tool_call_id="t1", meta={"accord": {"status": "cancelled"}}
    )
    view = fold(tool_call("t1", "Run", "execute", status="in_progress"), marked)
    assert view.tool_calls["t1"].status == "cancelled"
    assert view.tool_calls["t1"].finished
    # as accord sends it (issue 26): the v1 status failed, the marker saying cancelled
    ended = ToolCallUpdateSessionUpdate(
        tool_call_id="t1", status="failed", meta={"accord": {"status": "cancelled"}}
    )
    view = fold(tool_call("t1", "Run", "execute", status="in_progress"), ended)
    assert view.tool_calls["t1"].status == "cancelled"
    assert view.tool_calls["t1"].finished

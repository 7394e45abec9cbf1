"""One sample of every event kind, stuffed with secrets, paths and URLs (for privacy tests)."""

from __future__ import annotations

from accord.engines import (
    ROOT_AGENT_ID,
    BudgetWarning,
    CommandsChanged,
    CompactionChanged,
    CompactionSummaryAdded,
    ConfigChanged,
    Event,
    MessagesCompacted,
    ModeChanged,
    ModelCallEnded,
    ModelCallStarted,
    PermissionPending,
    PlanChanged,
    StateSnapshot,
    SubAgentStarted,
    SubAgentStopped,
    TextChunk,
    ThinkingChunk,
    TitleChanged,
    ToolCallEnded,
    ToolCallProgress,
    ToolCallStarted,
    TurnCompleted,
    TurnError,
    UsageReported,
    UserMessageChunk,
)
from accord.events import Envelope, stamp
from accord.schema import (
    Annotations,
    AvailableCommand,
    BooleanSessionConfigOption,
    ContentToolCallContent,
    Cost,
    DiffToolCallContent,
    ImageContentBlock,
    PermissionOption,
    PlanEntry,
    ResourceLinkContentBlock,
    SelectSessionConfigOption,
    SessionConfigSelectOption,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
)

SECRET_TEXT = "the launch code is 0000-SECRET-TEXT"
SECRET_PROMPT = "please read my diary SECRET-PROMPT"
SECRET_REASONING = "I should not reveal SECRET-REASONING"
SECRET_PATH = "/home/alice/.ssh/id_secret_path"
SECRET_URL = "https://internal.example.com/secret-url?token=sk-live-123"
SECRET_INPUT = "sk-live-SECRET-INPUT"
SECRET_OUTPUT = "SECRET-OUTPUT-contents of the file"
SECRET_ERROR = "password=hunter2 SECRET-ERROR"
SECRET_TITLE = "Refactor alice's SECRET-TITLE"
SECRET_PLAN = "exfiltrate SECRET-PLAN"
SECRET_STATE = "SECRET-STATE history"

SECRETS = (
    SECRET_TEXT,
    SECRET_PROMPT,
    SECRET_REASONING,
    SECRET_PATH,
    SECRET_URL,
    SECRET_INPUT,
    SECRET_OUTPUT,
    SECRET_ERROR,
    SECRET_TITLE,
    SECRET_PLAN,
    SECRET_STATE,
    "SECRET",
    "alice",
    "hunter2",
    "sk-live",
    "example.com",
    "/home",
)

_SELECT = SelectSessionConfigOption(
    id="model",
    name="Model",
    current_value="fast",
    options=[
        SessionConfigSelectOption(value="fast", name="Fast"),
        SessionConfigSelectOption(value="smart", name="Smart", description=SECRET_TEXT),
    ],
)
_BOOLEAN = BooleanSessionConfigOption(id="yolo", name="Auto-approve", current_value=False)


def sample_events() -> list[Event]:
    """Return one event of every kind (some kinds twice, to cover variants)."""
    return [
        UserMessageChunk(message_id="m-user", content=TextContentBlock(text=SECRET_PROMPT)),
        UserMessageChunk(
            message_id="m-user",
            content=ResourceLinkContentBlock(uri=f"file://{SECRET_PATH}", name=SECRET_PATH),
        ),
        TextChunk(
            message_id="m-1",
            content=TextContentBlock(text=SECRET_TEXT, annotations=Annotations(priority=0.5)),
        ),
        TextChunk(
            message_id="m-1",
            content=ImageContentBlock(data="aGVsbG8=", mime_type="image/png", uri=SECRET_URL),
        ),
        ThinkingChunk(message_id="m-2", content=TextContentBlock(text=SECRET_REASONING)),
        ToolCallStarted(
            tool_call_id="call-1",
            title=f"Edit {SECRET_PATH}",
            tool_kind="edit",
            content=(
                DiffToolCallContent(path=SECRET_PATH, old_text=SECRET_TEXT, new_text=SECRET_OUTPUT),
            ),
            locations=(ToolCallLocation(path=SECRET_PATH, line=7),),
            raw_input={"path": SECRET_PATH, "api_key": SECRET_INPUT, "n": [1, 2.5, None, True]},
            name="edit_file",
        ),
        ToolCallStarted(
            tool_call_id="call-2", title=SECRET_URL, tool_kind="fetch", status="in_progress"
        ),
        ToolCallProgress(
            tool_call_id="call-1",
            status="in_progress",
            title=f"Editing {SECRET_PATH}",
            tool_kind="edit",
            content=(TerminalToolCallContent(terminal_id="term-1"),),
            locations=(ToolCallLocation(path=SECRET_PATH),),
            raw_input={"url": SECRET_URL},
        ),
        ToolCallProgress(tool_call_id="call-2", content=()),
        ToolCallEnded(
            tool_call_id="call-1",
            status="completed",
            title=SECRET_TITLE,
            content=(ContentToolCallContent(content=TextContentBlock(text=SECRET_OUTPUT)),),
            locations=(ToolCallLocation(path=SECRET_PATH, line=1),),
            raw_output={"stdout": SECRET_OUTPUT},
        ),
        ToolCallEnded(tool_call_id="call-2", status="failed"),
        PlanChanged(
            entries=(
                PlanEntry(content=SECRET_PLAN, priority="high", status="in_progress"),
                PlanEntry(content=SECRET_PATH, priority="low", status="pending"),
            )
        ),
        PermissionPending(
            tool_call_id="call-1",
            options=(
                PermissionOption(option_id="allow", name=f"Allow {SECRET_PATH}", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ),
        ),
        BudgetWarning(resource="tokens", used=90_000.0, limit=100_000.0),
        ModeChanged(mode_id="architect"),
        ConfigChanged(config_options=(_SELECT, _BOOLEAN)),
        CommandsChanged(
            commands=(AvailableCommand(name="web", description=f"search {SECRET_URL}"),)
        ),
        TitleChanged(title=SECRET_TITLE),
        TitleChanged(title=None),
        UsageReported(used=1200, size=200_000),
        UsageReported(used=1300, size=200_000, cost=Cost(amount=0.25, currency="USD")),
        CompactionChanged(compaction_id="cp-1", message_id="m-cp", status="in_progress"),
        CompactionSummaryAdded(
            compaction_id="cp-1", content=TextContentBlock(text=f"{SECRET_PROMPT} {SECRET_PATH}")
        ),
        CompactionChanged(
            compaction_id="cp-1",
            message_id="m-cp",
            status="completed",
            messages_before=40,
            messages_after=3,
        ),
        CompactionChanged(
            compaction_id="cp-2",
            message_id="m-cp2",
            status="failed",
            error=f"{SECRET_ERROR} at {SECRET_URL}",
        ),
        TurnCompleted(stop_reason="end_turn"),
        StateSnapshot(state={"messages": [SECRET_STATE, SECRET_PROMPT], "path": SECRET_PATH}),
        ModelCallStarted(call_id="mc-1", model="openai:gpt-4o"),
        ModelCallEnded(call_id="mc-1", input_tokens=1000, output_tokens=200),
        ModelCallEnded(call_id="mc-2", outcome="error"),
        MessagesCompacted(
            messages_before=40, messages_after=3, tokens_before=90_000, tokens_after=2000
        ),
        TurnError(error_type="PermissionError", message=f"{SECRET_ERROR} at {SECRET_PATH}"),
        SubAgentStarted(sub_agent_id="sub-1", name="researcher", parent_tool_call_id="call-1"),
        SubAgentStopped(sub_agent_id="sub-1", outcome="completed"),
    ]


def envelope(event: Event, seq: int = 1, *, agent_id: str = ROOT_AGENT_ID) -> Envelope:
    """Stamp ``event`` into an envelope of session ``s-1``, epoch 0."""
    return stamp(event, session_id="s-1", seq=seq, epoch=0, turn_id="t-1", agent_id=agent_id)

"""Decoding is as lenient as the schema says, and no more.

`x-deserialize-default-on-error` fields fall back to their default, `x-deserialize-skip-invalid-
items` lists drop bad items, unknown `ToolKind` values become `other`, open unions keep unknown
variants, and unknown fields and `_meta` survive a round trip.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

import accord.schema as s


def notification(update: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"sessionId": "sess_1", "update": update, **extra}


# --- x-deserialize-default-on-error ---------------------------------------------------------


def test_malformed_optional_field_falls_back_to_its_default() -> None:
    wire = notification(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call_1",
            "title": "Read a file",
            "status": 42,  # malformed: not a ToolCallStatus
            "locations": "nope",  # malformed: not a list
            "_meta": "not an object",
        }
    )
    update = s.SessionNotification.model_validate(wire).update
    assert isinstance(update, s.ToolCallSessionUpdate)
    assert update.status is None
    assert update.locations == []
    assert update.meta is None
    assert update.title == "Read a file"
    # The rest of the message is kept; a non-nullable field is never sent as null.
    assert update.to_wire() == {
        "sessionUpdate": "tool_call",
        "toolCallId": "call_1",
        "title": "Read a file",
        "locations": [],
        "_meta": None,
    }


def test_malformed_capabilities_fall_back_to_defaults() -> None:
    response = s.InitializeResponse.model_validate(
        {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": "yes please",
                "promptCapabilities": ["image"],
                "sessionCapabilities": {"list": {}, "resume": 3},
            },
        }
    )
    caps = response.agent_capabilities
    assert caps.load_session is False
    assert caps.prompt_capabilities == s.PromptCapabilities()
    assert caps.session_capabilities.list == s.SessionListCapabilities()
    assert caps.session_capabilities.resume is None


def test_required_field_is_not_lenient() -> None:
    with pytest.raises(ValidationError):
        s.SessionNotification.model_validate(
            notification({"sessionUpdate": "agent_message_chunk", "content": "hi"})
        )
    with pytest.raises(ValidationError):
        s.PromptRequest.model_validate({"sessionId": 5, "prompt": []})


def test_field_without_leniency_still_rejects() -> None:
    # ReadTextFileRequest.line carries no x-deserialize-default-on-error.
    with pytest.raises(ValidationError):
        s.ReadTextFileRequest.model_validate({"sessionId": "s", "path": "/a", "line": "ten"})


# --- x-deserialize-skip-invalid-items -------------------------------------------------------


def test_malformed_list_items_are_dropped() -> None:
    wire = notification(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call_1",
            "title": "Edit",
            "content": [
                {"type": "diff", "path": "/a.py", "newText": "x"},
                {"type": "no-such-content"},
                {"type": "terminal"},  # missing terminalId
                {"type": "terminal", "terminalId": "term_1"},
            ],
            "locations": [{"path": "/a.py", "line": 3}, {"line": 4}, "garbage"],
        }
    )
    update = s.SessionNotification.model_validate(wire).update
    assert isinstance(update, s.ToolCallSessionUpdate)
    assert [type(c) for c in update.content] == [s.DiffToolCallContent, s.TerminalToolCallContent]
    assert update.locations == [s.ToolCallLocation(path="/a.py", line=3)]


def test_list_without_skip_annotation_rejects_bad_items() -> None:
    # PromptRequest.prompt carries no x-deserialize-skip-invalid-items.
    with pytest.raises(ValidationError):
        s.PromptRequest.model_validate(
            {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}, {"type": "bogus"}]}
        )


def test_skip_invalid_sessions_in_list_response() -> None:
    response = s.ListSessionsResponse.model_validate(
        {"sessions": [{"sessionId": "a", "cwd": "/"}, {"cwd": "/"}, 7]}
    )
    assert [info.session_id for info in response.sessions] == ["a"]


# --- x-deserialize-default-on-null -----------------------------------------------------------


def test_null_list_becomes_empty() -> None:
    request = s.NewSessionRequest.model_validate({"cwd": "/p", "mcpServers": None})
    assert request.mcp_servers == []
    terminal = s.CreateTerminalRequest.model_validate(
        {"sessionId": "s", "command": "ls", "args": None, "env": None}
    )
    assert terminal.args == []
    assert terminal.env == []


# --- enums and open unions ---------------------------------------------------------------------


def test_unknown_tool_kind_decodes_as_other() -> None:
    update = s.ToolCallUpdate.model_validate({"toolCallId": "c", "kind": "teleport"})
    assert update.kind == "other"
    call = s.ToolCall.model_validate({"toolCallId": "c", "title": "t", "kind": "teleport"})
    assert call.kind == "other"
    assert s.ToolCall.model_validate({"toolCallId": "c", "title": "t", "kind": "read"}).kind == (
        "read"
    )
    # Not a string at all: the field's own default-on-error applies.
    assert s.ToolCall.model_validate({"toolCallId": "c", "title": "t", "kind": 1}).kind is None


def test_closed_enum_rejects_unknown_values() -> None:
    with pytest.raises(ValidationError):
        s.PromptResponse.model_validate({"stopReason": "bored"})


def test_open_enum_keeps_unknown_values() -> None:
    notice = s.Notice.model_validate({"severity": "catastrophic", "title": "Oh no"})
    assert notice.severity == "catastrophic"


def test_open_union_keeps_unknown_variant() -> None:
    adapter: TypeAdapter[s.StateUpdate] = TypeAdapter(s.StateUpdate)
    state = adapter.validate_python({"state": "_thinking_hard", "depth": 3})
    assert isinstance(state, s.OtherStateUpdate)
    assert state.state == "_thinking_hard"
    assert state.to_wire() == {"state": "_thinking_hard", "depth": 3}
    idle = adapter.validate_python({"state": "idle", "stopReason": "end_turn"})
    assert isinstance(idle, s.IdleStateUpdate)
    assert idle.stop_reason == "end_turn"


def test_untagged_fallback_variants() -> None:
    servers = s.NewSessionRequest.model_validate(
        {
            "cwd": "/p",
            "mcpServers": [
                {"name": "a", "command": "mcp-a", "args": [], "env": []},
                {"type": "stdio", "name": "b", "command": "mcp-b", "args": [], "env": []},
                {"type": "http", "name": "c", "url": "https://c", "headers": []},
            ],
        }
    ).mcp_servers
    assert [type(x) for x in servers] == [s.McpServerStdio, s.McpServerStdio, s.HttpMcpServer]
    methods = s.InitializeResponse.model_validate(
        {
            "protocolVersion": 1,
            "authMethods": [
                {"id": "a", "name": "Agent"},
                {"type": "terminal", "id": "t", "name": "Terminal"},
            ],
        }
    ).auth_methods
    assert [type(m) for m in methods] == [s.AuthMethodAgent, s.TerminalAuthMethod]


# --- discriminated unions -----------------------------------------------------------------------

UPDATES: list[tuple[dict[str, Any], type[s.WireModel]]] = [
    ({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "a"}},
     s.UserMessageChunkSessionUpdate),
    ({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}},
     s.AgentMessageChunkSessionUpdate),
    ({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "a"}},
     s.AgentThoughtChunkSessionUpdate),
    ({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "t"}, s.ToolCallSessionUpdate),
    ({"sessionUpdate": "tool_call_update", "toolCallId": "c"}, s.ToolCallUpdateSessionUpdate),
    ({"sessionUpdate": "plan", "entries": []}, s.PlanSessionUpdate),
    ({"sessionUpdate": "current_mode_update", "currentModeId": "m"},
     s.CurrentModeUpdateSessionUpdate),
    ({"sessionUpdate": "usage_update", "used": 1, "size": 2}, s.UsageUpdateSessionUpdate),
]  # fmt: skip


@pytest.mark.parametrize(("wire", "cls"), UPDATES)
def test_session_update_decodes_to_the_right_class(
    wire: dict[str, Any], cls: type[s.WireModel]
) -> None:
    update = s.SessionNotification.model_validate(notification(wire)).update
    assert type(update) is cls
    assert update.to_wire() == wire


def test_content_blocks_decode_to_the_right_class() -> None:
    adapter: TypeAdapter[s.ContentBlock] = TypeAdapter(s.ContentBlock)
    blocks = {
        "text": ({"type": "text", "text": "a"}, s.TextContentBlock),
        "image": ({"type": "image", "data": "AA==", "mimeType": "image/png"}, s.ImageContentBlock),
        "audio": ({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}, s.AudioContentBlock),
        "resource_link": (
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            s.ResourceLinkContentBlock,
        ),
        "resource": (
            {"type": "resource", "resource": {"uri": "file:///a", "text": "x"}},
            s.ResourceContentBlock,
        ),
    }
    for wire, cls in blocks.values():
        block = adapter.validate_python(wire)
        assert type(block) is cls
        assert isinstance(block, s.WireModel)
        assert block.to_wire() == wire
    embedded = adapter.validate_python(
        {"type": "resource", "resource": {"uri": "u", "blob": "AA=="}}
    )
    assert isinstance(embedded, s.ResourceContentBlock)
    assert isinstance(embedded.resource, s.BlobResourceContents)


def test_variants_subclass_their_payload_def() -> None:
    assert issubclass(s.TextContentBlock, s.TextContent)
    assert issubclass(s.AgentMessageChunkSessionUpdate, s.ContentChunk)
    assert issubclass(s.ToolCallSessionUpdate, s.ToolCall)
    assert issubclass(s.DiffToolCallContent, s.Diff)
    assert issubclass(s.SelectedRequestPermissionOutcome, s.SelectedPermissionOutcome)


def test_unknown_tag_is_rejected_by_closed_union() -> None:
    with pytest.raises(ValidationError):
        s.SessionNotification.model_validate(notification({"sessionUpdate": "teleported"}))


# --- tags, _meta and unknown fields ------------------------------------------------------------


def test_tag_is_always_on_the_wire() -> None:
    assert s.TextContentBlock(text="hi").to_wire() == {"type": "text", "text": "hi"}
    assert s.CancelledRequestPermissionOutcome().to_wire() == {"outcome": "cancelled"}
    # Even when validated without it (the tag has a default).
    assert s.TextContentBlock.model_validate({"text": "hi"}).to_wire() == {
        "type": "text",
        "text": "hi",
    }
    # The wire name of the tag works when constructing, too.
    chunk = s.AgentMessageChunkSessionUpdate.model_validate(
        {"session_update": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    )
    assert chunk.to_wire()["sessionUpdate"] == "agent_message_chunk"


def test_meta_round_trips_on_nested_objects() -> None:
    wire = notification(
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "hi", "_meta": {"a/b": [1, {"c": None}]}},
            "_meta": {"chunk": True},
        },
        _meta={"traceparent": "00-abc-def-01"},
    )
    message = s.SessionNotification.model_validate(wire)
    assert message.meta == {"traceparent": "00-abc-def-01"}
    update = message.update
    assert isinstance(update, s.AgentMessageChunkSessionUpdate)
    assert update.meta == {"chunk": True}
    assert isinstance(update.content, s.TextContentBlock)
    assert update.content.meta == {"a/b": [1, {"c": None}]}
    assert message.to_wire() == wire
    built = s.TextContentBlock(text="x", meta={"k": "v"})
    assert built.to_wire() == {"type": "text", "text": "x", "_meta": {"k": "v"}}


def test_unknown_fields_are_kept() -> None:
    wire = {
        "sessionId": "s",
        "prompt": [{"type": "text", "text": "hi", "x-future": {"deep": [1, 2]}}],
        "futureField": "kept",
    }
    request = s.PromptRequest.model_validate(wire)
    assert request.model_extra == {"futureField": "kept"}
    assert request.to_wire() == wire


def test_null_vs_absent_is_preserved() -> None:
    wire = {"toolCallId": "c", "title": None, "content": None}
    update = s.ToolCallUpdate.model_validate(wire)
    assert update.title is None
    assert update.to_wire() == wire
    assert s.ToolCallUpdate.model_validate({"toolCallId": "c"}).to_wire() == {"toolCallId": "c"}


def test_required_nullable_is_required() -> None:
    # AgentRequest.id is required but may be null.
    with pytest.raises(ValidationError):
        s.AgentRequest.model_validate({"method": "x"})
    assert s.AgentRequest.model_validate({"id": None, "method": "x"}).id is None


def test_integer_bounds() -> None:
    with pytest.raises(ValidationError):
        s.InitializeRequest.model_validate({"protocolVersion": 70000})
    with pytest.raises(ValidationError):
        s.ReadTextFileRequest.model_validate({"sessionId": "s", "path": "/a", "line": -1})


@pytest.mark.parametrize("tag", ["id", "value_id", None])
def test_a_config_value_with_an_unknown_type_and_a_string_is_a_value_id(tag: str | None) -> None:
    wire: dict[str, Any] = {"sessionId": "s", "configId": "mode", "value": "ask"}
    if tag is not None:
        wire["type"] = tag
    request = s.SetSessionConfigOptionRequest.model_validate(wire)
    assert request.value == "ask"
    with pytest.raises(ValidationError):
        s.SetSessionConfigOptionRequest.model_validate({**wire, "value": 3})

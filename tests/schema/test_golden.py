"""Golden wire fixtures: hand-written ACP v1 messages, checked four ways.

1. the fixture is valid against the official schema (the def of its params/result/error);
2. parse -> model -> `to_wire()` gives the fixture back exactly;
3. the method tables agree with the registered model;
4. the whole message passes `WireValidator`.

One file per message shape in `tests/golden/v1/`; every file is registered in `GOLDEN_CASES`
and every case has a file (`test_golden_cases_covered`).
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest
from helpers.wire_schema import WireValidator

import accord.schema as s
from accord.schema.methods import AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden" / "v1"

# name -> (model of the params / result / error, method of the request it belongs to)
GOLDEN_CASES: dict[str, tuple[type[s.WireModel], str | None]] = {
    "initialize_request": (s.InitializeRequest, "initialize"),
    "initialize_response": (s.InitializeResponse, "initialize"),
    "authenticate_request": (s.AuthenticateRequest, "authenticate"),
    "authenticate_response": (s.AuthenticateResponse, "authenticate"),
    "logout_request": (s.LogoutRequest, "logout"),
    "logout_response": (s.LogoutResponse, "logout"),
    "session_new_request": (s.NewSessionRequest, "session/new"),
    "session_new_response": (s.NewSessionResponse, "session/new"),
    "session_load_request": (s.LoadSessionRequest, "session/load"),
    "session_load_response": (s.LoadSessionResponse, "session/load"),
    "session_resume_request": (s.ResumeSessionRequest, "session/resume"),
    "session_resume_response": (s.ResumeSessionResponse, "session/resume"),
    "session_fork_request": (s.ForkSessionRequest, "session/fork"),
    "session_fork_response": (s.ForkSessionResponse, "session/fork"),
    "session_list_request": (s.ListSessionsRequest, "session/list"),
    "session_list_response": (s.ListSessionsResponse, "session/list"),
    "session_close_request": (s.CloseSessionRequest, "session/close"),
    "session_close_response": (s.CloseSessionResponse, "session/close"),
    "session_delete_request": (s.DeleteSessionRequest, "session/delete"),
    "session_delete_response": (s.DeleteSessionResponse, "session/delete"),
    "session_set_mode_request": (s.SetSessionModeRequest, "session/set_mode"),
    "session_set_mode_response": (s.SetSessionModeResponse, "session/set_mode"),
    "session_set_config_option_request_value_id": (
        s.SetSessionConfigOptionRequest,
        "session/set_config_option",
    ),
    "session_set_config_option_request_boolean": (
        s.SetSessionConfigOptionRequest,
        "session/set_config_option",
    ),
    "session_set_config_option_response": (
        s.SetSessionConfigOptionResponse,
        "session/set_config_option",
    ),
    "session_prompt_request": (s.PromptRequest, "session/prompt"),
    "session_prompt_response": (s.PromptResponse, "session/prompt"),
    "session_cancel_notification": (s.CancelNotification, "session/cancel"),
    "cancel_request_notification": (s.CancelRequestNotification, "$/cancel_request"),
    "session_update_user_message_chunk": (s.SessionNotification, "session/update"),
    "session_update_agent_message_chunk": (s.SessionNotification, "session/update"),
    "session_update_agent_thought_chunk": (s.SessionNotification, "session/update"),
    "session_update_tool_call": (s.SessionNotification, "session/update"),
    "session_update_tool_call_update": (s.SessionNotification, "session/update"),
    "session_update_plan": (s.SessionNotification, "session/update"),
    "session_update_plan_update_items": (s.SessionNotification, "session/update"),
    "session_update_plan_update_file": (s.SessionNotification, "session/update"),
    "session_update_plan_update_markdown": (s.SessionNotification, "session/update"),
    "session_update_plan_removed": (s.SessionNotification, "session/update"),
    "session_update_available_commands_update": (s.SessionNotification, "session/update"),
    "session_update_current_mode_update": (s.SessionNotification, "session/update"),
    "session_update_config_option_update": (s.SessionNotification, "session/update"),
    "session_update_session_info_update": (s.SessionNotification, "session/update"),
    "session_update_usage_update": (s.SessionNotification, "session/update"),
    "session_update_notice": (s.SessionNotification, "session/update"),
    "session_update_compaction_update": (s.SessionNotification, "session/update"),
    "session_update_compaction_summary_chunk": (s.SessionNotification, "session/update"),
    "session_update_subagent_update": (s.SessionNotification, "session/update"),
    "session_update_session_message": (s.SessionNotification, "session/update"),
    "session_update_session_message_chunk": (s.SessionNotification, "session/update"),
    "session_request_permission_request": (
        s.RequestPermissionRequest,
        "session/request_permission",
    ),
    "session_request_permission_response_selected": (
        s.RequestPermissionResponse,
        "session/request_permission",
    ),
    "session_request_permission_response_cancelled": (
        s.RequestPermissionResponse,
        "session/request_permission",
    ),
    "fs_read_text_file_request": (s.ReadTextFileRequest, "fs/read_text_file"),
    "fs_read_text_file_response": (s.ReadTextFileResponse, "fs/read_text_file"),
    "fs_write_text_file_request": (s.WriteTextFileRequest, "fs/write_text_file"),
    "fs_write_text_file_response": (s.WriteTextFileResponse, "fs/write_text_file"),
    "terminal_create_request": (s.CreateTerminalRequest, "terminal/create"),
    "terminal_create_response": (s.CreateTerminalResponse, "terminal/create"),
    "terminal_output_request": (s.TerminalOutputRequest, "terminal/output"),
    "terminal_output_response": (s.TerminalOutputResponse, "terminal/output"),
    "terminal_wait_for_exit_request": (s.WaitForTerminalExitRequest, "terminal/wait_for_exit"),
    "terminal_wait_for_exit_response": (s.WaitForTerminalExitResponse, "terminal/wait_for_exit"),
    "terminal_kill_request": (s.KillTerminalRequest, "terminal/kill"),
    "terminal_kill_response": (s.KillTerminalResponse, "terminal/kill"),
    "terminal_release_request": (s.ReleaseTerminalRequest, "terminal/release"),
    "terminal_release_response": (s.ReleaseTerminalResponse, "terminal/release"),
    "elicitation_create_request_form": (s.CreateElicitationRequest, "elicitation/create"),
    "elicitation_create_request_url": (s.CreateElicitationRequest, "elicitation/create"),
    "elicitation_create_response_accept": (s.CreateElicitationResponse, "elicitation/create"),
    "elicitation_create_response_decline": (s.CreateElicitationResponse, "elicitation/create"),
    "elicitation_complete_notification": (
        s.CompleteElicitationNotification,
        "elicitation/complete",
    ),
    "error_method_not_found": (s.Error, None),
    "error_auth_required": (s.Error, None),
    "error_request_cancelled": (s.Error, None),
    "error_parse_error": (s.Error, None),
}

ALL_SPECS = {
    (spec.method, spec.kind): spec
    for table in (AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS)
    for spec in table.values()
}


def load(name: str) -> dict[str, Any]:
    with (GOLDEN_DIR / f"{name}.json").open(encoding="utf-8") as f:
        message: dict[str, Any] = json.load(f)
    return message


def payload(message: dict[str, Any]) -> tuple[str, Any]:
    for key in ("params", "result", "error"):
        if key in message:
            return key, message[key]
    raise AssertionError(f"no payload in {message}")


@pytest.fixture(scope="module")
def validator() -> WireValidator:
    return WireValidator()


def test_golden_cases_covered() -> None:
    files = {p.stem for p in GOLDEN_DIR.glob("*.json")}
    assert files == set(GOLDEN_CASES), (
        f"unregistered files: {sorted(files - set(GOLDEN_CASES))}; "
        f"missing files: {sorted(set(GOLDEN_CASES) - files)}"
    )


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_is_valid_against_the_schema(name: str, validator: WireValidator) -> None:
    model, _ = GOLDEN_CASES[name]
    _, value = payload(load(name))
    validator.check_def(model.__name__, value, context=name)


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_round_trip(name: str) -> None:
    model, _ = GOLDEN_CASES[name]
    _, value = payload(load(name))
    assert model.model_validate(value).to_wire() == value


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_model_matches_method_table(name: str) -> None:
    model, method = GOLDEN_CASES[name]
    message = load(name)
    key, _ = payload(message)
    if key == "error":
        assert model is s.Error
        return
    assert method is not None
    if key == "params":
        assert message["method"] == method
        kind = "request" if "id" in message else "notification"
        assert ALL_SPECS[method, kind].params_type is model
    else:
        assert ALL_SPECS[method, "request"].result_type is model


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_passes_the_wire_validator(name: str) -> None:
    validator = WireValidator()
    _, method = GOLDEN_CASES[name]
    message = load(name)
    if "method" not in message and method is not None:
        validator.note_request({"id": message["id"], "method": method}, "received")
    validator.validate(message, "sent")


def _union_tags(union: Any, tag_attr: str) -> set[str]:
    """The tag values of a discriminated-union alias (`Annotated[A | B, Field(...)]`)."""
    members = typing.get_args(typing.get_args(union)[0])
    return {m.model_fields[tag_attr].default for m in members}


def test_goldens_cover_every_session_update_variant() -> None:
    seen = {
        load(name)["params"]["update"]["sessionUpdate"]
        for name, (model, _) in GOLDEN_CASES.items()
        if model is s.SessionNotification
    }
    assert seen == _union_tags(s.SessionUpdate, "session_update")


def test_goldens_cover_every_content_block_and_tool_call_content() -> None:
    prompt = load("session_prompt_request")["params"]["prompt"]
    assert {b["type"] for b in prompt} == _union_tags(s.ContentBlock, "type")
    resources = [b["resource"] for b in prompt if b["type"] == "resource"]
    assert any("text" in r for r in resources)
    assert any("blob" in r for r in resources)
    tool_call = load("session_update_tool_call")["params"]["update"]
    assert {c["type"] for c in tool_call["content"]} == _union_tags(s.ToolCallContent, "type")


# --- builders: the same messages constructed with Python names ---------------------------


def test_build_agent_message_chunk() -> None:
    notification = s.SessionNotification(
        session_id="sess_8f3a2c",
        update=s.AgentMessageChunkSessionUpdate(
            content=s.TextContentBlock(text="The token expires ")
        ),
    )
    assert notification.to_wire() == load("session_update_agent_message_chunk")["params"]


def test_build_tool_call() -> None:
    update = s.ToolCallSessionUpdate(
        tool_call_id="call_001",
        title="Editing src/login.py",
        kind="edit",
        status="pending",
        content=[
            s.DiffToolCallContent(
                path="/home/user/project/src/login.py",
                old_text="ttl = 60\n",
                new_text="ttl = 3600\n",
            ),
            s.TerminalToolCallContent(terminal_id="term_xyz789"),
            s.ContentToolCallContent(content=s.TextContentBlock(text="Raising the token TTL.")),
        ],
        locations=[
            s.ToolCallLocation(path="/home/user/project/src/login.py", line=42),
            s.ToolCallLocation(path="/home/user/project/src/auth.py"),
        ],
        raw_input={
            "path": "/home/user/project/src/login.py",
            "replace": [["ttl = 60", "ttl = 3600"]],
        },
        meta={"x.example/tool": "str_replace"},
    )
    notification = s.SessionNotification(session_id="sess_8f3a2c", update=update)
    assert notification.to_wire() == load("session_update_tool_call")["params"]


def test_build_permission_outcomes() -> None:
    selected = s.RequestPermissionResponse(
        outcome=s.SelectedRequestPermissionOutcome(option_id="allow-once")
    )
    cancelled = s.RequestPermissionResponse(outcome=s.CancelledRequestPermissionOutcome())
    assert selected.to_wire() == load("session_request_permission_response_selected")["result"]
    assert cancelled.to_wire() == load("session_request_permission_response_cancelled")["result"]


def test_build_config_options() -> None:
    response = s.SetSessionConfigOptionResponse(
        config_options=[
            s.SelectSessionConfigOption(
                id="model",
                name="Model",
                description="The model to use",
                category="model",
                current_value="opus",
                options=[
                    s.SessionConfigSelectOption(value="sonnet", name="Sonnet"),
                    s.SessionConfigSelectOption(
                        value="opus", name="Opus", description="Slower, smarter"
                    ),
                ],
            ),
            s.BooleanSessionConfigOption(
                id="web_search",
                name="Web search",
                current_value=True,
                meta={"x.example/source": "settings"},
            ),
        ]
    )
    assert response.to_wire() == load("session_set_config_option_response")["result"]


def test_build_prompt_response() -> None:
    response = s.PromptResponse(
        stop_reason="end_turn",
        usage=s.Usage(
            total_tokens=1830,
            input_tokens=1500,
            output_tokens=300,
            thought_tokens=30,
            cached_read_tokens=1200,
        ),
    )
    assert response.to_wire() == load("session_prompt_response")["result"]

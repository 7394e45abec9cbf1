"""The WireValidator test helper accepts good traffic and explains bad traffic."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.wire_schema import WireValidator


@pytest.fixture
def validator() -> WireValidator:
    return WireValidator()


def request(id: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def result(id: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": value}


def test_request_and_response_round(validator: WireValidator) -> None:
    validator.validate(request(1, "session/new", {"cwd": "/p", "mcpServers": []}), "sent")
    validator.validate(request(1, "session/new", {"cwd": "/p", "mcpServers": []}), "received")
    validator.validate(result(1, {"sessionId": "s"}), "sent")  # answers the received one
    validator.validate(result(1, {"sessionId": "s"}), "received")  # answers the sent one


def test_bad_params_are_reported(validator: WireValidator) -> None:
    with pytest.raises(AssertionError, match=r"session/new request params.*NewSessionRequest"):
        validator.validate(request(1, "session/new", {"cwd": "/p"}), "sent")
    with pytest.raises(AssertionError, match=r"\['prompt'\]\[0\]"):
        validator.validate(
            request(2, "session/prompt", {"sessionId": "s", "prompt": [{"type": "txt"}]}), "sent"
        )


def test_bad_result_is_reported_through_the_request_id(validator: WireValidator) -> None:
    validator.validate(request("a", "session/prompt", {"sessionId": "s", "prompt": []}), "received")
    with pytest.raises(AssertionError, match=r"session/prompt result.*PromptResponse"):
        validator.validate(result("a", {"stopReason": "bored"}), "sent")


def test_ids_are_typed(validator: WireValidator) -> None:
    validator.validate(request(7, "session/prompt", {"sessionId": "s", "prompt": []}), "received")
    # "7" is another id: the result is not checked against session/prompt.
    validator.validate(result("7", {"anything": True}), "sent")
    with pytest.raises(AssertionError):
        validator.validate(result(7, {"anything": True}), "sent")


def test_same_id_on_two_connections(validator: WireValidator) -> None:
    # Two connections in one process both use id 1, in the same direction.
    validator.validate(request(1, "session/new", {"cwd": "/p", "mcpServers": []}), "sent")
    validator.validate(request(1, "fs/read_text_file", {"sessionId": "s", "path": "/a"}), "sent")
    validator.validate(result(1, {"content": "text"}), "received")
    validator.validate(result(1, {"sessionId": "s"}), "received")


def test_notifications(validator: WireValidator) -> None:
    update = {
        "sessionId": "s",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""}},
    }
    validator.validate({"jsonrpc": "2.0", "method": "session/update", "params": update}, "sent")
    validator.validate(
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 3}}, "received"
    )
    with pytest.raises(AssertionError, match="CancelNotification"):
        validator.validate({"jsonrpc": "2.0", "method": "session/cancel", "params": {}}, "sent")
    with pytest.raises(AssertionError, match="is a notification, sent as a request"):
        validator.validate(request(1, "session/cancel", {"sessionId": "s"}), "sent")


def test_error_responses(validator: WireValidator) -> None:
    load: dict[str, Any] = {"sessionId": "s", "cwd": "/p", "mcpServers": []}
    validator.validate(request(4, "session/load", load), "sent")
    error = {"code": -32002, "message": "Resource not found", "data": {"uri": "s"}}
    validator.validate({"jsonrpc": "2.0", "id": 4, "error": error}, "received")
    validator.validate(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}, "sent"
    )
    with pytest.raises(AssertionError, match="not a valid Error"):
        validator.validate({"jsonrpc": "2.0", "id": 5, "error": {"code": "oops"}}, "sent")
    with pytest.raises(AssertionError, match="not both"):
        validator.validate({"jsonrpc": "2.0", "id": 5, "result": {}, "error": error}, "sent")


def test_envelope(validator: WireValidator) -> None:
    with pytest.raises(AssertionError, match="jsonrpc"):
        validator.validate({"id": 1, "method": "initialize", "params": {}}, "sent")
    with pytest.raises(AssertionError, match="RequestId"):
        validator.validate(request(1.5, "logout", {}), "sent")
    with pytest.raises(AssertionError, match="neither"):
        validator.validate({"jsonrpc": "2.0", "id": 1}, "sent")
    with pytest.raises(AssertionError, match="must be an object"):
        validator.validate([], "sent")


def test_missing_params_are_checked_as_empty(validator: WireValidator) -> None:
    validator.validate({"jsonrpc": "2.0", "id": 1, "method": "logout"}, "sent")
    with pytest.raises(AssertionError, match="NewSessionRequest"):
        validator.validate({"jsonrpc": "2.0", "id": 2, "method": "session/new"}, "sent")


def test_extension_and_unknown_methods(validator: WireValidator) -> None:
    validator.validate(request(1, "_zed.dev/workspace", [1, 2, 3]), "sent")
    validator.validate(result(1, "anything"), "received")
    validator.validate({"jsonrpc": "2.0", "method": "_ping"}, "sent")
    validator.validate(request(2, "no/such/method", {}), "sent")
    strict = WireValidator(strict_methods=True)
    strict.validate(request(1, "_zed.dev/workspace", {}), "sent")
    with pytest.raises(AssertionError, match="unknown method"):
        strict.validate(request(2, "no/such/method", {}), "sent")


def test_check_def_message_is_readable(validator: WireValidator) -> None:
    with pytest.raises(AssertionError) as info:
        validator.check_def("ToolCall", {"toolCallId": "c"}, context="here")
    text = str(info.value)
    assert text.startswith("here: not a valid ToolCall")
    assert "'title' is a required property" in text

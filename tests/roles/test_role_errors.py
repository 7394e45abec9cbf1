"""Error answers of the typed roles: -32601, -32602, -32603 and extension methods.

Requests here are sent with the raw JSON-RPC connection underneath the typed one, because the
typed calls refuse (locally) what the peer did not advertise: these tests play a peer that
ignores capabilities.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from _roles_support import MinimalAgent, MinimalClient, connect, schema_validation_paused
from helpers.timeouts import TIMEOUT

from accord.errors import (
    InternalError,
    InvalidParams,
    LocalProtocolError,
    MethodNotFound,
    RequestError,
)
from accord.roles import ClientSideConnection, RoleConnection
from accord.schema import (
    CreateTerminalRequest,
    CreateTerminalResponse,
    LoadSessionRequest,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
)
from accord.transports import memory_transport_pair

SID = "session-1"
WIRE_PATH = "/work/a.txt"

#: Valid params for every optional agent method (so only the missing handler can fail them).
OPTIONAL_AGENT_PARAMS: dict[str, dict[str, Any]] = {
    "session/load": {"sessionId": SID, "cwd": "/work", "mcpServers": []},
    "session/list": {},
    "session/resume": {"sessionId": SID, "cwd": "/work"},
    "session/close": {"sessionId": SID},
    "session/delete": {"sessionId": SID},
    "session/fork": {"sessionId": SID, "cwd": "/work"},
    "session/set_mode": {"sessionId": SID, "modeId": "code"},
    "session/set_config_option": {"sessionId": SID, "configId": "model", "value": "fast"},
    "authenticate": {"methodId": "api-key"},
    "logout": {},
}

#: Valid params for every optional client method.
OPTIONAL_CLIENT_PARAMS: dict[str, dict[str, Any]] = {
    "fs/read_text_file": {"sessionId": SID, "path": WIRE_PATH},
    "fs/write_text_file": {"sessionId": SID, "path": WIRE_PATH, "content": "x"},
    "terminal/create": {"sessionId": SID, "command": "ls"},
    "terminal/output": {"sessionId": SID, "terminalId": "term-1"},
    "terminal/wait_for_exit": {"sessionId": SID, "terminalId": "term-1"},
    "terminal/kill": {"sessionId": SID, "terminalId": "term-1"},
    "terminal/release": {"sessionId": SID, "terminalId": "term-1"},
    "elicitation/create": {
        "message": "Name?",
        "mode": "form",
        "sessionId": SID,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}


async def _raw_error(conn: RoleConnection, method: str, params: Any) -> RequestError:
    """Send a raw request and return the error it was answered with."""
    with anyio.fail_after(TIMEOUT), pytest.raises(RequestError) as caught:
        await conn.connection.request(method, params)
    return caught.value


def _error_replies(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["error"] for m in sent if "error" in m]


@pytest.mark.anyio
@pytest.mark.parametrize("method", sorted(OPTIONAL_AGENT_PARAMS))
async def test_unimplemented_optional_agent_method_answers_method_not_found(method: str) -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        error = await _raw_error(pair.client, method, OPTIONAL_AGENT_PARAMS[method])
        assert type(error) is MethodNotFound
        assert error.code == -32601
        assert error.data == {"method": method}
        [wire_error] = _error_replies(pair.agent_wire.sent)
        assert wire_error["code"] == -32601


@pytest.mark.anyio
@pytest.mark.parametrize("method", sorted(OPTIONAL_CLIENT_PARAMS))
async def test_unimplemented_optional_client_method_answers_method_not_found(method: str) -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        error = await _raw_error(pair.agent, method, OPTIONAL_CLIENT_PARAMS[method])
        assert type(error) is MethodNotFound
        assert error.data == {"method": method}
        [wire_error] = _error_replies(pair.client_wire.sent)
        assert wire_error["code"] == -32601


@pytest.mark.anyio
async def test_partial_terminal_support_answers_method_not_found() -> None:
    """Terminals are all or nothing: one handler alone is neither advertised nor served."""

    class OneTerminalMethod(MinimalClient):
        async def create_terminal(self, request: CreateTerminalRequest) -> CreateTerminalResponse:
            raise AssertionError("must not be called: terminals are not advertised")

    async with connect(MinimalAgent(), OneTerminalMethod()) as pair:
        assert pair.agent.client_capabilities is not None
        assert pair.agent.client_capabilities.terminal is False
        error = await _raw_error(
            pair.agent, "terminal/create", OPTIONAL_CLIENT_PARAMS["terminal/create"]
        )
        assert type(error) is MethodNotFound


@pytest.mark.anyio
@pytest.mark.parametrize(
    "method", ["session/unknown", "nes/start", "fs/read_text_file", "session/cancel"]
)
async def test_unknown_methods_to_the_agent_answer_method_not_found(method: str) -> None:
    """Unknown names, unstable ones we do not table, the client's methods, notifications."""
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        with schema_validation_paused():
            error = await _raw_error(pair.client, method, {"sessionId": SID})
        assert type(error) is MethodNotFound
        assert error.data == {"method": method}


@pytest.mark.anyio
@pytest.mark.parametrize("method", ["terminal/unknown", "session/prompt", "session/update"])
async def test_unknown_methods_to_the_client_answer_method_not_found(method: str) -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        with schema_validation_paused():
            error = await _raw_error(pair.agent, method, {"sessionId": SID})
        assert type(error) is MethodNotFound


@pytest.mark.anyio
async def test_unknown_extension_requests_answer_method_not_found_both_ways() -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            with pytest.raises(MethodNotFound) as to_agent:
                await pair.client.ext_request("_example.com/ping", {"n": 1})
            with pytest.raises(MethodNotFound) as to_client:
                await pair.agent.ext_request("_example.com/ping")
        assert to_agent.value.data == {"method": "_example.com/ping"}
        assert to_client.value.data == {"method": "_example.com/ping"}


class ExtensionAgent(MinimalAgent):
    def __init__(self) -> None:
        self.notifications: list[tuple[str, dict[str, Any]]] = []
        self.notified = anyio.Event()

    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        if method == "_example.com/ping":
            return {"pong": params}
        return await super().ext_method(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))
        self.notified.set()


class ExtensionClient(MinimalClient):
    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        if method == "_example.com/workspace":
            return {"buffers": ["a.py"], "asked": params}
        return await super().ext_method(method, params)


@pytest.mark.anyio
async def test_implemented_extension_requests_are_answered_both_ways() -> None:
    async with connect(ExtensionAgent(), ExtensionClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            pong = await pair.client.ext_request("_example.com/ping", {"n": 1})
            buffers = await pair.agent.ext_request("_example.com/workspace", {"open": True})
            # Without params the handler gets an empty object.
            empty = await pair.client.ext_request("_example.com/ping")
            with pytest.raises(MethodNotFound):
                await pair.client.ext_request("_example.com/other")
        assert pong == {"pong": {"n": 1}}
        assert buffers == {"buffers": ["a.py"], "asked": {"open": True}}
        assert empty == {"pong": {}}


@pytest.mark.anyio
async def test_extension_notifications_are_delivered_or_ignored() -> None:
    agent = ExtensionAgent()
    async with connect(agent, MinimalClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            # The client does not handle extension notifications: ignored, never answered.
            await pair.agent.ext_notification("_example.com/unknown", {"x": 1})
            await pair.client.connection.notify("unknown/notification", {"x": 1})
            await pair.client.ext_notification("_example.com/progress", {"done": 3})
            await agent.notified.wait()
            # Both connections still work after the ignored notifications.
            assert (await pair.client.ext_request("_example.com/ping"))["pong"] == {}
        assert agent.notifications == [("_example.com/progress", {"done": 3})]
    # Nobody answered a notification: the only replies on the wire answer requests.
    for wire in (pair.agent_wire, pair.client_wire):
        assert all("id" in m for m in wire.sent if "method" not in m)
        assert _error_replies(wire.sent) == []


@pytest.mark.anyio
async def test_extension_names_must_start_with_underscore() -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        sent_before = len(pair.client_wire.sent)
        with pytest.raises(LocalProtocolError):
            await pair.client.ext_request("example.com/ping")
        with pytest.raises(LocalProtocolError):
            await pair.agent.ext_notification("session/update", {})
        assert len(pair.client_wire.sent) == sent_before
        assert pair.agent_wire.sent_methods() == []


#: (method, params that do not validate, the field the error must name)
INVALID_PARAMS: list[tuple[str, Any, str]] = [
    ("session/new", {"mcpServers": []}, "cwd"),
    ("session/new", {"cwd": "/work"}, "mcpServers"),
    ("session/new", {"cwd": 7, "mcpServers": []}, "cwd"),
    ("session/prompt", {"sessionId": SID, "prompt": "not a list"}, "prompt"),
    ("session/prompt", {"sessionId": SID}, "prompt"),
    ("session/new", ["/work", []], "(params)"),
    ("initialize", {"protocolVersion": "one"}, "protocolVersion"),
    ("initialize", {"protocolVersion": 70000}, "protocolVersion"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("method", "params", "field"), INVALID_PARAMS)
async def test_invalid_params_answer_invalid_params_naming_the_field(
    method: str, params: Any, field: str
) -> None:
    class StrictAgent(MinimalAgent):
        async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
            raise AssertionError("must not be called with invalid params")

        async def prompt(self, request: PromptRequest) -> PromptResponse:
            raise AssertionError("must not be called with invalid params")

    # An initialize is sent on a fresh connection: a second one would be refused -32600 first.
    async with connect(StrictAgent(), MinimalClient(), initialize=method != "initialize") as pair:
        with schema_validation_paused():
            error = await _raw_error(pair.client, method, params)
        assert type(error) is InvalidParams
        assert error.code == -32602
        assert field in [problem["field"] for problem in error.data["errors"]]
        assert field in error.message or field == "(params)"


@pytest.mark.anyio
async def test_invalid_params_to_the_client_answer_invalid_params() -> None:
    class Reader(MinimalClient):
        async def read_text_file(self, request: Any) -> Any:
            raise AssertionError("must not be called with invalid params")

    async with connect(MinimalAgent(), Reader()) as pair:
        with schema_validation_paused():
            error = await _raw_error(pair.agent, "fs/read_text_file", {"sessionId": SID})
        assert type(error) is InvalidParams
        assert error.data == {"errors": [{"field": "path", "problem": "Field required"}]}


@pytest.mark.anyio
async def test_handler_exception_answers_internal_error_without_traceback() -> None:
    class BrokenAgent(MinimalAgent):
        async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
            raise ValueError("the disk is full")

    async with connect(BrokenAgent(), MinimalClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            with pytest.raises(InternalError) as caught:
                await pair.client.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))
            # The connection survives a failing handler.
            response = await pair.client.prompt(PromptRequest(session_id=SID, prompt=[]))
        assert response.stop_reason == "end_turn"
        assert caught.value.code == -32603
        assert "ValueError: the disk is full" in json.dumps(caught.value.data)
        [wire_error] = _error_replies(pair.agent_wire.sent)
        assert wire_error["code"] == -32603
        text = json.dumps(wire_error)
        assert "Traceback" not in text
        assert 'File "' not in text
        assert "test_role_errors.py" not in text


@pytest.mark.anyio
async def test_request_error_from_a_handler_is_answered_as_is() -> None:
    class PickyAgent(MinimalAgent):
        async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
            raise RequestError("quota exceeded", {"retryAfter": 30}, code=-32042)

    async with connect(PickyAgent(), MinimalClient()) as pair:
        with anyio.fail_after(TIMEOUT), pytest.raises(RequestError) as caught:
            await pair.client.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))
        [wire_error] = _error_replies(pair.agent_wire.sent)
    assert wire_error == {"code": -32042, "message": "quota exceeded", "data": {"retryAfter": 30}}
    assert (caught.value.code, caught.value.data) == (-32042, {"retryAfter": 30})


@pytest.mark.anyio
async def test_handler_returning_the_wrong_type_answers_internal_error() -> None:
    """One typed response out: ``None`` or another model never reaches the wire as a result."""

    class SloppyAgent(MinimalAgent):
        async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
            return None  # type: ignore[return-value]

        async def prompt(self, request: PromptRequest) -> PromptResponse:
            return {"stopReason": "end_turn"}  # type: ignore[return-value]

    async with connect(SloppyAgent(), MinimalClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            with pytest.raises(InternalError) as no_return:
                await pair.client.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))
            with pytest.raises(InternalError) as a_dict:
                await pair.client.prompt(PromptRequest(session_id=SID, prompt=[]))
        [initialized] = [m["result"] for m in pair.agent_wire.sent if "result" in m]
        assert "protocolVersion" in initialized
    assert "new_session() returned NoneType, not NewSessionResponse" in str(no_return.value.data)
    assert "prompt() returned dict, not PromptResponse" in str(a_dict.value.data)


@pytest.mark.anyio
async def test_an_error_in_the_connection_body_surfaces_as_itself() -> None:
    """``except LocalProtocolError`` around ``async with ClientSideConnection`` must work."""
    agent_end, client_end = memory_transport_pair()
    request = LoadSessionRequest(session_id=SID, cwd="/work", mcp_servers=[])

    async def load_before_initialize() -> None:
        async with ClientSideConnection(MinimalClient(), client_end) as conn:
            await conn.load_session(request)  # refused locally: raises LocalProtocolError

    try:
        with pytest.raises(LocalProtocolError):
            await load_before_initialize()
    finally:
        await agent_end.aclose()

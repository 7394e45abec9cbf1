"""Typed dispatch: every stable method, both directions, one typed model in and one out.

A test agent and a test client override every handler; each records the request it was given
and answers a fixed, distinctive response. The other side's typed call must return that
response as the method's result type, and the handler must have received the method's
params type, equal to what was sent.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _roles_support import MinimalAgent, MinimalClient, connect
from helpers.timeouts import TIMEOUT

from accord.roles import Agent, Client
from accord.schema import (
    AuthenticateRequest,
    AuthenticateResponse,
    BooleanSessionConfigOption,
    CancelNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    CompleteElicitationNotification,
    CreateElicitationRequest,
    CreateElicitationResponse,
    CreateTerminalRequest,
    CreateTerminalResponse,
    DeleteSessionRequest,
    DeleteSessionResponse,
    ElicitationSchema,
    EnvVariable,
    ForkSessionRequest,
    ForkSessionResponse,
    Implementation,
    InitializeRequest,
    KillTerminalRequest,
    KillTerminalResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    LogoutRequest,
    LogoutResponse,
    McpServerStdio,
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    PromptRequest,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResourceLinkContentBlock,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SelectedRequestPermissionOutcome,
    SelectSessionConfigOption,
    SessionConfigSelectOption,
    SessionInfo,
    SessionMode,
    SessionModeState,
    SessionNotification,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
    SetSessionModeResponse,
    StringElicitationPropertySchema,
    TerminalExitStatus,
    TerminalOutputRequest,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WireModel,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from accord.schema.methods import AGENT_METHODS, CLIENT_METHODS

SID = "session-1"


def handled(method: str) -> dict[str, Any]:
    """A ``_meta`` that makes an otherwise empty response recognisable."""
    return {"handled": method}


#: method -> (request sent by the client, response answered by the agent)
AGENT_SAMPLES: dict[str, tuple[WireModel, WireModel]] = {
    "authenticate": (
        AuthenticateRequest(method_id="api-key"),
        AuthenticateResponse(meta=handled("authenticate")),
    ),
    "logout": (LogoutRequest(), LogoutResponse(meta=handled("logout"))),
    "session/new": (
        NewSessionRequest(
            cwd="/work",
            mcp_servers=[
                McpServerStdio(
                    name="files",
                    command="/usr/bin/mcp-files",
                    args=["--root", "/work"],
                    env=[EnvVariable(name="LOG", value="1")],
                )
            ],
            additional_directories=["/data"],
        ),
        NewSessionResponse(
            session_id=SID,
            modes=SessionModeState(
                current_mode_id="ask",
                available_modes=[
                    SessionMode(id="ask", name="Ask"),
                    SessionMode(id="code", name="Code"),
                ],
            ),
            config_options=[
                SelectSessionConfigOption(
                    id="model",
                    name="Model",
                    current_value="fast",
                    options=[
                        SessionConfigSelectOption(value="fast", name="Fast"),
                        SessionConfigSelectOption(value="smart", name="Smart"),
                    ],
                )
            ],
        ),
    ),
    "session/load": (
        LoadSessionRequest(session_id=SID, cwd="/work", mcp_servers=[]),
        LoadSessionResponse(meta=handled("session/load")),
    ),
    "session/list": (
        ListSessionsRequest(cwd="/work", cursor="page-2"),
        ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=SID,
                    cwd="/work",
                    title="Fix the tests",
                    updated_at="2026-01-02T03:04:05Z",
                )
            ],
            next_cursor="page-3",
        ),
    ),
    "session/resume": (
        ResumeSessionRequest(session_id=SID, cwd="/work", mcp_servers=[]),
        ResumeSessionResponse(meta=handled("session/resume")),
    ),
    "session/close": (
        CloseSessionRequest(session_id=SID),
        CloseSessionResponse(meta=handled("session/close")),
    ),
    "session/delete": (
        DeleteSessionRequest(session_id=SID),
        DeleteSessionResponse(meta=handled("session/delete")),
    ),
    "session/fork": (
        ForkSessionRequest(session_id=SID, cwd="/work"),
        ForkSessionResponse(session_id="session-2"),
    ),
    "session/set_mode": (
        SetSessionModeRequest(session_id=SID, mode_id="code"),
        SetSessionModeResponse(meta=handled("session/set_mode")),
    ),
    "session/set_config_option": (
        SetSessionConfigOptionRequest(
            session_id=SID, config_id="verbose", type="boolean", value=True
        ),
        SetSessionConfigOptionResponse(
            config_options=[
                BooleanSessionConfigOption(id="verbose", name="Verbose", current_value=True)
            ]
        ),
    ),
    "session/prompt": (
        PromptRequest(
            session_id=SID,
            prompt=[
                TextContentBlock(text="Fix the failing test"),
                ResourceLinkContentBlock(uri="file:///work/test_x.py", name="test_x.py"),
            ],
        ),
        PromptResponse(stop_reason="end_turn"),
    ),
}

#: method -> (request sent by the agent, response answered by the client)
CLIENT_SAMPLES: dict[str, tuple[WireModel, WireModel]] = {
    "session/request_permission": (
        RequestPermissionRequest(
            session_id=SID,
            tool_call=ToolCallUpdate(
                tool_call_id="call-1", title="Edit main.py", kind="edit", status="pending"
            ),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        ),
        RequestPermissionResponse(outcome=SelectedRequestPermissionOutcome(option_id="allow")),
    ),
    "fs/read_text_file": (
        ReadTextFileRequest(session_id=SID, path="/work/notes.txt", line=2, limit=3),
        ReadTextFileResponse(content="two\nthree\nfour\n"),
    ),
    "fs/write_text_file": (
        WriteTextFileRequest(session_id=SID, path="/work/notes.txt", content="hello\n"),
        WriteTextFileResponse(meta=handled("fs/write_text_file")),
    ),
    "terminal/create": (
        CreateTerminalRequest(
            session_id=SID,
            command="pytest",
            args=["-q"],
            env=[EnvVariable(name="CI", value="1")],
            cwd="/work",
            output_byte_limit=4096,
        ),
        CreateTerminalResponse(terminal_id="term-1"),
    ),
    "terminal/output": (
        TerminalOutputRequest(session_id=SID, terminal_id="term-1"),
        TerminalOutputResponse(
            output="1 passed\n", truncated=False, exit_status=TerminalExitStatus(exit_code=0)
        ),
    ),
    "terminal/wait_for_exit": (
        WaitForTerminalExitRequest(session_id=SID, terminal_id="term-1"),
        WaitForTerminalExitResponse(exit_code=0),
    ),
    "terminal/kill": (
        KillTerminalRequest(session_id=SID, terminal_id="term-1"),
        KillTerminalResponse(meta=handled("terminal/kill")),
    ),
    "terminal/release": (
        ReleaseTerminalRequest(session_id=SID, terminal_id="term-1"),
        ReleaseTerminalResponse(meta=handled("terminal/release")),
    ),
    "elicitation/create": (
        CreateElicitationRequest(
            message="Which branch?",
            mode="form",
            session_id=SID,
            requested_schema=ElicitationSchema(
                type="object",
                properties={"branch": StringElicitationPropertySchema(title="Branch")},
                required=["branch"],
            ),
        ),
        CreateElicitationResponse(action="accept", content={"branch": "main"}),
    ),
}


class Recorder:
    """Calls a role received, in order, with a way to wait for the next ones."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self._changed = anyio.Event()

    def record(self, method: str, message: Any) -> None:
        self.calls.append((method, message))
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, count: int) -> None:
        while len(self.calls) < count:
            await self._changed.wait()


class FullAgent(Agent):
    """Overrides every stable agent handler (and ``session/fork``)."""

    additional_directories = True

    def __init__(self) -> None:
        self.recorder = Recorder()

    def _answer(self, method: str, request: Any) -> Any:
        self.recorder.record(method, request)
        return AGENT_SAMPLES[method][1]

    async def authenticate(self, request: AuthenticateRequest) -> AuthenticateResponse:
        return self._answer("authenticate", request)

    async def logout(self, request: LogoutRequest) -> LogoutResponse:
        return self._answer("logout", request)

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return self._answer("session/new", request)

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        return self._answer("session/load", request)

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        return self._answer("session/list", request)

    async def resume_session(self, request: ResumeSessionRequest) -> ResumeSessionResponse:
        return self._answer("session/resume", request)

    async def close_session(self, request: CloseSessionRequest) -> CloseSessionResponse:
        return self._answer("session/close", request)

    async def delete_session(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        return self._answer("session/delete", request)

    async def fork_session(self, request: ForkSessionRequest) -> ForkSessionResponse:
        return self._answer("session/fork", request)

    async def set_session_mode(self, request: SetSessionModeRequest) -> SetSessionModeResponse:
        return self._answer("session/set_mode", request)

    async def set_session_config_option(
        self, request: SetSessionConfigOptionRequest
    ) -> SetSessionConfigOptionResponse:
        return self._answer("session/set_config_option", request)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        return self._answer("session/prompt", request)

    async def cancel(self, notification: CancelNotification) -> None:
        self.recorder.record("session/cancel", notification)


class FullClient(Client):
    """Overrides every stable client handler."""

    client_info = Implementation(name="full-client", version="2.0")

    def __init__(self) -> None:
        self.recorder = Recorder()

    def _answer(self, method: str, request: Any) -> Any:
        self.recorder.record(method, request)
        return CLIENT_SAMPLES[method][1]

    async def session_update(self, notification: SessionNotification) -> None:
        self.recorder.record("session/update", notification)

    async def complete_elicitation(self, notification: CompleteElicitationNotification) -> None:
        self.recorder.record("elicitation/complete", notification)

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        return self._answer("session/request_permission", request)

    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        return self._answer("fs/read_text_file", request)

    async def write_text_file(self, request: WriteTextFileRequest) -> WriteTextFileResponse:
        return self._answer("fs/write_text_file", request)

    async def create_terminal(self, request: CreateTerminalRequest) -> CreateTerminalResponse:
        return self._answer("terminal/create", request)

    async def terminal_output(self, request: TerminalOutputRequest) -> TerminalOutputResponse:
        return self._answer("terminal/output", request)

    async def wait_for_terminal_exit(
        self, request: WaitForTerminalExitRequest
    ) -> WaitForTerminalExitResponse:
        return self._answer("terminal/wait_for_exit", request)

    async def kill_terminal(self, request: KillTerminalRequest) -> KillTerminalResponse:
        return self._answer("terminal/kill", request)

    async def release_terminal(self, request: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        return self._answer("terminal/release", request)

    async def create_elicitation(
        self, request: CreateElicitationRequest
    ) -> CreateElicitationResponse:
        return self._answer("elicitation/create", request)


def _stable(table: dict[str, Any], kind: str) -> set[str]:
    return {m for m, spec in table.items() if spec.kind == kind and not spec.unstable}


def test_samples_cover_every_stable_request() -> None:
    """A stable method added to the tables must get a dispatch test here."""
    assert _stable(AGENT_METHODS, "request") - {"initialize"} <= set(AGENT_SAMPLES)
    assert _stable(CLIENT_METHODS, "request") <= set(CLIENT_SAMPLES)
    assert _stable(AGENT_METHODS, "notification") == {"session/cancel"}
    assert _stable(CLIENT_METHODS, "notification") == {"session/update", "elicitation/complete"}


def _check_round_trip(
    spec_table: dict[str, Any],
    method: str,
    sent: WireModel,
    expected: WireModel,
    result: Any,
    recorded: list[tuple[str, Any]],
) -> None:
    spec = spec_table[method]
    assert type(result) is spec.result_type
    assert result == expected
    assert result.to_wire() == expected.to_wire()
    [(handled_method, received)] = recorded
    assert handled_method == method
    assert type(received) is spec.params_type
    assert received == sent
    assert received.to_wire() == sent.to_wire()


@pytest.mark.anyio
@pytest.mark.parametrize("method", sorted(AGENT_SAMPLES))
async def test_client_calls_reach_agent_handlers_typed(method: str) -> None:
    request, expected = AGENT_SAMPLES[method]
    agent = FullAgent()
    async with connect(agent, MinimalClient()) as pair:
        call = getattr(pair.client, AGENT_METHODS[method].handler)
        with anyio.fail_after(TIMEOUT):
            result = await call(request)
        assert [m for m in pair.client_wire.sent_methods() if m != "initialize"] == [method]
    _check_round_trip(AGENT_METHODS, method, request, expected, result, agent.recorder.calls)


@pytest.mark.anyio
@pytest.mark.parametrize("method", sorted(CLIENT_SAMPLES))
async def test_agent_calls_reach_client_handlers_typed(method: str) -> None:
    request, expected = CLIENT_SAMPLES[method]
    client = FullClient()
    async with connect(MinimalAgent(), client) as pair:
        call = getattr(pair.agent, CLIENT_METHODS[method].handler)
        with anyio.fail_after(TIMEOUT):
            result = await call(request)
        assert pair.agent_wire.sent_methods() == [method]
    _check_round_trip(CLIENT_METHODS, method, request, expected, result, client.recorder.calls)


@pytest.mark.anyio
async def test_cancel_notification_reaches_agent_typed() -> None:
    agent = FullAgent()
    sent = CancelNotification(session_id=SID, meta={"reason": "user"})
    async with connect(agent, MinimalClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            await pair.client.cancel(sent)
            await agent.recorder.wait_for(1)
    [(method, received)] = agent.recorder.calls
    assert method == "session/cancel"
    assert type(received) is CancelNotification
    assert received == sent


@pytest.mark.anyio
async def test_client_notifications_reach_client_typed_and_in_order() -> None:
    client = FullClient()
    update = SessionNotification(
        session_id=SID,
        update=ToolCallSessionUpdate(tool_call_id="call-1", title="Run tests", kind="execute"),
    )
    complete = CompleteElicitationNotification(elicitation_id="elicitation-1")
    async with connect(MinimalAgent(), client) as pair:
        with anyio.fail_after(TIMEOUT):
            await pair.agent.session_update(update)
            await pair.agent.complete_elicitation(complete)
            await client.recorder.wait_for(2)
    assert client.recorder.calls == [("session/update", update), ("elicitation/complete", complete)]
    received_update = client.recorder.calls[0][1]
    assert type(received_update) is SessionNotification
    assert type(received_update.update) is ToolCallSessionUpdate


@pytest.mark.anyio
async def test_initialize_exchanges_typed_info_and_capabilities() -> None:
    class InfoAgent(FullAgent):
        agent_info = Implementation(name="full-agent", title="Full agent", version="1.2.3")

    client = FullClient()
    async with connect(InfoAgent(), client, initialize=False) as pair:
        with anyio.fail_after(TIMEOUT):
            response = await pair.client.initialize()
        [initialize] = pair.client_wire.sent
        assert initialize["method"] == "initialize"
        sent = InitializeRequest.model_validate(initialize["params"])
        assert sent.client_info == FullClient.client_info
        assert sent.client_capabilities == client.client_capabilities()
        # The agent side keeps what the client said; the client side what the agent said.
        assert pair.agent.client_info == FullClient.client_info
        assert pair.agent.client_capabilities == client.client_capabilities()
        assert pair.agent.protocol_version == 1
        assert response.agent_info == InfoAgent.agent_info
        assert pair.client.agent_info == InfoAgent.agent_info
        assert pair.client.initialize_response == response
        assert pair.client.agent_capabilities == response.agent_capabilities.to_wire()

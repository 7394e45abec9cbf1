"""Capabilities as a contract: derived from the handlers a role overrides, then enforced.

Derivation: what ``initialize`` advertises is exactly what the implementation provides.
Enforcement: a connection refuses, locally and before anything is written, to send a request
the peer did not advertise (or before ``initialize`` told it what the peer advertised).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _roles_support import MinimalAgent, MinimalClient, TappedTransport, connect
from helpers.timeouts import TIMEOUT

from accord.errors import LocalProtocolError
from accord.roles import AgentSideConnection, ClientSideConnection
from accord.schema import (
    CloseSessionRequest,
    CloseSessionResponse,
    CreateElicitationRequest,
    CreateElicitationResponse,
    CreateTerminalRequest,
    CreateTerminalResponse,
    DeleteSessionRequest,
    DeleteSessionResponse,
    ElicitationSchema,
    ForkSessionRequest,
    ForkSessionResponse,
    KillTerminalRequest,
    KillTerminalResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    LogoutRequest,
    LogoutResponse,
    McpCapabilities,
    PromptCapabilities,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    StringElicitationPropertySchema,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from accord.transports import memory_transport_pair

SID = "session-1"

# ---------------------------------------------------------------- agents offering one thing


class LoadingAgent(MinimalAgent):
    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        return LoadSessionResponse()


class ListingAgent(MinimalAgent):
    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        return ListSessionsResponse(sessions=[])


class ClosingAgent(MinimalAgent):
    async def close_session(self, request: CloseSessionRequest) -> CloseSessionResponse:
        return CloseSessionResponse()


class ResumingAgent(MinimalAgent):
    async def resume_session(self, request: ResumeSessionRequest) -> ResumeSessionResponse:
        return ResumeSessionResponse()


class DeletingAgent(MinimalAgent):
    async def delete_session(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        return DeleteSessionResponse()


class ForkingAgent(MinimalAgent):
    async def fork_session(self, request: ForkSessionRequest) -> ForkSessionResponse:
        return ForkSessionResponse(session_id="session-2")


class LogoutAgent(MinimalAgent):
    async def logout(self, request: LogoutRequest) -> LogoutResponse:
        return LogoutResponse()


# ---------------------------------------------------------------- clients offering one thing


class ReadingClient(MinimalClient):
    async def read_text_file(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        return ReadTextFileResponse(content="text")


class ReadWriteClient(ReadingClient):
    async def write_text_file(self, request: WriteTextFileRequest) -> WriteTextFileResponse:
        return WriteTextFileResponse()


class FourTerminalMethods(MinimalClient):
    """Every terminal handler but ``release``: not enough to host terminals."""

    async def create_terminal(self, request: CreateTerminalRequest) -> CreateTerminalResponse:
        return CreateTerminalResponse(terminal_id="term-1")

    async def terminal_output(self, request: TerminalOutputRequest) -> TerminalOutputResponse:
        return TerminalOutputResponse(output="", truncated=False)

    async def wait_for_terminal_exit(
        self, request: WaitForTerminalExitRequest
    ) -> WaitForTerminalExitResponse:
        return WaitForTerminalExitResponse(exit_code=0)

    async def kill_terminal(self, request: KillTerminalRequest) -> KillTerminalResponse:
        return KillTerminalResponse()


class TerminalClient(FourTerminalMethods):
    async def release_terminal(self, request: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        return ReleaseTerminalResponse()


class ElicitingClient(MinimalClient):
    async def create_elicitation(
        self, request: CreateElicitationRequest
    ) -> CreateElicitationResponse:
        return CreateElicitationResponse(action="decline")


# ---------------------------------------------------------------- derivation


def test_baseline_agent_advertises_nothing_optional() -> None:
    assert MinimalAgent().agent_capabilities().to_wire() == {}


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        (LoadingAgent(), {"loadSession": True}),
        (ListingAgent(), {"sessionCapabilities": {"list": {}}}),
        (ClosingAgent(), {"sessionCapabilities": {"close": {}}}),
        (ResumingAgent(), {"sessionCapabilities": {"resume": {}}}),
        (DeletingAgent(), {"sessionCapabilities": {"delete": {}}}),
        (ForkingAgent(), {"sessionCapabilities": {"fork": {}}}),
        (LogoutAgent(), {"auth": {"logout": {}}}),
    ],
    ids=lambda value: type(value).__name__ if not isinstance(value, dict) else "",
)
def test_agent_capabilities_follow_the_handlers(agent: MinimalAgent, expected: Any) -> None:
    assert agent.agent_capabilities().to_wire() == expected


def test_agent_capabilities_combine() -> None:
    class Everything(LoadingAgent, ListingAgent, ClosingAgent, ResumingAgent, DeletingAgent):
        additional_directories = True

        def prompt_capabilities(self) -> PromptCapabilities:
            return PromptCapabilities(image=True, embedded_context=True)

        def mcp_capabilities(self) -> McpCapabilities:
            return McpCapabilities(http=True)

    assert Everything().agent_capabilities().to_wire() == {
        "loadSession": True,
        "sessionCapabilities": {
            "list": {},
            "close": {},
            "resume": {},
            "delete": {},
            "additionalDirectories": {},
        },
        "promptCapabilities": {"image": True, "embeddedContext": True},
        "mcpCapabilities": {"http": True},
    }


_BOOLEAN_CONFIG: dict[str, Any] = {"session": {"configOptions": {"boolean": {}}}}


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        (MinimalClient(), {}),
        (ReadingClient(), {"fs": {"readTextFile": True}}),
        (ReadWriteClient(), {"fs": {"readTextFile": True, "writeTextFile": True}}),
        (FourTerminalMethods(), {}),
        (TerminalClient(), {"terminal": True}),
        (ElicitingClient(), {"elicitation": {"form": {}, "url": {}}}),
    ],
    ids=lambda value: type(value).__name__ if not isinstance(value, dict) else "",
)
def test_client_capabilities_follow_the_handlers(client: MinimalClient, expected: Any) -> None:
    assert client.client_capabilities().to_wire() == {**expected, **_BOOLEAN_CONFIG}


def test_client_without_boolean_config_options() -> None:
    class PlainClient(ReadingClient):
        boolean_config_options = False

    assert PlainClient().client_capabilities().to_wire() == {"fs": {"readTextFile": True}}


def test_read_only_client_does_not_advertise_writing() -> None:
    capabilities = ReadingClient().client_capabilities()
    assert capabilities.fs.read_text_file is True
    assert capabilities.fs.write_text_file is False
    assert "writeTextFile" not in capabilities.to_wire()["fs"]


@pytest.mark.anyio
async def test_derived_capabilities_travel_in_initialize() -> None:
    async with connect(LoadingAgent(), ReadingClient()) as pair:
        [request] = [m for m in pair.client_wire.sent if m.get("method") == "initialize"]
        [reply] = [m for m in pair.agent_wire.sent if "result" in m]
        assert request["params"]["clientCapabilities"]["fs"] == {"readTextFile": True}
        assert reply["result"]["agentCapabilities"] == {"loadSession": True}
        assert pair.client.agent_capabilities == {"loadSession": True}
        assert pair.agent.client_capabilities is not None
        assert pair.agent.client_capabilities.fs.read_text_file is True


# ---------------------------------------------------------------- enforcement, agent side

#: Calls the agent makes to the client, and what the client must advertise for each.
AGENT_CALLS: dict[str, Any] = {
    "read_text_file": ReadTextFileRequest(session_id=SID, path="/work/a.txt"),
    "write_text_file": WriteTextFileRequest(session_id=SID, path="/work/a.txt", content="x"),
    "create_terminal": CreateTerminalRequest(session_id=SID, command="ls"),
    "terminal_output": TerminalOutputRequest(session_id=SID, terminal_id="term-1"),
    "wait_for_terminal_exit": WaitForTerminalExitRequest(session_id=SID, terminal_id="term-1"),
    "kill_terminal": KillTerminalRequest(session_id=SID, terminal_id="term-1"),
    "release_terminal": ReleaseTerminalRequest(session_id=SID, terminal_id="term-1"),
    "create_elicitation": CreateElicitationRequest(
        message="Open the dashboard", mode="url", elicitation_id="e-1", url="https://example.com/"
    ),
}


FORM_ELICITATION = CreateElicitationRequest(
    message="Name?",
    mode="form",
    session_id=SID,
    requested_schema=ElicitationSchema(
        type="object", properties={"name": StringElicitationPropertySchema()}
    ),
)


def _assert_nothing_sent(wire: TappedTransport, before: int) -> None:
    assert wire.sent[before:] == []


@pytest.mark.anyio
@pytest.mark.parametrize("call", sorted(AGENT_CALLS))
async def test_agent_refuses_calls_the_client_did_not_advertise(call: str) -> None:
    async with connect(MinimalAgent(), FourTerminalMethods()) as pair:
        before = len(pair.agent_wire.sent)
        with pytest.raises(LocalProtocolError, match="did not advertise"):
            await getattr(pair.agent, call)(AGENT_CALLS[call])
        _assert_nothing_sent(pair.agent_wire, before)
        assert [m for m in pair.client_wire.received if "method" in m] == []


@pytest.mark.anyio
async def test_agent_refuses_to_write_when_the_client_only_reads() -> None:
    async with connect(MinimalAgent(), ReadingClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            read = await pair.agent.read_text_file(AGENT_CALLS["read_text_file"])
        assert read.content == "text"
        before = len(pair.agent_wire.sent)
        with pytest.raises(LocalProtocolError, match=r"fs\.writeTextFile"):
            await pair.agent.write_text_file(AGENT_CALLS["write_text_file"])
        _assert_nothing_sent(pair.agent_wire, before)


@pytest.mark.anyio
async def test_agent_refuses_an_elicitation_mode_the_client_did_not_advertise() -> None:
    """``elicitation: {"form": {}}`` allows form elicitations only."""

    class FormOnlyClient(ElicitingClient):
        def client_capabilities(self) -> Any:
            capabilities = super().client_capabilities()
            assert capabilities.elicitation is not None
            capabilities.elicitation.url = None
            return capabilities

    async with connect(MinimalAgent(), FormOnlyClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            answer = await pair.agent.create_elicitation(FORM_ELICITATION)
        assert answer.action == "decline"
        before = len(pair.agent_wire.sent)
        with pytest.raises(LocalProtocolError, match=r"elicitation\.url"):
            await pair.agent.create_elicitation(AGENT_CALLS["create_elicitation"])
        _assert_nothing_sent(pair.agent_wire, before)


@pytest.mark.anyio
async def test_agent_refuses_an_empty_elicitation_capability() -> None:
    """``elicitation: {}`` advertises no mode at all (unlike MCP)."""

    class NoModeClient(ElicitingClient):
        def client_capabilities(self) -> Any:
            capabilities = super().client_capabilities()
            assert capabilities.elicitation is not None
            capabilities.elicitation.url = capabilities.elicitation.form = None
            return capabilities

    async with connect(MinimalAgent(), NoModeClient()) as pair:
        before = len(pair.agent_wire.sent)
        with pytest.raises(LocalProtocolError, match=r"elicitation\.form"):
            await pair.agent.create_elicitation(FORM_ELICITATION)
        _assert_nothing_sent(pair.agent_wire, before)


@pytest.mark.anyio
async def test_agent_allows_advertised_terminal_calls() -> None:
    async with connect(MinimalAgent(), TerminalClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            created = await pair.agent.create_terminal(AGENT_CALLS["create_terminal"])
            await pair.agent.release_terminal(AGENT_CALLS["release_terminal"])
        assert created.terminal_id == "term-1"
        assert pair.agent_wire.sent_methods() == ["terminal/create", "terminal/release"]


@pytest.mark.anyio
async def test_agent_refuses_gated_calls_before_initialize() -> None:
    async with connect(MinimalAgent(), ReadWriteClient(), initialize=False) as pair:
        with pytest.raises(LocalProtocolError, match="before initialize"):
            await pair.agent.read_text_file(AGENT_CALLS["read_text_file"])
        assert pair.agent_wire.sent == []


# ---------------------------------------------------------------- enforcement, client side

#: Calls the client makes to the agent that need a capability.
CLIENT_CALLS: dict[str, Any] = {
    "load_session": LoadSessionRequest(session_id=SID, cwd="/work", mcp_servers=[]),
    "list_sessions": ListSessionsRequest(),
    "resume_session": ResumeSessionRequest(session_id=SID, cwd="/work"),
    "close_session": CloseSessionRequest(session_id=SID),
    "delete_session": DeleteSessionRequest(session_id=SID),
    "fork_session": ForkSessionRequest(session_id=SID, cwd="/work"),
    "logout": LogoutRequest(),
}


@pytest.mark.anyio
@pytest.mark.parametrize("call", sorted(CLIENT_CALLS))
async def test_client_refuses_calls_the_agent_did_not_advertise(call: str) -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        before = len(pair.client_wire.sent)
        with pytest.raises(LocalProtocolError, match="did not advertise"):
            await getattr(pair.client, call)(CLIENT_CALLS[call])
        _assert_nothing_sent(pair.client_wire, before)


@pytest.mark.anyio
async def test_client_refuses_load_session_unless_advertised() -> None:
    request = CLIENT_CALLS["load_session"]
    async with connect(ListingAgent(), MinimalClient()) as pair:
        with pytest.raises(LocalProtocolError, match="loadSession"):
            await pair.client.load_session(request)
        assert pair.client_wire.sent_methods() == ["initialize"]
    async with connect(LoadingAgent(), MinimalClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            await pair.client.load_session(request)
        assert pair.client_wire.sent_methods() == ["initialize", "session/load"]


@pytest.mark.anyio
async def test_client_refuses_gated_calls_before_initialize() -> None:
    async with connect(LoadingAgent(), MinimalClient(), initialize=False) as pair:
        with pytest.raises(LocalProtocolError, match="before initialize"):
            await pair.client.load_session(CLIENT_CALLS["load_session"])
        assert pair.client_wire.sent == []


@pytest.mark.anyio
async def test_capabilities_are_per_connection() -> None:
    """Two clients of one agent class: each connection enforces its own peer's answer."""
    first_agent, second_agent = memory_transport_pair()
    first_client, second_client = memory_transport_pair()
    async with (
        AgentSideConnection(MinimalAgent(), first_agent) as reading,
        ClientSideConnection(ReadingClient(), second_agent) as reading_client,
        AgentSideConnection(MinimalAgent(), first_client) as plain,
        ClientSideConnection(MinimalClient(), second_client) as plain_client,
    ):
        with anyio.fail_after(TIMEOUT):
            await reading_client.initialize()
            await plain_client.initialize()
            assert (await reading.read_text_file(AGENT_CALLS["read_text_file"])).content == "text"
        with pytest.raises(LocalProtocolError):
            await plain.read_text_file(AGENT_CALLS["read_text_file"])

"""connect(): agent objects, transports, negotiation, capabilities, auth, extensions, errors."""

from __future__ import annotations

import os
from typing import Any

import anyio
import pytest
from _client_agents import FullAgent, ModesAgent, ScriptedAgent, WireAgent
from helpers.timeouts import TIMEOUT

from accord.client import ConnectedAgent, connect
from accord.errors import (
    AuthRequired,
    LocalProtocolError,
    MethodNotFound,
    RemoteProtocolError,
    SessionNotFound,
)
from accord.roles import Agent, AgentSideConnection, serve_agent
from accord.schema import (
    AuthenticateRequest,
    AuthenticateResponse,
    AuthMethodAgent,
    ClientCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    LogoutRequest,
    LogoutResponse,
    NewSessionRequest,
    NewSessionResponse,
    ReadTextFileRequest,
)
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio


class RecordingAgent(ScriptedAgent):
    """Remembers the client's initialize request."""

    seen: InitializeRequest | None = None

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        self.seen = request
        return await super().initialize(request)


async def test_an_agent_object_is_served_in_process() -> None:
    agent = RecordingAgent()
    with anyio.fail_after(TIMEOUT):
        async with connect(agent, client_info=Implementation(name="bot", version="2")) as conn:
            assert isinstance(conn, ConnectedAgent)
            assert conn.protocol_version == 1
            assert conn.agent_info == Implementation(name="scripted-agent", version="1.0")
            assert conn.auth_methods == []
            assert not conn.supports("loadSession")
            assert conn.initialize_response.protocol_version == 1
            assert "scripted-agent" in repr(conn)
            session = await conn.new_session()
            result = await session.prompt("hello")
    assert result.text == "hello"
    assert agent.seen is not None
    assert agent.seen.client_info == Implementation(name="bot", version="2")
    assert agent.new_session_requests[0].cwd == os.getcwd()


async def test_default_client_info_names_accord() -> None:
    agent = RecordingAgent()
    async with connect(agent):
        pass
    assert agent.seen is not None and agent.seen.client_info is not None
    assert agent.seen.client_info.name == "accord"


async def test_a_transport_is_used_as_is() -> None:
    client_end, agent_end = memory_transport_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_agent, ScriptedAgent(), agent_end)
        with anyio.fail_after(TIMEOUT):
            async with connect(client_end) as conn:
                assert conn.transport is client_end
                session = await conn.new_session("/tmp/project")
                assert session.cwd == "/tmp/project"
                assert (await session.prompt("via transport")).text == "via transport"


async def test_arguments_that_make_no_sense_are_refused() -> None:
    with pytest.raises(TypeError, match="list of arguments"):
        async with connect("my-agent --acp"):  # a str is a Sequence[str]: refused at run time
            pass
    with pytest.raises(TypeError, match="env applies only"):
        async with connect(ScriptedAgent(), env={"A": "1"}):
            pass


async def test_host_services_are_advertised_only_when_enabled(tmp_path: Any) -> None:
    seen: list[ClientCapabilities] = []
    for fs, terminals in ((False, False), (True, False), (False, True), (True, True)):
        agent = RecordingAgent()
        async with connect(agent, fs=fs, terminals=terminals):
            pass
        assert agent.seen is not None
        seen.append(agent.seen.client_capabilities)
    assert [(c.fs.read_text_file, c.fs.write_text_file, c.terminal) for c in seen] == [
        (False, False, False),
        (True, True, False),
        (False, False, True),
        (True, True, True),
    ]


async def test_without_fs_the_agent_gets_method_not_found(tmp_path: Any) -> None:
    agent = ScriptedAgent()
    async with connect(agent) as conn:
        session = await conn.new_session(tmp_path)
        request = ReadTextFileRequest(session_id=session.session_id, path=str(tmp_path / "a"))
        # the agent-side connection refuses to even send it...
        with pytest.raises(LocalProtocolError, match=r"fs\.readTextFile"):
            await agent.client.read_text_file(request)
        # ...and an agent that sends it anyway gets -32601
        with pytest.raises(MethodNotFound), anyio.fail_after(TIMEOUT):
            await agent.client.connection.request("fs/read_text_file", request.to_wire())


async def test_unadvertised_agent_methods_raise_before_sending() -> None:
    async with connect(ScriptedAgent()) as conn:
        with pytest.raises(LocalProtocolError, match="loadSession"):
            await conn.load_session("old")
        with pytest.raises(LocalProtocolError):
            await conn.list_sessions()
        with pytest.raises(LocalProtocolError):
            await conn.delete_session("x")
        with pytest.raises(LocalProtocolError):
            await conn.close_session("not-open")
        with pytest.raises(LocalProtocolError):
            await conn.logout()
        with pytest.raises(LocalProtocolError, match="additionalDirectories"):
            await conn.new_session("/w", additional_directories=["/x"])
        assert conn.sessions == {}


class AuthAgent(ScriptedAgent):
    """Answers -32000 until ``authenticate`` is called; offers logout."""

    auth_methods = (AuthMethodAgent(id="token", name="Token"),)

    def __init__(self) -> None:
        super().__init__()
        self.authenticated = False

    async def authenticate(self, request: AuthenticateRequest) -> AuthenticateResponse:
        self.authenticated = request.method_id == "token"
        return AuthenticateResponse()

    async def logout(self, request: LogoutRequest) -> LogoutResponse:
        self.authenticated = False
        return LogoutResponse()

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        if not self.authenticated:
            raise AuthRequired()
        return await super().new_session(request)


async def test_auth_required_until_authenticate() -> None:
    async with connect(AuthAgent()) as conn:
        assert [m.id for m in conn.auth_methods] == ["token"]
        with pytest.raises(AuthRequired) as info:
            await conn.new_session()
        assert info.value.code == -32000
        await conn.authenticate("token")
        session = await conn.new_session()
        assert (await session.prompt("in")).stop_reason == "end_turn"
        await conn.logout()
        with pytest.raises(AuthRequired):
            await conn.new_session()


class ExtAgent(ScriptedAgent):
    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        if method == "_echo":
            return {"echo": params}
        return await super().ext_method(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.cancels.append(method)


async def test_extension_requests_and_notifications() -> None:
    agent = ExtAgent()
    async with connect(agent) as conn:
        assert await conn.ext_request("_echo", {"a": 1}) == {"echo": {"a": 1}}
        with pytest.raises(MethodNotFound):
            await conn.ext_request("_unknown")
        with pytest.raises(LocalProtocolError):
            await conn.ext_request("no_underscore")
        await conn.ext_notification("_hello", {})
        await conn.ext_request("_echo")  # a round trip: the notification was handled first
    assert agent.cancels == ["_hello"]


async def test_unknown_extension_notifications_from_the_agent_are_ignored() -> None:
    agent = ScriptedAgent()
    async with connect(agent) as conn:
        session = await conn.new_session()
        await agent.client.ext_notification("_vendor/telemetry", {"x": 1})
        await agent.client.connection.notify("_vendor/raw", [1, 2])
        assert (await session.prompt("still fine")).text == "still fine"


async def test_a_version_the_client_cannot_speak_is_refused(wire: WireAgent) -> None:

    async def agent_side() -> None:
        initialize = await wire.expect("initialize")
        await wire.reply(initialize, {"protocolVersion": 99})

    async with wire.playing(agent_side):
        with pytest.raises(RemoteProtocolError, match="version 99"):
            async with connect(wire.client_end):
                pass


async def test_initialize_timeout(wire: WireAgent) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(wire.expect, "initialize")  # and never answer
        with pytest.raises(TimeoutError, match=r"did not answer initialize within 0\.05"):
            async with connect(wire.client_end, initialize_timeout=0.05):
                pass


async def raise_inside_connect() -> None:
    async with connect(ScriptedAgent()):
        try:
            raise ValueError("cause")
        except ValueError as cause:
            raise KeyError("boom") from cause


async def test_errors_in_the_block_come_out_unwrapped() -> None:
    with pytest.raises(KeyError) as info:
        await raise_inside_connect()
    assert isinstance(info.value.__cause__, ValueError)


async def raise_during_handling_inside_connect() -> None:
    async with connect(ScriptedAgent()):
        try:
            raise ValueError("first")
        except ValueError:
            raise KeyError("second")  # noqa: B904  # the implicit context is the point


async def test_errors_in_the_block_keep_their_implicit_context() -> None:
    with pytest.raises(KeyError) as info:
        await raise_during_handling_inside_connect()
    assert isinstance(info.value.__context__, ValueError)
    assert not info.value.__suppress_context__


async def test_sessions_by_id_and_statistics() -> None:
    async with connect(ModesAgent()) as conn:
        session = await conn.new_session()
        assert conn.session(session.session_id) is session
        with pytest.raises(SessionNotFound):
            conn.session("nope")
        stats = conn.statistics()
        assert (stats.sessions, stats.running_turns, stats.pending_permissions) == (1, 0, 0)
        assert stats.early_updates == 0
        assert not stats.connection.closed
        assert not conn.closed


async def test_list_delete_close_by_id() -> None:
    agent = FullAgent()
    async with connect(agent) as conn:
        assert [info.session_id for info in (await conn.list_sessions()).sessions] == ["a", "b"]
        listed = [info.session_id async for info in conn.iter_sessions("/w")]
        assert listed == ["a", "b", "c"]
        page = await conn.list_sessions("/w", cursor="page-2")
        assert page.next_cursor is None
        await conn.delete_session("a")
        await conn.close_session("b")  # not open here: sent as is
        session = await conn.new_session()
        await conn.close_session(session.session_id)
        assert session.state == "closed"
        assert conn.sessions == {}
    assert agent.deleted == ["a"]
    assert agent.closed == ["b", session.session_id]


async def test_the_agent_side_sees_a_clean_close() -> None:
    agent_conn: list[AgentSideConnection] = []

    class Watching(ScriptedAgent):
        def on_connect(self, client: AgentSideConnection) -> None:
            agent_conn.append(client)
            super().on_connect(client)

    async with connect(Watching()):
        pass
    assert agent_conn[0].closed


class BrokenAgent(Agent):
    """Not even new_session."""


async def test_a_baseline_method_the_agent_lacks_is_an_error_response() -> None:
    async with connect(BrokenAgent()) as conn:
        with pytest.raises(MethodNotFound):
            await conn.new_session()

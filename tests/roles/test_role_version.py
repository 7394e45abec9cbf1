"""Protocol version negotiation in ``initialize``.

The client asks for the latest version it speaks; the agent answers that version if it speaks
it, else its own latest. accord speaks only version 1, so every request is answered 1, and
accord's client refuses an agent that answers a version it cannot speak.
"""

from __future__ import annotations

import anyio
import pytest
from _roles_support import MinimalAgent, MinimalClient, connect
from helpers.timeouts import TIMEOUT

from accord.errors import LocalProtocolError, RemoteProtocolError
from accord.roles import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, negotiate_version
from accord.schema import (
    InitializeRequest,
    InitializeResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
)


def test_accord_speaks_version_one() -> None:
    assert SUPPORTED_PROTOCOL_VERSIONS == (1,)
    assert LATEST_PROTOCOL_VERSION == 1


@pytest.mark.parametrize(("requested", "answered"), [(1, 1), (2, 1), (0, 1), (65535, 1)])
def test_negotiate_version(requested: int, answered: int) -> None:
    assert negotiate_version(requested) == answered


@pytest.mark.anyio
@pytest.mark.parametrize("requested", [1, 2, 0, 65535])
async def test_agent_answers_its_latest_version_over_the_wire(requested: int) -> None:
    async with connect(MinimalAgent(), MinimalClient(), initialize=False) as pair:
        with anyio.fail_after(TIMEOUT):
            response = await pair.client.initialize(InitializeRequest(protocol_version=requested))
        assert response.protocol_version == 1
        assert pair.agent.protocol_version == 1
        [reply] = [m for m in pair.agent_wire.sent if "result" in m]
        assert reply["result"]["protocolVersion"] == 1


@pytest.mark.anyio
async def test_client_asks_for_the_latest_version_by_default() -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        [initialize] = pair.client_wire.sent
        assert initialize["method"] == "initialize"
        assert initialize["params"]["protocolVersion"] == LATEST_PROTOCOL_VERSION


class FutureAgent(MinimalAgent):
    """An agent that only speaks version 2 (and claims every capability it has)."""

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        return InitializeResponse(protocol_version=2, agent_capabilities=self.agent_capabilities())

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        raise AssertionError("never reached: the client refused the version")


@pytest.mark.anyio
async def test_client_refuses_an_agent_answering_an_unsupported_version() -> None:
    async with connect(FutureAgent(), MinimalClient(), initialize=False) as pair:
        with anyio.fail_after(TIMEOUT), pytest.raises(RemoteProtocolError, match="version 2"):
            await pair.client.initialize()
        # Nothing the agent said is taken on: gated calls stay refused.
        assert pair.client.initialize_response is None
        assert pair.client.agent_capabilities is None
        with pytest.raises(LocalProtocolError):
            await pair.client.load_session(
                LoadSessionRequest(session_id="s", cwd="/work", mcp_servers=[])
            )
        assert pair.client_wire.sent_methods() == ["initialize"]


@pytest.mark.anyio
async def test_negotiated_connection_keeps_working() -> None:
    async with connect(MinimalAgent(), MinimalClient(), initialize=False) as pair:
        with anyio.fail_after(TIMEOUT):
            await pair.client.initialize(InitializeRequest(protocol_version=2))
            session = await pair.client.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))
        assert session.session_id == "session-1"

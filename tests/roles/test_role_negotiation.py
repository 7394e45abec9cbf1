"""``initialize`` comes first, once, and its fields are read as strictly as the schema says.

On the wire: a request before ``initialize`` is refused -32600 naming ``initialize`` (not
served); a second ``initialize`` is refused -32600 and changes nothing; ``protocolVersion`` as
``"1"``, ``true`` or ``1.0`` is -32602 (the schema gives it no leniency); a capability such as
``"terminal": "true"`` is read as the schema's default-on-error says (the default, ``false``),
not coerced to ``true``. On the client side, an agent answering ``"protocolVersion": "1"`` or
``"loadSession": "true"`` is not taken at its word either. See docs/methods.md (Negotiation).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _roles_support import (
    MinimalAgent,
    MinimalClient,
    connect,
    schema_validation_paused,
)
from helpers.timeouts import TIMEOUT

from accord.errors import InvalidParams, InvalidRequest, RemoteProtocolError
from accord.roles import Agent
from accord.schema import InitializeRequest, InitializeResponse, LoadSessionRequest

INITIALIZE: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}}
NEW_SESSION: dict[str, Any] = {"cwd": "/work", "mcpServers": []}


async def raw(pair: Any, method: str, params: Any) -> Any:
    """Send ``method`` with ``params`` as is, from the client's end of the wire."""
    with anyio.fail_after(TIMEOUT):
        return await pair.client.connection.request(method, params)


class CountingAgent(MinimalAgent):
    """Counts the sessions it made, to show a refused request reached no handler."""

    def __init__(self) -> None:
        self.sessions = 0

    async def new_session(self, request: Any) -> Any:
        self.sessions += 1
        return await super().new_session(request)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("session/new", NEW_SESSION),
        ("session/prompt", {"sessionId": "session-1", "prompt": []}),
        ("_accord/anything", {}),
    ],
)
async def test_a_request_before_initialize_is_refused_naming_initialize(
    method: str, params: dict[str, Any]
) -> None:
    agent = CountingAgent()
    async with connect(agent, MinimalClient(), initialize=False) as pair:
        with pytest.raises(InvalidRequest) as refused:
            await raw(pair, method, params)
        assert refused.value.code == -32600
        assert "initialize" in refused.value.message
        assert refused.value.data == {"method": method, "expected": "initialize"}
        assert agent.sessions == 0
        # Once initialized, the same request is served.
        await raw(pair, "initialize", INITIALIZE)
        if method == "session/new":
            answer = await raw(pair, method, params)
            assert answer["sessionId"] == "session-1"
            assert agent.sessions == 1


@pytest.mark.anyio
async def test_a_notification_before_initialize_is_not_answered_and_changes_nothing() -> None:
    async with connect(MinimalAgent(), MinimalClient(), initialize=False) as pair:
        with anyio.fail_after(TIMEOUT):
            await pair.client.connection.notify("session/cancel", {"sessionId": "session-1"})
        answer = await raw(pair, "initialize", INITIALIZE)
        assert answer["protocolVersion"] == 1
        assert [m for m in pair.agent_wire.sent if "error" in m] == []


@pytest.mark.anyio
async def test_a_second_initialize_is_refused_and_the_first_stays() -> None:
    async with connect(MinimalAgent(), MinimalClient(), initialize=False) as pair:
        first = {"protocolVersion": 1, "clientCapabilities": {"terminal": True}}
        await raw(pair, "initialize", first)
        again = {"protocolVersion": 1, "clientCapabilities": {"terminal": False}}
        with pytest.raises(InvalidRequest) as refused:
            await raw(pair, "initialize", again)
        assert refused.value.code == -32600
        assert "already" in refused.value.message
        # What the first one negotiated holds.
        assert pair.agent.client_capabilities is not None
        assert pair.agent.client_capabilities.terminal is True
        answer = await raw(pair, "session/new", NEW_SESSION)
        assert answer["sessionId"] == "session-1"


class SlowAgent(MinimalAgent):
    """Answers ``initialize`` only when told to, so that a second one overlaps the first."""

    def __init__(self) -> None:
        self.release = anyio.Event()

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        await self.release.wait()
        return await super().initialize(request)


@pytest.mark.anyio
async def test_an_initialize_overlapping_the_first_is_refused() -> None:
    agent = SlowAgent()
    async with connect(agent, MinimalClient(), initialize=False) as pair:
        answers: list[Any] = []

        async def first() -> None:
            answers.append(await raw(pair, "initialize", INITIALIZE))

        async with anyio.create_task_group() as group:
            group.start_soon(first)
            await anyio.sleep(0.05)
            with pytest.raises(InvalidRequest, match="already"):
                await raw(pair, "initialize", INITIALIZE)
            # A request while initialize is still unanswered is not served either.
            with pytest.raises(InvalidRequest, match="initialize"):
                await raw(pair, "session/new", NEW_SESSION)
            agent.release.set()
        assert answers[0]["protocolVersion"] == 1


@pytest.mark.anyio
async def test_an_initialize_refused_for_its_params_may_be_sent_again() -> None:
    async with connect(MinimalAgent(), MinimalClient(), initialize=False) as pair:
        with schema_validation_paused(), pytest.raises(InvalidParams):
            await raw(pair, "initialize", {"clientCapabilities": {}})
        answer = await raw(pair, "initialize", INITIALIZE)
        assert answer["protocolVersion"] == 1


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["1", True, 1.0, -1, 65536, None])
async def test_a_protocol_version_of_the_wrong_type_is_invalid_params(version: Any) -> None:
    async with connect(MinimalAgent(), MinimalClient(), initialize=False) as pair:
        with schema_validation_paused(), pytest.raises(InvalidParams) as refused:
            await raw(pair, "initialize", {"protocolVersion": version, "clientCapabilities": {}})
        assert refused.value.code == -32602
        assert "protocolVersion" in str(refused.value.data)
        assert pair.agent.protocol_version is None


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("capabilities", "terminal", "read"),
    [
        ({"terminal": "true"}, False, False),
        ({"terminal": 1}, False, False),
        ({"terminal": True, "fs": {"readTextFile": "yes"}}, True, False),
        ({"fs": {"readTextFile": 1, "writeTextFile": True}}, False, False),
        ({"terminal": True, "fs": {"readTextFile": True}}, True, True),
    ],
)
async def test_capabilities_of_the_wrong_type_fall_back_to_their_default(
    capabilities: dict[str, Any], terminal: bool, read: bool
) -> None:
    async with connect(MinimalAgent(), MinimalClient(), initialize=False) as pair:
        with schema_validation_paused():
            await raw(
                pair, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities}
            )
        seen = pair.agent.client_capabilities
        assert seen is not None
        assert seen.terminal is terminal
        assert seen.fs.read_text_file is read


@pytest.mark.anyio
async def test_other_requests_are_read_strictly_too() -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        with schema_validation_paused(), pytest.raises(InvalidParams) as refused:
            await raw(pair, "session/new", {"cwd": 5, "mcpServers": []})
        assert "cwd" in str(refused.value.data)


class RawAnswer(InitializeResponse):
    """An ``initialize`` answer that puts whatever it holds on the wire."""

    def to_wire(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})


class WireAgent(Agent):
    """Answers ``initialize`` with a raw wire object."""

    def __init__(self, wire: dict[str, Any]) -> None:
        self.wire = wire

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        answer = RawAnswer.model_construct(protocol_version=1)
        answer.__pydantic_extra__ = dict(self.wire)
        return answer


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["1", True, 1.0])
async def test_the_client_refuses_a_protocol_version_of_the_wrong_type(version: Any) -> None:
    agent = WireAgent({"protocolVersion": version, "agentCapabilities": {}})
    async with connect(agent, MinimalClient(), initialize=False) as pair:
        with (
            schema_validation_paused(),
            anyio.fail_after(TIMEOUT),
            pytest.raises(RemoteProtocolError, match="protocolVersion"),
        ):
            await pair.client.initialize()
        assert pair.client.initialize_response is None


@pytest.mark.anyio
async def test_the_client_reads_a_capability_of_the_wrong_type_as_its_default() -> None:
    agent = WireAgent(
        {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": "true", "promptCapabilities": {"image": 1}},
        }
    )
    async with connect(agent, MinimalClient(), initialize=False) as pair:
        with schema_validation_paused(), anyio.fail_after(TIMEOUT):
            response = await pair.client.initialize()
        assert response.agent_capabilities.load_session is False
        assert response.agent_capabilities.prompt_capabilities.image is False
        # Not advertised, so not sent.
        with pytest.raises(Exception, match="loadSession"):
            await pair.client.load_session(
                LoadSessionRequest(session_id="s", cwd="/work", mcp_servers=[])
            )

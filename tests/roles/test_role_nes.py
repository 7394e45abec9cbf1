"""NES at the role level: the ``nes`` capability tree, position encodings, gated notifications.

An agent overriding the NES handlers advertises ``agentCapabilities.nes`` with exactly the
document events it handles (``didChange`` with its sync kind) and picks a position encoding
from the client's list; a client refuses to send an NES request or a document event the agent
did not advertise, notifications included, before anything is written.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _roles_support import MinimalAgent, MinimalClient, connect
from helpers.timeouts import TIMEOUT

from accord.errors import LocalProtocolError, MethodNotFound
from accord.roles import Agent, AgentSideConnection
from accord.schema import (
    AcceptNesNotification,
    ClientNesCapabilities,
    CloseNesRequest,
    CloseNesResponse,
    DidChangeDocumentNotification,
    DidCloseDocumentNotification,
    DidOpenDocumentNotification,
    NesJumpCapabilities,
    StartNesRequest,
    StartNesResponse,
    SuggestNesRequest,
    SuggestNesResponse,
)
from accord.transports import memory_transport_pair


class NesAgent(MinimalAgent):
    """Starts NES sessions and takes ``didOpen`` / ``didChange``; records what it got."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def start_nes(self, request: StartNesRequest) -> StartNesResponse:
        return StartNesResponse(session_id="nes-1")

    async def suggest_nes(self, request: SuggestNesRequest) -> SuggestNesResponse:
        return SuggestNesResponse(suggestions=[])

    async def close_nes(self, request: CloseNesRequest) -> CloseNesResponse:
        return CloseNesResponse()

    async def did_open_document(self, notification: DidOpenDocumentNotification) -> None:
        self.events.append(notification)

    async def did_change_document(self, notification: DidChangeDocumentNotification) -> None:
        self.events.append(notification)


class EncodingClient(MinimalClient):
    position_encodings = ("utf-32", "utf-8", "utf-16")

    def nes_capabilities(self) -> ClientNesCapabilities:
        return ClientNesCapabilities(jump=NesJumpCapabilities())


def test_the_nes_tree_names_the_document_events_handled() -> None:
    assert NesAgent().agent_capabilities().to_wire() == {
        "nes": {
            "events": {
                "document": {"didOpen": {}, "didChange": {"syncKind": "incremental"}},
            },
        },
    }


def test_full_sync_is_advertised_when_the_agent_asks_for_it() -> None:
    class FullSync(NesAgent):
        document_sync = "full"

    wire = FullSync().agent_capabilities().to_wire()
    assert wire["nes"]["events"]["document"]["didChange"] == {"syncKind": "full"}


def test_a_withheld_method_is_neither_advertised_nor_served() -> None:
    class NoNes(NesAgent):
        def offered_methods(self) -> set[str]:
            return {m for m in super().offered_methods() if not m.startswith(("nes/", "doc"))}

    assert NoNes().agent_capabilities().to_wire() == {}


def test_the_client_advertises_its_encodings_and_suggestion_kinds() -> None:
    wire = EncodingClient().client_capabilities().to_wire()
    assert wire["positionEncodings"] == ["utf-32", "utf-8", "utf-16"]
    assert wire["nes"] == {"jump": {}}
    assert "positionEncodings" not in MinimalClient().client_capabilities().to_wire()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("supported", "expected"),
    [
        (("utf-16",), "utf-16"),  # nothing else in common: the default
        (("utf-16", "utf-8"), "utf-8"),  # the client's preference order decides
        (("utf-16", "utf-8", "utf-32"), "utf-32"),
    ],
)
async def test_the_agent_picks_the_clients_first_encoding_it_speaks(
    supported: tuple[str, ...], expected: str
) -> None:
    agent = NesAgent()
    agent.position_encodings = supported
    async with connect(agent, EncodingClient()) as pair:
        [reply] = [m for m in pair.agent_wire.sent if "result" in m]
    assert reply["result"]["agentCapabilities"]["positionEncoding"] == expected
    assert pair.client.position_encoding == expected
    assert pair.agent.position_encoding == expected


@pytest.mark.anyio
async def test_without_a_client_list_the_encoding_is_utf16() -> None:
    agent = NesAgent()
    agent.position_encodings = ("utf-16", "utf-8")
    async with connect(agent, MinimalClient()) as pair:
        assert pair.client.position_encoding == "utf-16"
        assert pair.client.agent_capabilities is not None
        assert pair.client.agent_capabilities["positionEncoding"] == "utf-16"


@pytest.mark.anyio
async def test_an_agent_without_nes_sends_no_position_encoding() -> None:
    async with connect(MinimalAgent(), EncodingClient()) as pair:
        assert pair.client.agent_capabilities == {}
        assert pair.client.position_encoding == "utf-16"


def test_an_agent_must_speak_utf16() -> None:
    agent = NesAgent()
    agent.position_encodings = ("utf-8",)
    transport = memory_transport_pair()[0]
    with pytest.raises(ValueError, match="utf-16"):
        AgentSideConnection(agent, transport)


OPEN = DidOpenDocumentNotification(
    session_id="nes-1", uri="file:///a.py", language_id="python", version=1, text="x = 1\n"
)
CLOSE = DidCloseDocumentNotification(session_id="nes-1", uri="file:///a.py")


@pytest.mark.anyio
async def test_the_client_sends_advertised_events_and_refuses_the_others() -> None:
    agent = NesAgent()
    async with connect(agent, MinimalClient()) as pair:
        with anyio.fail_after(TIMEOUT):
            started = await pair.client.start_nes(StartNesRequest())
            await pair.client.did_open_document(OPEN)
        before = len(pair.client_wire.sent)
        with pytest.raises(LocalProtocolError, match=r"nes\.events\.document\.didClose"):
            await pair.client.did_close_document(CLOSE)
        assert pair.client_wire.sent[before:] == []
        with anyio.fail_after(TIMEOUT):
            await pair.client.close_nes(CloseNesRequest(session_id=started.session_id))
    assert agent.events == [OPEN]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.start_nes(StartNesRequest()),
        lambda c: c.did_open_document(OPEN),
        lambda c: c.accept_nes(AcceptNesNotification(session_id="nes-1", id="s-1")),
    ],
    ids=["nes/start", "document/didOpen", "nes/accept"],
)
async def test_nothing_of_nes_goes_to_an_agent_without_it(call: Any) -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        before = len(pair.client_wire.sent)
        with pytest.raises(LocalProtocolError, match="did not advertise nes"):
            await call(pair.client)
        assert pair.client_wire.sent[before:] == []


@pytest.mark.anyio
async def test_an_agent_without_nes_answers_method_not_found() -> None:
    async with connect(MinimalAgent(), MinimalClient()) as pair:
        with anyio.fail_after(TIMEOUT), pytest.raises(MethodNotFound):
            await pair.client.connection.request("nes/start", {})


def test_agent_base_offers_nothing_of_nes() -> None:
    assert not {m for m in Agent().offered_methods() if m.startswith(("nes/", "document/"))}

"""Shared pieces of the typed-role tests: a tapped in-memory pair and minimal roles."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from helpers.timeouts import TIMEOUT

from accord.jsonrpc import set_wire_observer
from accord.roles import Agent, AgentSideConnection, Client, ClientSideConnection
from accord.schema import (
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SessionNotification,
)
from accord.transports import MemoryTransport, memory_transport_pair


class TappedTransport:
    """A memory transport that records every message it sends and receives."""

    def __init__(self, inner: MemoryTransport) -> None:
        self._inner = inner
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        await self._inner.send(message)

    async def receive(self) -> dict[str, Any]:
        message = await self._inner.receive()
        self.received.append(message)
        return message

    async def aclose(self) -> None:
        await self._inner.aclose()

    def sent_methods(self) -> list[str]:
        """The methods of the requests and notifications sent so far."""
        return [m["method"] for m in self.sent if "method" in m]


@contextmanager
def schema_validation_paused() -> Generator[None]:
    """Let a test put deliberately invalid params on the wire.

    The test suite may install a process-wide wire observer that validates all traffic
    against the official schema; a test that plays a broken peer pauses it.
    """
    previous = set_wire_observer(None)
    try:
        yield
    finally:
        set_wire_observer(previous)


@dataclass
class Pair:
    """Both ends of a connected agent and client, with the taps on their transports."""

    agent: AgentSideConnection
    client: ClientSideConnection
    agent_wire: TappedTransport
    client_wire: TappedTransport


@asynccontextmanager
async def connect(agent: Agent, client: Client, *, initialize: bool = True) -> AsyncGenerator[Pair]:
    """Serve ``agent`` and drive it with ``client`` over an in-memory pair."""
    agent_end, client_end = memory_transport_pair()
    agent_wire, client_wire = TappedTransport(agent_end), TappedTransport(client_end)
    async with (
        AgentSideConnection(agent, agent_wire) as agent_conn,
        ClientSideConnection(client, client_wire) as client_conn,
    ):
        if initialize:
            with anyio.fail_after(TIMEOUT):
                await client_conn.initialize()
        yield Pair(agent_conn, client_conn, agent_wire, client_wire)


class MinimalAgent(Agent):
    """The baseline agent: sessions and prompts only."""

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="session-1")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        return PromptResponse(stop_reason="end_turn")


class MinimalClient(Client):
    """The baseline client: records updates, allows every permission request."""

    def __init__(self) -> None:
        self.updates: list[SessionNotification] = []

    async def session_update(self, notification: SessionNotification) -> None:
        self.updates.append(notification)

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        option = request.options[0].option_id
        return RequestPermissionResponse(outcome=SelectedRequestPermissionOutcome(option_id=option))

"""An editor's view of ``accord serve``: every message it receives, in the order it arrived.

:func:`editor` spawns ``python -m accord.cli serve`` (SQLite store in the test's directory, the
fake model server given) and drives it with accord's typed :class:`~accord.roles.Client`
layer, the way an editor such as Zed drives an agent, while :class:`WireLog` records each
message as the transport hands it over: what a test asserts is the wire order, message by
message, not what a higher layer made of it. Every message is still schema-checked by the
suite's wire observer.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from helpers.timeouts import TIMEOUT

from accord.roles import Client, ClientSideConnection
from accord.schema import (
    InitializeRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedRequestPermissionOutcome,
    SessionNotification,
)
from accord.testing import FakeOpenAIServer
from accord.transports import MalformedFrame, Transport, spawn_agent

__all__ = ("Editor", "EditorClient", "WireLog", "editor")


class WireLog:
    """A transport wrapper that records every message received, in order."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self.received: list[dict[str, Any]] = []
        self._changed = anyio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        """Send through the wrapped transport."""
        await self._inner.send(message)

    async def receive(self) -> dict[str, Any] | MalformedFrame:
        """Receive through the wrapped transport, recording what arrived."""
        message = await self._inner.receive()
        if isinstance(message, dict):
            self.received.append(message)
            self._changed.set()
            self._changed = anyio.Event()
        return message

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()

    async def wait_for(self, count: int) -> None:
        """Wait (bounded) until at least ``count`` messages have arrived."""
        with anyio.fail_after(TIMEOUT):
            while len(self.received) < count:
                await self._changed.wait()

    def since(self, start: int) -> list[dict[str, Any]]:
        """The messages received from index ``start`` on."""
        return self.received[start:]


def describe(message: dict[str, Any]) -> str:
    """A short name for a received message: ``result``, ``error`` or the update's tag."""
    if "method" not in message:
        return "error" if "error" in message else "result"
    if message["method"] == "session/update":
        return str(message["params"]["update"]["sessionUpdate"])
    return str(message["method"])


class EditorClient(Client):
    """Records updates; allows every permission request once."""

    def __init__(self) -> None:
        self.notifications: list[SessionNotification] = []

    async def session_update(self, notification: SessionNotification) -> None:
        self.notifications.append(notification)

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        option = next(o for o in request.options if o.kind == "allow_once")
        return RequestPermissionResponse(
            outcome=SelectedRequestPermissionOutcome(option_id=option.option_id)
        )


@dataclass
class Editor:
    """A connection to ``accord serve`` and the log of what it sent."""

    conn: ClientSideConnection
    log: WireLog
    client: EditorClient


def serve_command(server: FakeOpenAIServer | None, store: Path) -> list[str]:
    """``accord serve`` with a store file and, if given, the fake model."""
    command = [sys.executable, "-m", "accord.cli", "serve", "--store", str(store)]
    if server is not None:
        command += ["--model", "openai:fake-model", "--base-url", server.base_url]
    return command


@asynccontextmanager
async def editor(
    server: FakeOpenAIServer | None,
    store: Path,
    *,
    client: EditorClient | None = None,
    initialize: dict[str, Any] | None = None,
) -> AsyncGenerator[Editor]:
    """``accord serve`` in a subprocess, initialized; ``initialize`` overrides request fields."""
    env = {"OPENAI_API_KEY": "test", "ACCORD_MODEL": "", "ACCORD_BASE_URL": ""}
    client = client or EditorClient()
    async with spawn_agent(serve_command(server, store), cwd=store.parent, env=env) as transport:
        log = WireLog(transport)
        async with ClientSideConnection(client, log) as conn:
            fields: dict[str, Any] = {
                "protocolVersion": 1,
                "clientCapabilities": client.client_capabilities().to_wire(),
                **(initialize or {}),
            }
            with anyio.fail_after(TIMEOUT):
                await conn.initialize(InitializeRequest.model_validate(fields))
            yield Editor(conn, log, client)

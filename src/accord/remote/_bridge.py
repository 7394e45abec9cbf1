"""``accord bridge``: a local stdio agent that is really a remote one.

Editors that can only launch a local command (Zed, JetBrains, Neovim) run ``accord bridge
wss://host/acp``; :func:`run_bridge` forwards every message between the editor's transport
(stdio) and the remote agent's, unchanged, through a
:class:`~accord.remote.ReconnectingTransport`, so a dropped network is reconnected and the
editor's sessions resumed without the editor noticing more than a status line on stderr and
an error for a request that was in flight. A line from the editor that is not JSON is
answered with the JSON-RPC parse error here, as any agent would.

Above: the CLI (``accord bridge``). Below: :mod:`._client`, :mod:`._reconnect`.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import anyio

from ..errors import TransportError
from ..transports import MalformedFrame, Transport
from ._client import open_remote

__all__ = ("run_bridge",)


async def run_bridge(
    local: Transport,
    url: str,
    *,
    token: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    on_status: Callable[[str], None] | None = None,
) -> None:
    """Forward between ``local`` and the agent at ``url`` until either side ends.

    Raises:
        ConnectionRefused: the server refused the first connection (401: the token), or
            (over HTTP, where nothing is sent before the editor's first message) refused
            or redirected that message.
        TransportError: the remote agent could not take a message and will not again
            (the server answered garbage, or reconnecting gave up).
        OSError: the server cannot be reached at first.
    """
    failed: list[TransportError] = []
    async with (
        open_remote(
            url, token=token, ssl_context=ssl_context, reconnect=True, on_status=on_status
        ) as remote,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(_editor_to_agent, local, remote, tg.cancel_scope, failed)
        tg.start_soon(_agent_to_editor, remote, local, tg.cancel_scope)
    if failed:
        raise failed[0]


async def _editor_to_agent(
    local: Transport, remote: Transport, scope: anyio.CancelScope, failed: list[TransportError]
) -> None:
    try:
        while True:
            message = await local.receive()
            if isinstance(message, MalformedFrame):
                await local.send(_parse_error(message))
                continue
            try:
                await remote.send(message)
            except TransportError as exc:
                # The reconnecting transport raises only once it has given up: say why.
                failed.append(exc)
                return
    except (anyio.EndOfStream, TransportError, anyio.BrokenResourceError):
        pass
    finally:
        scope.cancel()


async def _agent_to_editor(remote: Transport, local: Transport, scope: anyio.CancelScope) -> None:
    try:
        while True:
            message = await remote.receive()
            if isinstance(message, MalformedFrame):
                continue  # the remote connection answers its own malformed frames
            await local.send(message)
    except (anyio.EndOfStream, TransportError, anyio.BrokenResourceError):
        pass
    finally:
        scope.cancel()


def _parse_error(frame: MalformedFrame) -> dict[str, Any]:
    envelope = frame.envelope or {}
    request_id = envelope.get("id")
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        request_id = None
    message = "Parse error" if frame.code == -32700 else "Invalid Request"
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": frame.code, "message": message, "data": frame.reason},
    }

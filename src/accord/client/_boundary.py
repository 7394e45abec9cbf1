"""Where a prompt turn ends in the stream of updates: a marker in notification order.

The JSON-RPC connection hands a ``session/prompt`` answer to its caller only after every
notification received before it was handled, but notifications received *after* the answer may
be handled before the caller resumes. So whether an update sent right after the answer lands
in the finished turn would depend on scheduling. To make the boundary exact, this transport
wrapper watches the wire: when the answer to a ``session/prompt`` arrives, it passes the answer
on and then delivers a marker notification (:data:`PROMPT_ANSWERED`, with a per-connection
token and the request id). The marker is handled in notification order, right after the
updates that preceded the answer and before any that followed, and the session closes the
turn to updates there.

The marker never crosses the wire (a process-wide wire observer does see it, as an extension
notification). A connection-level hook ("run this in notification order when the answer to
that request arrives") would make this wrapper unnecessary.

Above: :class:`~accord.client._handlers.Hub`, which handles the marker and learns each prompt's
request id from :meth:`TurnBoundaryTransport.send`. Below: any transport.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, cast

from ..jsonrpc import is_request_id
from ..transports import BackgroundWriterTransport, BatchTransport, Transport

__all__ = ("PROMPT_ANSWERED", "TurnBoundaryTransport")

#: The marker's method name (an extension notification, so it is routed like one).
PROMPT_ANSWERED = "_accord/client/prompt_answered"


class TurnBoundaryTransport:
    """Wraps a transport; see the module docstring.

    Args:
        inner: the transport to the agent.
        on_prompt_sent: called with ``(session_id, request_id)`` as a prompt is sent.
    """

    def __init__(self, inner: Transport, on_prompt_sent: Callable[[str, Any], None]) -> None:
        self.inner = inner
        self._batch_inner = inner if isinstance(inner, BatchTransport) else None
        #: Marks markers as ours (an agent cannot forge one).
        self.token = secrets.token_hex(8)
        self._on_prompt_sent = on_prompt_sent
        self._prompts: dict[Any, str] = {}
        self._marker: dict[str, Any] | None = None

    async def run_writer(self) -> None:
        """Run the inner transport's background writer, if it has one (coalesced writes)."""
        if isinstance(self.inner, BackgroundWriterTransport):
            await self.inner.run_writer()

    async def send(self, message: dict[str, Any]) -> None:
        """Send a message; remember the id of each ``session/prompt``."""
        if message.get("method") == "session/prompt":
            request_id = message.get("id")
            session_id: str = message["params"]["sessionId"]
            self._prompts[request_id] = session_id
            self._on_prompt_sent(session_id, request_id)
        await self.inner.send(message)

    async def receive(self) -> Any:
        """The next message, or the marker that follows the answer to a prompt."""
        marker = self._marker
        if marker is not None:
            self._marker = None
            return marker
        message: Any = await self.inner.receive()
        if self._prompts and isinstance(message, dict) and "method" not in message:
            fields = cast("dict[str, Any]", message)
            request_id: Any = fields.get("id")
            # Only a real id can name a prompt: a list does not hash, true equals 1.
            session_id = self._prompts.pop(request_id, None) if is_request_id(request_id) else None
            if session_id is not None:
                self._marker = self._make_marker(session_id, request_id)
        return cast(Any, message)

    async def receive_batch(self, max_messages: int) -> list[Any]:
        """The messages ready now, each prompt's answer followed by its marker."""
        inner = self._batch_inner
        if inner is None:
            return [await self.receive()]
        if self._marker is not None:
            marker, self._marker = self._marker, None
            return [marker]
        batch = await inner.receive_batch(max_messages)
        if not self._prompts:
            return batch
        out: list[Any] = []
        for message in batch:
            out.append(message)
            if self._prompts and isinstance(message, dict) and "method" not in message:
                fields = cast("dict[str, Any]", message)
                request_id: Any = fields.get("id")
                session_id = (
                    self._prompts.pop(request_id, None) if is_request_id(request_id) else None
                )
                if session_id is not None:
                    out.append(self._make_marker(session_id, request_id))
        return out

    def _make_marker(self, session_id: str, request_id: Any) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "method": PROMPT_ANSWERED,
            "params": {"token": self.token, "sessionId": session_id, "id": request_id},
        }

    async def aclose(self) -> None:
        """Close the transport underneath."""
        await self.inner.aclose()

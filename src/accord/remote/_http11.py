"""HTTP/1.1 over an anyio byte stream with h11: read one request or response, write one back.

The served agent's request loop and the Streamable HTTP client both use these small helpers,
so each sees whole events (a request head, a body bounded by the message limit) and never
touches bytes. h11 has no I/O; this module is the pump.

Above: :mod:`._server`, :mod:`._streamable`, :mod:`._client`. Below: h11, anyio.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import anyio
import anyio.abc
import h11

from ._request_head import HeadFraming

__all__ = (
    "BadFraming",
    "BodyTooLarge",
    "HttpChannel",
    "header_map",
)

_READ_SIZE = 65536


class BodyTooLarge(Exception):
    """A request or response body is over the message limit."""


class BadFraming(h11.RemoteProtocolError):
    """A request head whose lines h11 would accept but this server refuses (a bare LF, a
    folded header line); its message is the reason, safe to send back (no client bytes)."""


def header_map(headers: Iterable[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """Headers as a dict with lower-case names (a repeated header keeps its first value)."""
    result: dict[bytes, bytes] = {}
    for name, value in headers:
        result.setdefault(name.lower(), value)
    return result


class HttpChannel:
    """One HTTP/1.1 connection (either role): h11 state plus the socket."""

    def __init__(
        self, stream: anyio.abc.ByteStream, role: Any, *, max_header_bytes: int = 16384
    ) -> None:
        """Wrap ``stream``; ``role`` is ``h11.SERVER`` or ``h11.CLIENT``.

        As a server it checks each request head's line framing before h11 reads it
        (:class:`~._request_head.HeadFraming`).
        """
        self.stream = stream
        self.h11 = h11.Connection(role, max_incomplete_event_size=max_header_bytes)
        self._framing = HeadFraming() if role is h11.SERVER else None
        self._framing_idle = False  # whether _framing is checking the current head

    async def next_event(self) -> Any:
        """The next h11 event, reading as needed (``h11.ConnectionClosed`` at EOF).

        Raises:
            h11.RemoteProtocolError: the peer sent malformed HTTP (:class:`BadFraming` for
                a head this server refuses though h11 would not).
        """
        while True:
            framing = self._head_framing()
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                if isinstance(event, h11.Request):
                    self._framing_idle = False
                return event
            try:
                data = await self.stream.receive(_READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                data = b""
            if framing is not None:
                self._check_framing(framing, data)
            self.h11.receive_data(data)

    def _head_framing(self) -> HeadFraming | None:
        """The framing check for the head being read, if one is being read; a new head's
        check first runs over what h11 already holds (a request pipelined behind the last)."""
        if self._framing is None or self.h11.their_state is not h11.IDLE:
            return None
        if not self._framing_idle:
            self._framing.restart()
            self._framing_idle = True
            self._check_framing(self._framing, self.h11.trailing_data[0])
        return self._framing

    @staticmethod
    def _check_framing(framing: HeadFraming, data: bytes) -> None:
        if framing.done:
            return
        problem = framing.feed(data)
        if problem is not None:
            raise BadFraming(problem.reason, error_status_hint=problem.status)

    async def read_body(self, limit: int) -> bytes:
        """The rest of the current message's body, at most ``limit`` bytes.

        Raises:
            BodyTooLarge: the body is over ``limit``.
            h11.RemoteProtocolError: the peer sent malformed HTTP or closed mid-body.
        """
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > limit:
                    raise BodyTooLarge
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks)
            else:
                raise h11.RemoteProtocolError("the connection closed in the middle of a body")

    async def send(self, event: Any) -> None:
        """Write one h11 event.

        Raises:
            anyio.BrokenResourceError: the peer is gone.
        """
        data = cast("bytes | None", self.h11.send(event))
        if data:
            await self.stream.send(data)

    async def respond(
        self,
        status: int,
        body: bytes = b"",
        headers: Iterable[tuple[str, str]] = (),
        *,
        content_type: str = "text/plain; charset=utf-8",
    ) -> None:
        """Send a whole response: ``status``, ``headers``, ``body`` (with its length)."""
        head = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        if body or status not in (202, 204):
            head.append((b"content-type", content_type.encode()))
        head.append((b"content-length", str(len(body)).encode()))
        await self.send(h11.Response(status_code=status, headers=head))
        if body:
            await self.send(h11.Data(data=body))
        await self.send(h11.EndOfMessage())

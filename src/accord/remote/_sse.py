"""Server-Sent Events decoding, with no I/O: bytes in, event data out.

Only what ACP's event streams use: ``data:`` lines (joined with newlines), the blank line that
ends an event, and ``:`` comments (heartbeats), which are skipped. ``event:``, ``id:`` and
``retry:`` fields are read and ignored. A line longer than the limit is an error, so a peer
that never ends a line cannot exhaust memory.

Above: :mod:`._http_client`. Below: nothing.
"""

from __future__ import annotations

__all__ = ("SseDecoder", "SseTooLarge")


class SseTooLarge(Exception):
    """An event (or a line) is over the size limit."""


class SseDecoder:
    """Feed bytes, get the ``data`` of each complete event."""

    def __init__(self, max_event_bytes: int) -> None:
        """A decoder refusing events larger than ``max_event_bytes``."""
        self._max = max_event_bytes
        self._buffer = bytearray()
        self._data: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The events completed by ``chunk`` (each event's data, lines joined by ``\\n``).

        Raises:
            SseTooLarge: an event or a line is over the limit.
        """
        self._buffer += chunk
        events: list[bytes] = []
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end < 0:
                break
            line = bytes(self._buffer[start:end]).removesuffix(b"\r")
            start = end + 1
            if not line:
                if self._data:
                    events.append(b"\n".join(self._data))
                self._data, self._size = [], 0
            elif line.startswith(b"data:"):
                value = line[5:]
                value = value[1:] if value.startswith(b" ") else value
                self._size += len(value)
                if self._size > self._max:
                    raise SseTooLarge
                self._data.append(value)
        del self._buffer[:start]
        if len(self._buffer) > self._max:
            raise SseTooLarge
        return events

"""The served agent's limits, each with the reason for its default.

Above: :mod:`._server`, :mod:`._websocket`, :mod:`._streamable`. Below: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("ServerLimits",)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """Bounds on what one client may make the server hold or wait for.

    Attributes:
        max_message_bytes: largest JSON-RPC message (WebSocket message or POST body). Images
            and embedded files travel base64 inside a prompt, so this is generous, yet bounded
            so a peer cannot exhaust memory: over it, 413 (HTTP) or close 1009 (WebSocket).
        max_header_bytes: the request line and headers together; real clients send well
            under 8 KiB, so anything far beyond is hostile (431).
        max_headers: header fields in one request; a real client sends about ten (431).
        max_connections_per_token: live connections (WebSocket or HTTP) one token may hold;
            one leaked token cannot take all the server's memory (429 past it).
        idle_timeout: seconds a connection may go with no message either way (a request, an
            answer or a notification, from the client or the agent) before it is closed:
            WebSocket pings and pongs, SSE heartbeat comments and a GET held open are not
            messages. A turn still running on the agent is not affected (its session runs on
            and can be resumed). ``accord serve --idle-timeout``.
        heartbeat_interval: seconds between WebSocket pings and SSE comment lines; keeps
            proxies that cut quiet connections (often at 60 s) from doing so, and finds dead
            peers. A WebSocket peer that has not answered a ping by the next one is gone; a
            peer (WebSocket or event stream) whose socket takes nothing of what waits for it
            for a whole interval has stopped reading, and its connection is closed.
        request_timeout: seconds a client may take to send one request's head and body
            (slow-loris protection); the long-lived streams are not bounded by it.
        sse_buffer: messages held for an HTTP stream no GET reads (a session stream
            before its GET arrives, or after it broke); past it the connection is closed
            rather than growing without bound. While a GET reads the stream, a burst past
            it makes the agent wait for the reader (backpressure, as over WebSocket).
        sse_buffer_bytes: the same bound in bytes (the events as they would be written); a
            few long messages reach it well before ``sse_buffer``. A read stream holds at
            most 1 MiB queued and 1 MiB being written, whatever this says.
        max_unauthenticated_per_address: sockets one client address (an IPv6 /64) may hold
            before its first request shows the token; past it the address's oldest such
            socket is closed (:mod:`._admission`), so a flood evicts itself, not real clients.
        max_unauthenticated: the same bound over all addresses; under the default open-file
            limit (1,024) with room left for the authenticated connections.
        max_streams_per_connection: GET event streams one Streamable HTTP connection may have
            open at once (its own and one per session); each holds a socket and a buffer.
    """

    max_message_bytes: int = 16 * 1024 * 1024
    max_header_bytes: int = 16 * 1024
    max_headers: int = 100
    max_connections_per_token: int = 64
    idle_timeout: float = 600.0
    heartbeat_interval: float = 20.0
    request_timeout: float = 30.0
    sse_buffer: int = 8192
    sse_buffer_bytes: int = 4 * 1024 * 1024
    max_unauthenticated_per_address: int = 32
    max_unauthenticated: int = 512
    max_streams_per_connection: int = 32

"""A TCP proxy on loopback between a client and a served agent, for the outage tests.

:meth:`CuttableProxy.cut` drops every connection open now (both ends at once, as a network
outage would) and goes on accepting new ones; :meth:`CuttableProxy.hold` stops passing what
the agent sends on to the client (it waits in the proxy and the socket buffers, as on a stalled
link) until :meth:`CuttableProxy.release`; what the client sends goes through all along.
:meth:`CuttableProxy.stop_admitting` makes new connections wait before they reach the agent
(until :meth:`CuttableProxy.admit`); :meth:`CuttableProxy.refuse` answers every new one with
``401`` (as a server whose token changed would).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import anyio.abc

_UNAUTHORIZED = (
    b"HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
    b"Connection: close\r\n\r\nUnauthorized\n"
)


class CuttableProxy:
    """A TCP proxy on loopback to port ``target`` (see the module docstring)."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self.connections = 0
        self._open: list[anyio.abc.SocketStream] = []
        self._flowing = anyio.Event()
        self._flowing.set()
        self._admitting = anyio.Event()
        self._admitting.set()
        self._refusing = False
        #: Set when a connection waits to be admitted.
        self.knocked = anyio.Event()

    def url(self, url: str) -> str:
        """``url`` (of the agent) with its host and port replaced by the proxy's."""
        scheme, rest = url.split("://", 1)
        path = rest.partition("/")[2]
        return f"{scheme}://127.0.0.1:{self.port}/{path}"

    async def cut(self) -> None:
        for stream in self._open:
            await stream.aclose()
        self._open.clear()

    def hold(self) -> None:
        """Stop passing the agent's bytes on to the client (until :meth:`release`)."""
        if self._flowing.is_set():
            self._flowing = anyio.Event()

    def release(self) -> None:
        """Pass the agent's bytes on again, the held ones first."""
        self._flowing.set()

    def stop_admitting(self) -> None:
        """New connections wait, not yet connected to the agent (until :meth:`admit`)."""
        if self._admitting.is_set():
            self._admitting = anyio.Event()
        self.knocked = anyio.Event()

    def admit(self) -> None:
        """Connect the waiting connections, and the new ones, to the agent."""
        self._admitting.set()

    def refuse(self) -> None:
        """Answer every new connection (and the waiting ones) ``401`` and close it."""
        self._refusing = True
        self.admit()

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[CuttableProxy]:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(listener.serve, self._serve)
                try:
                    yield self
                finally:
                    # Closed before the group is cancelled: a cancelled close would take the
                    # place of what the body raised (and the group would swallow it).
                    self.release()
                    with anyio.CancelScope(shield=True):
                        await self.cut()
                    tg.cancel_scope.cancel()
        finally:
            await listener.aclose()

    async def _serve(self, client: anyio.abc.SocketStream) -> None:
        if not self._admitting.is_set():
            self.knocked.set()
            await self._admitting.wait()
        if self._refusing:
            async with client:
                await _read_request(client)  # all of it: closing on unread bytes resets
                await client.send(_UNAUTHORIZED)
            return
        upstream = await anyio.connect_tcp("127.0.0.1", self.target)
        self.connections += 1
        self._open += [client, upstream]

        async def pump(
            source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream, *, held: bool
        ) -> None:
            try:
                async for data in source:
                    if held:
                        await self._flowing.wait()
                    await sink.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
            finally:
                await sink.aclose()

        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(pump, client, upstream, held=False))
            tg.start_soon(functools.partial(pump, upstream, client, held=True))


async def _read_request(client: anyio.abc.SocketStream) -> None:
    """Read one HTTP request (its head, and as many body bytes as it declares)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += await client.receive()
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        body += await client.receive()

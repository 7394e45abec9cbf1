"""Transports: how JSON-RPC messages travel between an agent and a client.

Every transport implements the three-method :class:`Transport` protocol. Implementations:
an in-memory pair (:func:`memory_transport_pair`), newline-delimited JSON over byte streams
(:class:`StreamTransport`), this process's stdin/stdout (:func:`stdio_transport`) and a spawned
agent process (:func:`spawn_agent`). The connection (``accord.jsonrpc.Connection``) sits above;
framing (``accord.jsonrpc._framing``) below.
"""

from ._base import BackgroundWriterTransport as BackgroundWriterTransport
from ._base import BatchTransport as BatchTransport
from ._base import Transport as Transport
from ._memory import MemoryTransport as MemoryTransport
from ._memory import memory_transport_pair as memory_transport_pair
from ._stdio import stdio_transport as stdio_transport
from ._stream import StreamTransport as StreamTransport
from ._subprocess import SubprocessTransport as SubprocessTransport
from ._subprocess import spawn_agent as spawn_agent

__all__ = (
    "BackgroundWriterTransport",
    "BatchTransport",
    "MemoryTransport",
    "StreamTransport",
    "SubprocessTransport",
    "Transport",
    "memory_transport_pair",
    "spawn_agent",
    "stdio_transport",
)

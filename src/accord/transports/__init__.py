"""Transports: how JSON-RPC messages travel between an agent and a client.

Every transport implements the three-method :class:`Transport` protocol. Implementations:
an in-memory pair (:func:`memory_transport_pair`), newline-delimited JSON over byte streams
(:class:`StreamTransport`), this process's stdin/stdout (:func:`stdio_transport`) and a spawned
agent process (:func:`spawn_agent`). Framing (NDJSON lines to messages and back, with no I/O:
:class:`LineDecoder`, :func:`encode_message`, :func:`decode_line`, :class:`MalformedFrame`) and
byte streams over raw pipe descriptors (:class:`FdReceiveStream`, :class:`FdSendStream`) live
here too, and so do child processes in their own process group (:func:`spawn_group`, the
SIGTERM-to-SIGKILL ladder :func:`stop_group`, :func:`signal_group`, the UTF-8-safe
:class:`TailBuffer`), which the client's terminal host and the coder's command runner use too.
The JSON-RPC connection (``accord.jsonrpc.Connection``) sits above; below sit only
anyio, orjson and the operating system.
"""

from ._base import BackgroundWriterTransport as BackgroundWriterTransport
from ._base import BatchTransport as BatchTransport
from ._base import DirectReceiveTransport as DirectReceiveTransport
from ._base import Transport as Transport
from ._fd import FdReceiveStream as FdReceiveStream
from ._fd import FdSendStream as FdSendStream
from ._framing import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES
from ._framing import LineDecoder as LineDecoder
from ._framing import MalformedFrame as MalformedFrame
from ._framing import decode_line as decode_line
from ._framing import encode_message as encode_message
from ._memory import MemoryTransport as MemoryTransport
from ._memory import memory_transport_pair as memory_transport_pair
from ._process import GROUP_KILL_TIMEOUT as GROUP_KILL_TIMEOUT
from ._process import GROUP_TERMINATE_TIMEOUT as GROUP_TERMINATE_TIMEOUT
from ._process import TailBuffer as TailBuffer
from ._process import signal_group as signal_group
from ._process import spawn_group as spawn_group
from ._process import stop_group as stop_group
from ._stdio import stdio_transport as stdio_transport
from ._stream import StreamTransport as StreamTransport
from ._subprocess import SubprocessTransport as SubprocessTransport
from ._subprocess import spawn_agent as spawn_agent

__all__ = (
    "GROUP_KILL_TIMEOUT",
    "GROUP_TERMINATE_TIMEOUT",
    "MAX_MESSAGE_BYTES",
    "BackgroundWriterTransport",
    "BatchTransport",
    "DirectReceiveTransport",
    "FdReceiveStream",
    "FdSendStream",
    "LineDecoder",
    "MalformedFrame",
    "MemoryTransport",
    "StreamTransport",
    "SubprocessTransport",
    "TailBuffer",
    "Transport",
    "decode_line",
    "encode_message",
    "memory_transport_pair",
    "signal_group",
    "spawn_agent",
    "spawn_group",
    "stdio_transport",
    "stop_group",
)

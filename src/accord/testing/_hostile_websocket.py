"""A hostile WebSocket client for any ACP server at ``/acp``: frames no good client sends.

Each :class:`WebSocketAttack` upgrades a fresh connection (with the token), writes hostile
frames and checks what the server did: the close code it sent (RFC 6455, 7.4.1: 1002 for a
protocol error, 1007 for text that is not UTF-8, 1009 for a message too big), that it then
dropped the socket (a close handshake the client never completes must not hold it), or that
it went on serving (an ``initialize`` answered after pings interleaved in a fragmented
message, a ping flood, a binary frame it must ignore). One leaves the close handshake
hanging: the client sends its close, then reads nothing for a while (``silent``) and never
closes; the server must have answered and dropped the socket by the time the client reads.
:data:`WEBSOCKET_ATTACKS` is the kit; :func:`run_websocket_attack` plays one.

No accord server code is used: point it at any server speaking ACP over WebSocket.

Above: accord's remote tests, your own server's tests. Below: anyio, orjson.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import anyio
import orjson

from ._hostile_http import HttpTarget, connect_target

__all__ = (
    "WEBSOCKET_ATTACKS",
    "WebSocketAttack",
    "WebSocketOutcome",
    "run_websocket_attack",
)

_TEXT, _BINARY, _CONTINUATION, _CLOSE, _PING, _PONG = 1, 2, 0, 8, 9, 10


def frame(
    opcode: int,
    payload: bytes,
    *,
    fin: bool = True,
    mask: bool = True,
    rsv1: bool = False,
    declared: int | None = None,
) -> bytes:
    """One client frame; ``declared`` overrides the payload length in its header."""
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    size = len(payload) if declared is None else declared
    bit = 0x80 if mask else 0
    if size < 126:
        head = bytes((first, bit | size))
    elif size < 65536:
        head = bytes((first, bit | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((first, bit | 127)) + size.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = os.urandom(4)
    n = len(payload)
    keys = (key * (n // 4 + 1))[:n]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(keys, "big")).to_bytes(n, "big")
    return head + key + masked


def _initialize(request_id: int) -> bytes:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}},
        }
    )


@dataclass(frozen=True, slots=True)
class ServerFrame:
    """One frame the server sent."""

    opcode: int
    payload: bytes
    fin: bool


@dataclass(frozen=True, slots=True)
class WebSocketOutcome:
    """What the server did under one attack."""

    attack: str
    upgraded: bool
    frames: tuple[ServerFrame, ...]
    closed: bool
    problem: str = ""

    @property
    def passed(self) -> bool:
        """Whether the server did what it must."""
        return not self.problem

    @property
    def close_code(self) -> int | None:
        """The code of the server's close frame, if it sent one."""
        for f in self.frames:
            if f.opcode == _CLOSE:
                return struct.unpack("!H", f.payload[:2])[0] if len(f.payload) >= 2 else 1005
        return None

    def answered(self, request_id: int) -> bool:
        """Whether a text frame answered the request ``request_id``."""
        return request_id in _answered_ids(self.frames)


Check = Callable[[WebSocketOutcome], str]


@dataclass(frozen=True, slots=True)
class WebSocketAttack:
    """One attack: the upgrade's extra headers, the frames, and the check."""

    name: str
    description: str
    build: Callable[[int], Sequence[bytes]]
    check: Check
    headers: tuple[tuple[str, str], ...] = ()
    wait: float = field(default=0.0)
    #: Seconds the client reads nothing after its frames (and never closes): a server that
    #: waits for the client to complete the close handshake is still holding the socket.
    silent: float = 0.0
    #: Requests whose answers the attack waits for: until they come (or the server closes),
    #: silence does not end the reading, only the deadline does (a loaded server may pause
    #: longer than the quiet window while it works through a flood).
    awaits: tuple[int, ...] = ()


def _closes_with(*codes: int) -> Check:
    def check(outcome: WebSocketOutcome) -> str:
        code = outcome.close_code
        if code not in codes:
            return f"close code {code}, expected {'/'.join(map(str, codes))}"
        if not outcome.closed:
            return "the socket stayed open after the server's close frame"
        return ""

    return check


def _serves(*ids: int, not_ids: Sequence[int] = (), pong: bytes | None = None) -> Check:
    def check(outcome: WebSocketOutcome) -> str:
        if outcome.close_code is not None:
            return f"the server closed ({outcome.close_code}) instead of serving"
        for request_id in ids:
            if not outcome.answered(request_id):
                return f"request {request_id} was not answered"
        for request_id in not_ids:
            if outcome.answered(request_id):
                return f"request {request_id} (in a binary frame) was answered"
        if pong is not None and not any(
            f.opcode == _PONG and f.payload == pong for f in outcome.frames
        ):
            return "the interleaved ping was not answered"
        return ""

    return check


def _no_extension(outcome: WebSocketOutcome) -> str:
    return _serves(0)(outcome)


def _attacks() -> dict[str, WebSocketAttack]:
    init = _initialize(0)
    items = [
        WebSocketAttack(
            "invalid-utf8",
            "a text frame that is not UTF-8",
            lambda limit: [frame(_TEXT, b'{"jsonrpc":"2.0","method":"\xff\xfe"}')],
            _closes_with(1007),
        ),
        WebSocketAttack(
            "unmasked-frame",
            "a client frame without a mask",
            lambda limit: [frame(_TEXT, init, mask=False)],
            _closes_with(1002),
        ),
        WebSocketAttack(
            "continuation-first",
            "a continuation frame with no message to continue",
            lambda limit: [frame(_CONTINUATION, init)],
            _closes_with(1002),
        ),
        WebSocketAttack(
            "fragmented-ping",
            "a ping split over frames (control frames may not be fragmented)",
            lambda limit: [frame(_PING, b"x", fin=False)],
            _closes_with(1002),
        ),
        WebSocketAttack(
            "oversize-ping",
            "a ping of 200 bytes (control frames carry at most 125)",
            lambda limit: [frame(_PING, b"x" * 200)],
            _closes_with(1002),
        ),
        WebSocketAttack(
            "bad-close-code",
            "a close frame with the reserved code 999",
            lambda limit: [frame(_CLOSE, struct.pack("!H", 999))],
            _closes_with(1002),
        ),
        WebSocketAttack(
            "compressed-frame",
            "a frame with RSV1 set though no compression was negotiated",
            lambda limit: [frame(_TEXT, init, rsv1=True)],
            _closes_with(1002),
        ),
        WebSocketAttack(
            "deflate-offered",
            "permessage-deflate offered in the upgrade: not negotiated, plain frames served",
            lambda limit: [frame(_TEXT, init)],
            _no_extension,
            headers=(("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"),),
        ),
        WebSocketAttack(
            "declared-oversize",
            "a frame whose header declares 2**62 bytes (none follow)",
            lambda limit: [frame(_TEXT, b"", declared=1 << 62)],
            _closes_with(1009),
        ),
        WebSocketAttack(
            "undeclared-oversize",
            "a message over the limit in fragments of 64 KiB, none over it on its own",
            lambda limit: [
                frame(_TEXT if i == 0 else _CONTINUATION, b"a" * 65536, fin=False)
                for i in range(limit // 65536 + 2)
            ],
            _closes_with(1009),
        ),
        WebSocketAttack(
            "empty-fragments",
            "a message begun, then empty continuation frames without end (no size, many pieces)",
            lambda limit: [
                frame(_TEXT, b"{", fin=False)
                + frame(_CONTINUATION, b"", fin=False) * (limit // 32 + 2)
            ],
            _closes_with(1009),
            wait=2.0,
        ),
        WebSocketAttack(
            "interleaved-ping",
            "a ping between the fragments of a message: answered, the message served",
            lambda limit: [
                frame(_TEXT, init[:10], fin=False),
                frame(_PING, b"between"),
                frame(_CONTINUATION, init[10:]),
            ],
            _serves(0, pong=b"between"),
        ),
        WebSocketAttack(
            "binary-frame",
            "an initialize in a binary frame (ignored), then one in a text frame",
            lambda limit: [frame(_BINARY, _initialize(7)), frame(_TEXT, init)],
            _serves(0, not_ids=[7]),
        ),
        WebSocketAttack(
            "ping-flood",
            "10,000 pings, then an initialize",
            lambda limit: [frame(_PING, b"p") for _ in range(10_000)] + [frame(_TEXT, init)],
            _serves(0),
            wait=2.0,
            awaits=(0,),
        ),
        WebSocketAttack(
            "close-never-completed",
            "a message over the limit; the client never answers the server's close",
            lambda limit: [frame(_TEXT, b"a" * (limit + 1))],
            _closes_with(1009),
        ),
        WebSocketAttack(
            "client-close-never-read",
            "the client sends a close (1000), then reads nothing for 3 s, nor closes",
            lambda limit: [frame(_TEXT, init), frame(_CLOSE, struct.pack("!H", 1000))],
            _closes_with(1000),
            silent=3.0,
        ),
    ]
    return {a.name: a for a in items}


#: The WebSocket attacks by name.
WEBSOCKET_ATTACKS = MappingProxyType(_attacks())


def _answered_ids(frames: Sequence[ServerFrame]) -> set[object]:
    """The ids of the JSON-RPC messages in ``frames``' text frames."""
    ids: set[object] = set()
    for f in frames:
        if f.opcode == _TEXT:
            try:
                message = orjson.loads(f.payload)
            except orjson.JSONDecodeError:
                continue
            if isinstance(message, dict):
                ids.add(message.get("id"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return ids


def _parse_frames(data: bytes, at: int = 0) -> tuple[list[ServerFrame], int]:
    """The complete frames in ``data`` from offset ``at``, and the offset after them."""
    frames: list[ServerFrame] = []
    while at + 2 <= len(data):
        start = at
        first, second = data[at], data[at + 1]
        size = second & 0x7F
        at += 2
        if size == 126:
            size = int.from_bytes(data[at : at + 2], "big")
            at += 2
        elif size == 127:
            size = int.from_bytes(data[at : at + 8], "big")
            at += 8
        if second & 0x80:
            at += 4  # a masked server frame is a protocol error; read past it anyway
        if at + size > len(data):
            return frames, start
        frames.append(ServerFrame(first & 0x0F, data[at : at + size], bool(first & 0x80)))
        at += size
    return frames, at


async def run_websocket_attack(
    target: HttpTarget,
    attack: WebSocketAttack,
    *,
    max_message_bytes: int = 16 * 1024 * 1024,
    closing: float = 10.0,
) -> WebSocketOutcome:
    """Play ``attack`` on a fresh upgraded connection and check what the server did.

    ``max_message_bytes`` is the server's message limit (the oversize attacks pass it);
    after the frames the server has ``target.quiet`` seconds of silence (plus the attack's
    own wait) to answer, and ``closing`` seconds to drop the socket after its close frame
    (after a ``silent`` attack's silence, what it sent meanwhile is read first).
    """
    extra = "".join(f"{k}: {v}\r\n" for k, v in attack.headers)
    upgrade = (
        f"GET {target.path} HTTP/1.1\r\nHost: {target.authority}\r\n"
        f"Authorization: Bearer {target.token}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        f"{extra}\r\n"
    ).encode("latin-1")
    buffer = b""
    closed = False
    async with await connect_target(target) as stream:
        await stream.send(upgrade)
        with anyio.move_on_after(closing):
            while b"\r\n\r\n" not in buffer:
                try:
                    buffer += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    break
        head, _, buffer = buffer.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            return WebSocketOutcome(attack.name, False, (), True, f"no upgrade: {head[:40]!r}")
        if b"sec-websocket-extensions" in head.lower():
            return WebSocketOutcome(attack.name, True, (), False, "an extension was negotiated")

        async def write() -> None:
            try:
                for data in attack.build(max_message_bytes):
                    await stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass

        frames: list[ServerFrame] = []
        offset = 0
        saw_close = False
        if attack.silent:
            await write()
            await anyio.sleep(attack.silent)  # the attack: nothing read, the socket held
        async with anyio.create_task_group() as tg:
            if not attack.silent:
                tg.start_soon(write)
            quiet = target.quiet + attack.wait
            pending = set(attack.awaits)
            deadline = anyio.current_time() + closing + quiet
            while anyio.current_time() < deadline:
                parsed, offset = _parse_frames(buffer, offset)
                frames += parsed
                saw_close = saw_close or any(f.opcode == _CLOSE for f in parsed)
                pending.difference_update(_answered_ids(parsed))
                waiting = bool(pending) and not saw_close
                silence = closing if saw_close else quiet
                with anyio.move_on_after(
                    deadline - anyio.current_time() if waiting else silence
                ) as scope:
                    try:
                        buffer += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                        closed = True
                        break
                if scope.cancelled_caught:
                    break
            tg.cancel_scope.cancel()
    frames += _parse_frames(buffer, offset)[0]
    outcome = WebSocketOutcome(attack.name, True, tuple(frames), closed)
    problem = attack.check(outcome)
    return WebSocketOutcome(attack.name, True, tuple(frames), closed, problem)

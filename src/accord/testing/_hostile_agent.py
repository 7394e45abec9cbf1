"""A hostile agent, for testing ACP clients: scripted attacks played at the wire level.

:func:`run_hostile_agent` plays one attack against a client over any transport (hand the
other end to the client under test); :func:`play_hostile_agent` plays several, one per
prompt; ``python -m accord.testing.hostile_agent [--attack NAME]`` runs it as an agent
command over stdio, so any ACP client can be pointed at it. It answers ``initialize`` and
every ``session/new``, waits for a ``session/prompt`` and then, inside that turn, does what a
broken or malicious agent would: ask for files outside the session's roots, answer with ids of
the wrong type, flood updates for unknown sessions, ask an ambiguous permission question, send
terminal escape sequences in text and titles, ask for a terminal command holding a NUL, send
lone surrogates; and at the level of bytes: a line over the client's message limit, a message
trickled byte by byte, a line that never ends, a flood of notifications. It then ends the turn
and checks the client still answers a request. Every request it made and the client's answer
are returned in a :class:`HostileReport`, for the test to judge (a well-behaved client answers
each with an error and never with the content of a file outside its roots).

The byte-level attacks (``huge-message``, ``slow-message``, ``endless-line`` and the lone
surrogate) write raw bytes, so they need a transport over a byte stream (stdio, pipes,
a subprocess: :class:`~accord.transports.StreamTransport`); on another transport they do
nothing. Sizes are :class:`HostileOptions`: the limit to exceed is the client's own
(``max_message_bytes``, 64 MiB by default, as accord's).

Above: the user's tests (and accord's own, in ``tests/client/test_hostile_agent.py``), and
:mod:`accord.testing.hostile_agent` (the command). Below: a
:class:`~accord.transports.Transport`; nothing else of ours.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import anyio

from ..transports import MAX_MESSAGE_BYTES, Transport

__all__ = (
    "HOSTILE_ATTACKS",
    "HostileExchange",
    "HostileOptions",
    "HostileReport",
    "play_hostile_agent",
    "run_hostile_agent",
)

#: How long the hostile agent waits for the client's answer to one of its requests.
WAIT_SECONDS = 10.0

#: Bytes written at a time by the byte-level attacks.
_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class HostileOptions:
    """How big and how slow the byte-level attacks are.

    Attributes:
        max_message_bytes: the client's limit on one line; ``huge-message`` sends lines just
            over it.
        endless_bytes: how much of the never-ending line ``endless-line`` writes before it
            finally ends it (default: four times ``max_message_bytes``).
        never_end: ``endless-line`` never ends its line: it writes until the client closes
            the pipe (the kit then stops playing).
        trickle_delay: seconds between the bytes of ``slow-message``.
        flood: notifications sent by ``notification-flood``.
    """

    max_message_bytes: int = MAX_MESSAGE_BYTES
    endless_bytes: int | None = None
    never_end: bool = False
    trickle_delay: float = 0.002
    flood: int = 20_000


@dataclass(frozen=True, slots=True)
class HostileExchange:
    """One request the hostile agent made and the client's answer (``None`` if none came)."""

    request: dict[str, Any]
    answer: dict[str, Any] | None


@dataclass(slots=True)
class HostileReport:
    """What happened during one attack.

    Attributes:
        attack: the attack's name (a key of :data:`HOSTILE_ATTACKS`).
        session_id: the session the attack ran in.
        exchanges: the requests made during the turn, with the client's answers.
        alive: whether the client still answered a request after the attack.
        sent_bytes: bytes the attack wrote at the byte level (the huge and endless lines).
    """

    attack: str
    session_id: str = "hostile-session"
    exchanges: list[HostileExchange] = field(default_factory=list[HostileExchange])
    alive: bool = False
    sent_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        """The report as JSON (what the command writes with ``--report``)."""
        return {
            "attack": self.attack,
            "sessionId": self.session_id,
            "alive": self.alive,
            "sentBytes": self.sent_bytes,
            "exchanges": [{"request": e.request, "answer": e.answer} for e in self.exchanges],
        }


class _ByteSink(Protocol):
    async def send(self, item: bytes) -> None: ...


class _ClientGone(Exception):
    """The client closed its end while an attack was writing."""


class _Wire:
    def __init__(self, transport: Transport, options: HostileOptions) -> None:
        self.transport = transport
        self.options = options
        self.report = HostileReport("")
        self.next_id = 1000
        self.sessions = 0
        #: The ``cwd`` of each session the client created.
        self.cwds: dict[str, str] = {}
        #: Requests from the client that arrived while an answer was awaited (a next prompt).
        self.held: deque[dict[str, Any]] = deque()

    async def send(self, message: dict[str, Any]) -> None:
        await self.transport.send({"jsonrpc": "2.0", **message})

    async def receive(self) -> dict[str, Any]:
        message: Any = await self.transport.receive()
        return cast("dict[str, Any]", message) if isinstance(message, dict) else {}

    def raw(self) -> _ByteSink | None:
        """The byte stream under the transport, for lines no serializer would write."""
        return cast("_ByteSink | None", getattr(self.transport, "_writer", None))

    async def write_raw(self, sink: _ByteSink, data: bytes) -> None:
        try:
            await sink.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise _ClientGone from exc

    async def next_prompt(self) -> dict[str, Any]:
        """Answer the client's set-up requests until it sends a prompt; return the prompt.

        No time limit: a person may be typing it.
        """
        while True:
            message = self.held.popleft() if self.held else await self.receive()
            method, request_id = message.get("method"), message.get("id")
            if method == "session/prompt":
                return message
            if request_id is None or method is None:
                continue  # a notification (cancel) or an answer nobody waits for
            if method == "initialize":
                result: dict[str, Any] = {"protocolVersion": 1, "agentCapabilities": {}}
            elif method == "session/new":
                self.sessions += 1
                suffix = "" if self.sessions == 1 else f"-{self.sessions}"
                result = {"sessionId": f"hostile-session{suffix}"}
                params = cast("dict[str, Any]", message.get("params") or {})
                self.cwds[result["sessionId"]] = str(params.get("cwd") or "/")
            else:
                await self.send(
                    {"id": request_id, "error": {"code": -32601, "message": "not here"}}
                )
                continue
            await self.send({"id": request_id, "result": result})

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Send a request and return the client's answer (other traffic is skipped)."""
        self.next_id += 1
        request = {"id": self.next_id, "method": method, "params": params}
        await self.send(request)
        return await self.answer_to({"jsonrpc": "2.0", **request})

    async def answer_to(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Wait for the client's answer to ``request`` (already sent) and record the exchange."""
        answer: dict[str, Any] | None = None
        with anyio.move_on_after(WAIT_SECONDS):
            while True:
                message = await self.receive()
                if "method" in message:
                    if "id" in message:
                        self.held.append(message)  # served after this answer
                    continue
                if message.get("id") == request["id"]:
                    answer = message
                    break
        self.report.exchanges.append(HostileExchange(request, answer))
        return answer

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        await self.send(
            {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
        )


Attack = Callable[[_Wire, str, str], Awaitable[None]]
"""One attack: played with the wire, the prompted session's id and its ``cwd``."""


def _text(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


async def _path_escape(wire: _Wire, session_id: str, cwd: str) -> None:
    for path in (
        f"{cwd}/../../../../etc/passwd",
        "/etc/passwd",
        f"{cwd}/a\0b",
        "relative/path.txt",
        cwd,
    ):
        await wire.ask("fs/read_text_file", {"sessionId": session_id, "path": path})
    await wire.ask(
        "fs/write_text_file",
        {"sessionId": session_id, "path": f"{cwd}/../hostile-escape.txt", "content": "x"},
    )


async def _bad_ids(wire: _Wire, session_id: str, cwd: str) -> None:
    for bad in ([0], {"id": 0}, True, 2.0, None):
        await wire.send({"id": bad, "result": {"stopReason": "refusal"}})
    await wire.send({"method": "$/cancel_request", "params": {"requestId": [1]}})


async def _unknown_sessions(wire: _Wire, session_id: str, cwd: str) -> None:
    chunk = "x" * 1_000_000
    for index in range(16):
        await wire.update(f"not-yet-{index}", _text(chunk))


async def _ambiguous_permission(wire: _Wire, session_id: str, cwd: str) -> None:
    options = [
        {"optionId": "x", "name": "Deny", "kind": "reject_once"},
        {"optionId": "x", "name": "Allow always", "kind": "allow_always"},
    ]
    await wire.ask(
        "session/request_permission",
        {"sessionId": session_id, "toolCall": {"toolCallId": "t1"}, "options": options},
    )
    hidden = [
        {"optionId": "deny", "name": "Deny\x1b[8m (allow always)\x1b[0m", "kind": "allow_always"}
    ]
    await wire.ask(
        "session/request_permission",
        {"sessionId": session_id, "toolCall": {"toolCallId": "t2"}, "options": hidden},
    )


async def _escape_sequences(wire: _Wire, session_id: str, cwd: str) -> None:
    await wire.update(session_id, _text("clipboard \x1b]52;c;aGk=\x07 title \x1b]0;pwned\x07"))
    await wire.update(session_id, _text("\x1b[2J\x1b[H\x1b[8mhidden\x1b[0m\r\x1b[1A"))
    await wire.update(
        session_id,
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t-esc",
            "title": "\x1b]0;title\x07\x1b[31mred",
            "status": "pending",
        },
    )


async def _terminal_nul(wire: _Wire, session_id: str, cwd: str) -> None:
    await wire.ask("terminal/create", {"sessionId": session_id, "command": "echo\0rm"})
    await wire.ask(
        "terminal/create", {"sessionId": session_id, "command": "echo", "args": ["a\0b"]}
    )


async def _lone_surrogate(wire: _Wire, session_id: str, cwd: str) -> None:
    sink = wire.raw()
    if sink is None:  # only a byte stream can carry the escape as JavaScript writes it
        return
    head = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
    tail = ',"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",'
    line = head + json.dumps(session_id) + tail + '"text":"cut \\ud83d"}}}}\n'
    await wire.write_raw(sink, line.encode())


async def _padded(wire: _Wire, sink: _ByteSink, head: bytes, size: int, tail: bytes) -> None:
    """Write ``head``, then ``x`` padding to ``size`` bytes in all, then ``tail``."""
    await wire.write_raw(sink, head)
    written = len(head)
    pad = b"x" * _CHUNK
    while written < size - len(tail):
        piece = pad[: min(_CHUNK, size - len(tail) - written)]
        await wire.write_raw(sink, piece)
        written += len(piece)
    await wire.write_raw(sink, tail)
    wire.report.sent_bytes += written + len(tail)


async def _huge_message(wire: _Wire, session_id: str, cwd: str) -> None:
    """A request and a notification, each one line just over the client's limit."""
    sink = wire.raw()
    if sink is None:
        return
    size = wire.options.max_message_bytes + 1024
    wire.next_id += 1
    request: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": wire.next_id,
        "method": "fs/read_text_file",
        "params": {"sessionId": session_id, "path": "/etc/passwd"},
    }
    # The envelope first (as serializers write it), the padding in a member after it.
    head = _line(request)[:-2] + b',"padding":"'
    await _padded(wire, sink, head, size, b'"}\n')
    recorded = {**request, "params": {**request["params"], "padding": f"<{size} bytes>"}}
    await wire.answer_to(recorded)
    update = _line(
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id}}
    )
    head = update[:-3] + b',"update":' + json.dumps(_text(""))[:-2].encode()
    await _padded(wire, sink, head, size, b'"}}}\n')


async def _slow_message(wire: _Wire, session_id: str, cwd: str) -> None:
    """A text chunk and then a request, each trickled one byte per write."""
    sink = wire.raw()
    if sink is None:
        return
    delay = wire.options.trickle_delay
    params: dict[str, Any] = {"sessionId": session_id, "update": _text("trickled")}
    chunk = _line({"jsonrpc": "2.0", "method": "session/update", "params": params})
    wire.next_id += 1
    request: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": wire.next_id,
        "method": "_hostile/trickled",
        "params": {},
    }
    for line in (chunk, _line(request)):
        for byte in line:
            await wire.write_raw(sink, bytes((byte,)))
            await anyio.sleep(delay)
    await wire.answer_to(request)


async def _endless_line(wire: _Wire, session_id: str, cwd: str) -> None:
    """A text chunk whose line never ends (or only after ``endless_bytes``)."""
    sink = wire.raw()
    if sink is None:
        return
    head = (
        _line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id}})[
            :-3
        ]
        + b',"update":'
        + json.dumps(_text(""))[:-2].encode()
    )
    await wire.write_raw(sink, head)
    written = len(head)
    options = wire.options
    limit = None if options.never_end else options.endless_bytes or 4 * options.max_message_bytes
    pad = b"x" * _CHUNK
    while limit is None or written < limit:
        piece = pad if limit is None else pad[: min(_CHUNK, limit - written)]
        await wire.write_raw(sink, piece)
        written += len(piece)
        wire.report.sent_bytes = written
    await wire.write_raw(sink, b'"}}}\n')


async def _notification_flood(wire: _Wire, session_id: str, cwd: str) -> None:
    """``flood`` text chunks as fast as the client takes them (``"0 1 2 …"``, in order)."""
    for index in range(wire.options.flood):
        await wire.update(session_id, _text(f"{index} "))


HOSTILE_ATTACKS: dict[str, Attack] = {
    "path-escape": _path_escape,
    "bad-ids": _bad_ids,
    "unknown-sessions": _unknown_sessions,
    "ambiguous-permission": _ambiguous_permission,
    "escape-sequences": _escape_sequences,
    "terminal-nul": _terminal_nul,
    "lone-surrogate": _lone_surrogate,
    "huge-message": _huge_message,
    "slow-message": _slow_message,
    "endless-line": _endless_line,
    "notification-flood": _notification_flood,
}
"""The attacks :func:`run_hostile_agent` knows, by name."""


async def play_hostile_agent(
    transport: Transport, attacks: Sequence[str], options: HostileOptions | None = None
) -> list[HostileReport]:
    """Play ``attacks`` (keys of :data:`HOSTILE_ATTACKS`) in turn, one per prompt.

    The client under test connects, creates sessions (each is answered) and prompts; each
    prompt's turn plays the next attack and ends with ``end_turn``; then the agent sends a
    ``_hostile/ping`` request: any answer (an error included) marks the client ``alive`` in
    that attack's report. Requests the kit does not serve are answered with -32601. When the
    client closes the connection, the reports so far are returned (the last one not alive).

    Raises:
        KeyError: no such attack (before anything is played).
    """
    plays = [(name, HOSTILE_ATTACKS[name]) for name in attacks]
    wire = _Wire(transport, options or HostileOptions())
    reports: list[HostileReport] = []
    for name, play in plays:
        try:
            prompt = await wire.next_prompt()
        except anyio.EndOfStream:
            return reports  # the client left before asking for more
        wire.report = report = HostileReport(name)
        reports.append(report)
        report.session_id = str(prompt.get("params", {}).get("sessionId", report.session_id))
        try:
            await play(wire, report.session_id, wire.cwds.get(report.session_id, "/"))
            await wire.send({"id": prompt["id"], "result": {"stopReason": "end_turn"}})
            answer = await wire.ask("_hostile/ping", {})
        except (_ClientGone, anyio.EndOfStream, anyio.BrokenResourceError):
            return reports  # the client closed the pipe (the only end of an endless line)
        report.exchanges.pop()  # the ping is not part of the attack
        report.alive = answer is not None
    return reports


async def run_hostile_agent(
    transport: Transport, attack: str, options: HostileOptions | None = None
) -> HostileReport:
    """Play ``attack`` (a key of :data:`HOSTILE_ATTACKS`) against the client at ``transport``.

    The client under test must connect, create a session and send one prompt; the attack runs
    inside that turn (see :func:`play_hostile_agent`).

    Raises:
        KeyError: no such attack.
    """
    return (await play_hostile_agent(transport, [attack], options))[0]

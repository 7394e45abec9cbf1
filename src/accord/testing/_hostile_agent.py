"""A hostile agent, for testing ACP clients: scripted attacks played at the wire level.

:func:`run_hostile_agent` plays one attack against a client over any transport (hand the
other end to the client under test, or run it in a subprocess over stdio). It answers
``initialize`` and ``session/new``, waits for a ``session/prompt`` and then, inside that
turn, does what a broken or malicious agent would: ask for files outside the session's roots,
answer with ids of the wrong type, flood updates for unknown sessions, ask an ambiguous
permission question, send terminal escape sequences in text and titles, ask for a terminal
command holding a NUL, send lone surrogates. It then ends the turn and checks the client still
answers a request. Every request it made and the client's answer are returned in a
:class:`HostileReport`, for the test to judge (a well-behaved client answers each with an
error and never with the content of a file outside its roots).

Above: the user's tests (and accord's own, in ``tests/client/test_hostile_agent.py``).
Below: a :class:`~accord.transports.Transport`; nothing else of ours.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import anyio

from ..transports import Transport

__all__ = ("HOSTILE_ATTACKS", "HostileExchange", "HostileReport", "run_hostile_agent")

#: How long the hostile agent waits for any one message from the client.
WAIT_SECONDS = 10.0


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
    """

    attack: str
    session_id: str = "hostile-session"
    exchanges: list[HostileExchange] = field(default_factory=list[HostileExchange])
    alive: bool = False


class _Wire:
    def __init__(self, transport: Transport, report: HostileReport) -> None:
        self.transport = transport
        self.report = report
        self.next_id = 1000

    async def send(self, message: dict[str, Any]) -> None:
        await self.transport.send({"jsonrpc": "2.0", **message})

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(WAIT_SECONDS):
            message: Any = await self.transport.receive()
        return cast("dict[str, Any]", message) if isinstance(message, dict) else {}

    async def expect(self, method: str) -> dict[str, Any]:
        while True:
            message = await self.receive()
            if message.get("method") == method:
                return message

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Send a request and return the client's answer (other traffic is skipped)."""
        self.next_id += 1
        request_id = self.next_id
        request = {"id": request_id, "method": method, "params": params}
        await self.send(request)
        answer: dict[str, Any] | None = None
        with anyio.move_on_after(WAIT_SECONDS):
            while True:
                message = await self.receive()
                if message.get("id") == request_id and "method" not in message:
                    answer = message
                    break
        self.report.exchanges.append(HostileExchange({"jsonrpc": "2.0", **request}, answer))
        return answer

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        await self.send(
            {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
        )


Attack = Callable[[_Wire, str, dict[str, Any]], Awaitable[None]]


def _text(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


async def _path_escape(wire: _Wire, session_id: str, new: dict[str, Any]) -> None:
    cwd = str(new.get("params", {}).get("cwd", "/"))
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


async def _bad_ids(wire: _Wire, session_id: str, new: dict[str, Any]) -> None:
    for bad in ([0], {"id": 0}, True, 2.0, None):
        await wire.send({"id": bad, "result": {"stopReason": "refusal"}})
    await wire.send({"method": "$/cancel_request", "params": {"requestId": [1]}})


async def _unknown_sessions(wire: _Wire, session_id: str, new: dict[str, Any]) -> None:
    chunk = "x" * 1_000_000
    for index in range(16):
        await wire.update(f"not-yet-{index}", _text(chunk))


async def _ambiguous_permission(wire: _Wire, session_id: str, new: dict[str, Any]) -> None:
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


async def _escape_sequences(wire: _Wire, session_id: str, new: dict[str, Any]) -> None:
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


async def _terminal_nul(wire: _Wire, session_id: str, new: dict[str, Any]) -> None:
    await wire.ask("terminal/create", {"sessionId": session_id, "command": "echo\0rm"})
    await wire.ask(
        "terminal/create", {"sessionId": session_id, "command": "echo", "args": ["a\0b"]}
    )


async def _lone_surrogate(wire: _Wire, session_id: str, new: dict[str, Any]) -> None:
    writer: Any = getattr(wire.transport, "_writer", None)
    if writer is None:  # only a byte stream can carry the escape as JavaScript writes it
        return
    head = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
    tail = ',"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",'
    line = head + json.dumps(session_id) + tail + '"text":"cut \\ud83d"}}}}\n'
    await writer.send(line.encode())


HOSTILE_ATTACKS: dict[str, Attack] = {
    "path-escape": _path_escape,
    "bad-ids": _bad_ids,
    "unknown-sessions": _unknown_sessions,
    "ambiguous-permission": _ambiguous_permission,
    "escape-sequences": _escape_sequences,
    "terminal-nul": _terminal_nul,
    "lone-surrogate": _lone_surrogate,
}
"""The attacks :func:`run_hostile_agent` knows, by name."""


async def run_hostile_agent(transport: Transport, attack: str) -> HostileReport:
    """Play ``attack`` (a key of :data:`HOSTILE_ATTACKS`) against the client at ``transport``.

    The client under test must connect, create one session and send one prompt; the attack
    runs inside that turn, which then ends with ``end_turn``. Finally the agent sends a
    ``_hostile/ping`` request: any answer (an error included) marks the client ``alive``.

    Raises:
        KeyError: no such attack.
        TimeoutError: the client sent nothing for ``WAIT_SECONDS`` while it was expected to.
    """
    play = HOSTILE_ATTACKS[attack]
    report = HostileReport(attack)
    wire = _Wire(transport, report)
    initialize = await wire.expect("initialize")
    await wire.send(
        {"id": initialize["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}}
    )
    new = await wire.expect("session/new")
    await wire.send({"id": new["id"], "result": {"sessionId": report.session_id}})
    prompt = await wire.expect("session/prompt")
    await play(wire, report.session_id, new)
    await wire.send({"id": prompt["id"], "result": {"stopReason": "end_turn"}})
    answer = await wire.ask("_hostile/ping", {})
    report.alive = answer is not None
    return report

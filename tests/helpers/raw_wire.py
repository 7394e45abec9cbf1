"""A client that speaks raw JSON lines to an agent process, for the wire-level attacks.

:func:`raw_agent` starts a command with pipes for stdin, stdout and stderr and yields a
:class:`RawPeer`: :meth:`RawPeer.send` writes one line (a JSON value, or bytes as they are),
:meth:`RawPeer.receive` reads the next message the agent wrote, and every line read is kept
in :attr:`RawPeer.lines` so a test can check what never reached the wire. Requests the agent
sends are recorded in :attr:`RawPeer.requests` and answered ``-32601``, so an agent waiting
for its client never hangs a test. The agent's stderr is collected in :attr:`RawPeer.stderr`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from helpers.timeouts import TIMEOUT


class RawPeer:
    """One agent process spoken to in raw lines."""

    def __init__(self, process: Process) -> None:
        self.process = process
        #: Every line the agent wrote on stdout, in order.
        self.lines: list[str] = []
        #: The requests the agent sent (each answered -32601).
        self.requests: list[dict[str, Any]] = []
        #: What the agent wrote on stderr so far.
        self.stderr = ""
        self._buffer = b""

    async def send(self, message: object) -> None:
        """Write ``message`` as one line: bytes as they are, anything else as JSON."""
        assert self.process.stdin is not None
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        await self.process.stdin.send(raw + b"\n")

    async def _line(self) -> str:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            chunk = await self.process.stdout.receive()
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        text = line.decode()
        self.lines.append(text)
        return text

    async def receive(self) -> dict[str, Any]:
        """The next response or notification the agent sent (its requests are answered)."""
        with anyio.fail_after(TIMEOUT):
            while True:
                message = json.loads(await self._line())
                if "method" in message and "id" in message:
                    self.requests.append(message)
                    error = {"code": -32601, "message": "not offered by this test"}
                    await self.send({"jsonrpc": "2.0", "id": message["id"], "error": error})
                    continue
                return message

    async def answer(
        self, ids: Sequence[object], *, skip: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, dict[str, Any]]:
        """The responses to ``ids`` (keyed by ``json.dumps(id)``), notifications skipped.

        A response for an id not in ``ids`` fails the test.
        """
        wanted = {json.dumps(i) for i in ids}
        found: dict[str, dict[str, Any]] = {}
        while len(found) < len(wanted):
            message = await self.receive()
            if "id" not in message or (skip is not None and skip(message)):
                continue
            key = json.dumps(message["id"])
            assert key in wanted and key not in found, f"unexpected response {message}"
            found[key] = message
        return found

    async def request(self, id_: object, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request and return its response (notifications in between skipped)."""
        await self.send({"jsonrpc": "2.0", "id": id_, "method": method, "params": dict(params)})
        return (await self.answer([id_]))[json.dumps(id_)]


@asynccontextmanager
async def raw_agent(
    command: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> AsyncGenerator[RawPeer]:
    """Run ``command`` and yield a :class:`RawPeer` on its pipes; on the way out its stdin
    is closed and it is waited for (killed after :data:`TIMEOUT`)."""
    async with await anyio.open_process(command, env=env, cwd=cwd) as process:
        peer = RawPeer(process)

        async def drain_stderr() -> None:
            assert process.stderr is not None
            async for text in TextReceiveStream(process.stderr, errors="replace"):
                peer.stderr += text

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(drain_stderr)
            try:
                yield peer
            finally:
                with anyio.CancelScope(shield=True):
                    assert process.stdin is not None
                    await process.stdin.aclose()
                    with anyio.move_on_after(TIMEOUT) as waited:
                        await process.wait()
                    if waited.cancelled_caught:
                        process.kill()
                        await process.wait()

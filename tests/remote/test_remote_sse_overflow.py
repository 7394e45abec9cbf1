"""A session stream nobody reads overflows its 8,192 messages: the connection closes, the
client resumes after its cursor and nothing is lost.

One runtime (grace 60 s) behind ``serve_remote`` on a loopback port, the default
``ServerLimits``. A raw Streamable HTTP client opens a session, GETs its stream, prompts, reads
the turn's first 20 chunks (keeping the last ``_meta["acp/cursor"]``) and hangs up the GET.
The turn then streams 9,000 small chunks (about 2 MB, under the 4 MiB byte bound): the
connection's stream for the session passes ``sse_buffer`` (8,192 messages), the server logs
that and closes the connection (its own GET ends, its id gets 404). The turn runs on for the
grace period. A new connection resumes the session with the cursor: the chunks it is sent,
after the 20 read before, are the turn's, each once, in order, to its last.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.abc
import orjson
import pytest
from _remote_support import event_stream, next_event, post_bytes, raw_request
from helpers.served_agent import TOKEN
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.remote import AccessPolicy, ServerLimits, serve_remote
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, Stream, WaitFor

pytestmark = pytest.mark.anyio

#: Chunks after the client stopped reading: more than ``sse_buffer`` (8,192) messages.
_AFTER = 9000


def _request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


async def _connection(port: int) -> tuple[str, anyio.abc.SocketStream]:
    """A new Streamable HTTP connection: its id and its own GET stream."""
    hello = {"protocolVersion": 1, "clientCapabilities": {}}
    answer = await raw_request(port, post_bytes(None, _request(0, "initialize", hello)))
    assert answer.status == 200, answer
    cid = answer.headers["acp-connection-id"]
    return cid, await event_stream(port, cid, None)


def _chunk(message: dict[str, object]) -> tuple[str, str] | None:
    """An ``agent_message_chunk``'s text and cursor; None for any other message."""
    if message.get("method") != "session/update":
        return None
    params = cast("dict[str, Any]", message["params"])
    update = params["update"]
    if update.get("sessionUpdate") != "agent_message_chunk":
        return None
    return update["content"]["text"], params["_meta"]["acp/cursor"]


async def _until_closed(stream: anyio.abc.SocketStream) -> None:
    """Read ``stream`` until the server closes it."""
    try:
        while True:
            await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError):
        return


class _Events:
    """The ``data:`` events of a GET's chunked SSE body, the chunk framing decoded."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.raw = bytearray()
        self.body = bytearray()
        self.cursor = ""

    async def _more(self) -> None:
        """Decode one more chunk of the transfer coding into ``body``."""
        while True:
            line_end = self.raw.find(b"\r\n")
            if line_end >= 0:
                size = int(bytes(self.raw[:line_end]).split(b";")[0], 16)
                if len(self.raw) >= line_end + 2 + size + 2:
                    start = line_end + 2
                    self.body += self.raw[start : start + size]
                    del self.raw[: start + size + 2]
                    return
            self.raw += await self.stream.receive()

    async def next(self) -> dict[str, object]:
        while True:
            end = self.body.find(b"\n\n")
            if end >= 0:
                event = bytes(self.body[:end])
                del self.body[: end + 2]
                for line in event.split(b"\n"):
                    if line.startswith(b"data: "):
                        return orjson.loads(line[6:])
                continue
            await self._more()

    async def chunks(self, count: int | None, last: str = "") -> list[str]:
        """Chunk texts: ``count`` of them, or up to and with ``last``; ``cursor`` the last."""
        texts: list[str] = []
        while count is None or len(texts) < count:
            found = _chunk(await self.next())
            if found is not None:
                texts.append(found[0])
                self.cursor = found[1]
                if found[0] == last:
                    break
        return texts


async def test_an_overflowing_stream_closes_its_connection_and_resume_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gate = anyio.Event()
    turn = [Stream(count=20, prefix="a"), WaitFor(gate), Stream(count=_AFTER, prefix="b")]
    engine = ScriptedEngine([[*turn, Say("end of turn")]])
    runtime = AgentRuntime(engine, store=MemorySessionStore(), grace=60)
    policy = AccessPolicy.build(TOKEN, loopback=True)
    limits = ServerLimits()
    assert limits.sse_buffer == 8192 and limits.sse_buffer < _AFTER
    cwd = str(tmp_path)
    with caplog.at_level(logging.WARNING, logger="accord.remote"), anyio.fail_after(TIMEOUT * 3):
        async with anyio.create_task_group() as tg:
            port = await tg.start(
                functools.partial(
                    serve_remote,
                    runtime.serve,
                    host="127.0.0.1",
                    port=0,
                    policy=policy,
                    limits=limits,
                )
            )
            cid, own = await _connection(port)
            new = _request(1, "session/new", {"cwd": cwd, "mcpServers": []})
            assert (await raw_request(port, post_bytes(cid, new))).status == 202
            created = await next_event(own, bytearray())
            sid = cast("dict[str, Any]", created["result"])["sessionId"]
            session_stream = await event_stream(port, cid, sid)
            prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
            answer = await raw_request(
                port, post_bytes(cid, _request(2, "session/prompt", prompt), sid)
            )
            assert answer.status == 202
            reader = _Events(session_stream)
            before = await reader.chunks(20)
            cursor = reader.cursor
            await session_stream.aclose()  # from here nobody reads the session's stream
            gate.set()
            # The connection is closed for the overflow: its own stream ends, its id is gone.
            await _until_closed(own)
            await own.aclose()
            gone = await raw_request(port, post_bytes(cid, _request(3, "session/list", {})))
            assert gone.status == 404
            # A new connection resumes the session after the cursor.
            cid2, own2 = await _connection(port)
            resumed_stream = await event_stream(port, cid2, sid)
            resume = {
                "sessionId": sid,
                "cwd": cwd,
                "mcpServers": [],
                "_meta": {"acp/cursor": cursor},
            }
            answer = await raw_request(
                port, post_bytes(cid2, _request(1, "session/resume", resume), sid)
            )
            assert answer.status == 202
            after = await _Events(resumed_stream).chunks(None, "end of turn")
            await resumed_stream.aclose()
            await own2.aclose()
            await runtime.aclose()
            tg.cancel_scope.cancel()
    expected = [f"a{n} " for n in range(20)] + [f"b{n} " for n in range(_AFTER)] + ["end of turn"]
    assert before + after == expected
    closed = [r.getMessage() for r in caplog.records if "over its bound" in r.getMessage()]
    assert closed and "8192 messages" in closed[0], closed

"""The soak's model: an OpenAI-compatible chat server in its own process, cheap per request.

``bench_soak.py`` starts it (``python benchmarks/_soak_model.py --chunks N --delay S``); it
prints its port on a line of its own and serves until SIGTERM, then prints ``summaries N``
(the compactions it summarised). Every ``POST
.../chat/completions`` with ``"stream": true`` is answered with server-sent events over chunked
HTTP/1.1 as OpenAI sends them: a role frame, ``--chunks`` content frames ``--delay`` seconds
apart carrying the numbered pieces of the last user message's tag (``<tag>c<n> ``, which the
client checks), a ``finish_reason`` frame, a usage frame when ``stream_options.include_usage``
asks for one (prompt tokens estimated as a quarter of the body's bytes), ``data: [DONE]``. A
request marked with a purpose (``x-accord-purpose``: the coder's session title) is answered 400,
so the engine takes its fallback, as :class:`accord.testing.FakeOpenAIServer` does without a side
script; except a compaction's summary request (purpose ``compact``, not streamed), answered with
a summary of :data:`SUMMARY_CHARS` characters whatever it summarises (``bench_long_session.py
--window``); ``GET .../models`` lists ``fake-model``.

Why not ``FakeOpenAIServer`` in the bench process: it keeps every request's parsed body (a soak
of 10,000 turns of growing histories holds gigabytes) and runs a thread per connection polling
every 20 ms, beside the client's event loop under one GIL; here one asyncio loop in a process of
its own keeps nothing, so the client and the model never compete for an interpreter, and the
run's figures say what the agent costs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from typing import Any

PURPOSE_HEADER = "x-accord-purpose"
"""The header of the coder's side requests (``accord.engines.MODEL_PURPOSE_HEADER``)."""
COMPACT_PURPOSE = "compact"
"""The purpose of a compaction's summary request (``accord.engines.pydantic_ai``'s)."""
SUMMARY_CHARS = 2000
"""The length of every summary the model writes."""


def tag_of(body: dict[str, Any]) -> str:
    """The last user message's text: the tag whose pieces the reply streams."""
    messages: list[dict[str, Any]] = body.get("messages", [])
    users = [m for m in messages if m.get("role") == "user"]
    return str(users[-1].get("content")).strip() if users else "none"


def chunk(payload: bytes) -> bytes:
    """``payload`` as one HTTP/1.1 chunk."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


class Model:
    """Answers one connection's requests, one after another (HTTP/1.1 keep-alive)."""

    def __init__(self, chunks: int, delay: float) -> None:
        self.chunks = chunks
        self.delay = delay
        self.served = 0
        self.summaries = 0

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve requests on one connection until the client closes it."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name:
                        headers[name.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                await self.answer(method, path.split("?")[0].rstrip("/"), headers, raw, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def answer(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        raw: bytes,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Write the response to one request."""
        if method == "GET" and path.endswith("/models"):
            send_json(
                writer, 200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
            )
            return
        if method != "POST" or not path.endswith("/chat/completions"):
            send_json(writer, 404, {"error": {"message": f"no route {method} {path}"}})
            return
        body: dict[str, Any] = json.loads(raw)
        if headers.get(PURPOSE_HEADER) == COMPACT_PURPOSE and not body.get("stream"):
            self.served += 1
            self.summaries += 1
            send_json(writer, 200, summary(body, len(raw), self.served))
            return
        if headers.get(PURPOSE_HEADER):
            message = f"no reply for a {headers[PURPOSE_HEADER]!r} request"
            send_json(writer, 400, {"error": {"message": message, "type": "fake_side"}})
            return
        if not body.get("stream"):
            send_json(writer, 400, {"error": {"message": "the soak's model only streams"}})
            return
        self.served += 1
        await self.stream(body, len(raw), writer)

    async def stream(self, body: dict[str, Any], size: int, writer: asyncio.StreamWriter) -> None:
        """The reply's frames, ``--delay`` apart."""
        tag = tag_of(body)
        start = {"id": f"chatcmpl-soak-{self.served}", "object": "chat.completion.chunk"}
        start |= {"created": int(time.time()), "model": str(body.get("model", "fake-model"))}

        def frame(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return event({**start, "choices": [choice]})

        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        writer.write(chunk(frame({"role": "assistant", "content": ""})))
        for n in range(self.chunks):
            if self.delay:
                await asyncio.sleep(self.delay)
            writer.write(chunk(frame({"content": f"{tag}c{n} "})))
            await writer.drain()
        closing = frame({}, "stop")
        options: dict[str, Any] = body.get("stream_options") or {}
        if options.get("include_usage"):
            usage = {"prompt_tokens": size // 4, "completion_tokens": self.chunks}
            usage["total_tokens"] = usage["prompt_tokens"] + self.chunks
            closing += event({**start, "choices": [], "usage": usage})
        writer.write(chunk(closing + b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()


def summary(body: dict[str, Any], size: int, served: int) -> dict[str, Any]:
    """A chat completion carrying a summary of :data:`SUMMARY_CHARS` characters."""
    text = ("the summary of the earlier turns. " * (SUMMARY_CHARS // 34 + 1))[:SUMMARY_CHARS]
    message = {"role": "assistant", "content": text}
    usage = {"prompt_tokens": size // 4, "completion_tokens": SUMMARY_CHARS // 4}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": f"chatcmpl-soak-{served}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "fake-model")),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": usage,
    }


def event(fields: dict[str, Any]) -> bytes:
    """One server-sent event carrying ``fields`` as JSON."""
    return b"data: " + json.dumps(fields, separators=(",", ":")).encode() + b"\n\n"


def send_json(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any]) -> None:
    """A whole JSON response (the connection stays open)."""
    data = json.dumps(payload).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )


async def serve(chunks: int, delay: float) -> None:
    """Listen on a free loopback port, print it, serve until SIGTERM or SIGINT."""
    model = Model(chunks, delay)
    server = await asyncio.start_server(model.connection, "127.0.0.1", 0)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await stop.wait()
    print(f"summaries {model.summaries}", flush=True)


def main() -> None:
    """Parse the arguments and serve."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chunks", type=int, required=True, help="pieces per reply")
    parser.add_argument("--delay", type=float, required=True, help="seconds between pieces")
    args = parser.parse_args()
    if args.chunks < 1 or args.delay < 0:
        parser.error("--chunks must be at least 1 and --delay not negative")
    asyncio.run(serve(args.chunks, args.delay))


if __name__ == "__main__":
    main()

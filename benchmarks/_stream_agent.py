"""A minimal, fast streaming ACP agent, run as a subprocess by ``bench_client.py``.

Stdlib and orjson only, no ACP library: the point is that the *client* is the bottleneck.
It reads JSON-RPC lines from stdin and answers ``initialize`` and ``session/new`` (a new
session id each time); on ``session/prompt`` whose text is a number N it writes N
``agent_message_chunk`` notifications of 40 bytes of text (one ``messageId`` per turn),
pre-encoded once and written in large writes (its stdout pipe enlarged to 1 MiB where the
OS allows, so that it needs the CPU rarely), then the prompt's answer, whose ``_meta``
reports the agent's CPU seconds for the turn. Notifications (``session/cancel``) are ignored;
other requests are answered -32601.

Run: ``python benchmarks/_stream_agent.py`` (speaks ACP on stdin/stdout).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import orjson

CHUNK = "The quick brown fox jumps over the dog. "  # 40 bytes
WRITE_BYTES = 1 << 20  # one write() per MiB of notifications

_OUT = sys.stdout.fileno()


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(_OUT, view[:WRITE_BYTES])
        view = view[written:]


def _answer(request_id: Any, result: Any) -> None:
    _write(orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + b"\n")


def _refuse(request_id: Any, method: str) -> None:
    error = {"code": -32601, "message": f"method not found: {method}"}
    _write(orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + b"\n")


def _prompt(request_id: Any, params: dict[str, Any], turn: int) -> None:
    blocks = params.get("prompt") or [{}]
    text = blocks[0].get("text", "0") if isinstance(blocks[0], dict) else "0"
    count = int(text) if text.strip().isdigit() else 0
    started = time.process_time()
    line = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": params["sessionId"],
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": CHUNK},
                    "messageId": f"m{turn}",
                },
            },
        }
    )
    line += b"\n"
    per_write = max(1, WRITE_BYTES // len(line))
    remaining = count
    while remaining:
        batch = min(per_write, remaining)
        _write(line * batch)
        remaining -= batch
    cpu = time.process_time() - started
    _answer(request_id, {"stopReason": "end_turn", "_meta": {"cpu": cpu, "lineBytes": len(line)}})


def _enlarge_pipe() -> None:
    try:
        import fcntl

        fcntl.fcntl(_OUT, fcntl.F_SETPIPE_SZ, WRITE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass  # not Linux, not a pipe, or above /proc/sys/fs/pipe-max-size: keep the default


def main() -> None:
    _enlarge_pipe()
    sessions = 0
    turns = 0
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        message = orjson.loads(raw)
        method = message.get("method")
        if "id" not in message or method is None:
            continue  # a notification (session/cancel), or a response: nothing to do
        request_id = message["id"]
        params = message.get("params") or {}
        if method == "initialize":
            _answer(
                request_id,
                {
                    "protocolVersion": 1,
                    "agentCapabilities": {},
                    "authMethods": [],
                    "agentInfo": {"name": "bench-stream-agent", "version": "1"},
                },
            )
        elif method == "session/new":
            sessions += 1
            _answer(request_id, {"sessionId": f"s{sessions}"})
        elif method == "session/prompt":
            turns += 1
            _prompt(request_id, params, turns)
        else:
            _refuse(request_id, method)


if __name__ == "__main__":
    main()

"""An ACP agent that never asks permission and ignores the client's capabilities.

Raw JSON-RPC on stdin/stdout (stdlib only, no ACP library that would refuse to send what the
client did not advertise). On ``session/prompt`` it tries, whatever the client advertised,
``fs/write_text_file`` of ``written.txt`` in the session's directory and ``terminal/create``
of ``touch ran.txt`` there (a shell line as ``/bin/sh -c``), then says in one agent message
what the client advertised and how each request was answered, and ends the turn.

Run: ``python tests/helpers/blunt_agent.py``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

_pending: dict[int, Any] = {}
_next_id = 1000


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def _call(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send a request and read lines until its answer (nothing else arrives meanwhile)."""
    global _next_id
    _next_id += 1
    _send({"id": _next_id, "method": method, "params": params})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == _next_id and "method" not in message:
            return message
    raise SystemExit("the client left")


def _outcome(answer: dict[str, Any]) -> str:
    if "error" in answer:
        error = answer["error"]
        return f"refused {error['code']} {error['message']}"
    return "ok"


def main() -> None:
    capabilities: dict[str, Any] = {}
    cwd = {}
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            capabilities = params.get("clientCapabilities") or {}
            result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
            _send({"id": request_id, "result": result})
        elif method == "session/new":
            session_id = f"blunt-{len(cwd) + 1}"
            cwd[session_id] = params["cwd"]
            _send({"id": request_id, "result": {"sessionId": session_id}})
        elif method == "session/prompt":
            session_id = params["sessionId"]
            root = cwd[session_id]
            wrote = _call(
                "fs/write_text_file",
                {
                    "sessionId": session_id,
                    "path": os.path.join(root, "written.txt"),
                    "content": "written without asking\n",
                },
            )
            ran = _call(
                "terminal/create",
                {
                    "sessionId": session_id,
                    "command": "/bin/sh",
                    "args": ["-c", "touch ran.txt"],
                    "cwd": root,
                },
            )
            fs = capabilities.get("fs") or {}
            text = (
                f"advertised write={bool(fs.get('writeTextFile'))}"
                f" terminal={bool(capabilities.get('terminal'))}\n"
                f"write: {_outcome(wrote)}\nterminal: {_outcome(ran)}\n"
            )
            update = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            }
            _send(
                {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
            )
            _send({"id": request_id, "result": {"stopReason": "end_turn"}})
        elif request_id is not None:
            _send({"id": request_id, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()

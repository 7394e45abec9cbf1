"""A minimal NDJSON agent for the subprocess transport tests, written with the stdlib only.

It does not import accord, so ``spawn_agent`` is tested against a peer that shares none of its
code. Run as ``python echo_agent.py [--stderr-flood BYTES] [--stderr-at-exit BYTES] [--ignore-eof]
[--ignore-sigterm]``.

Methods (requests; the answer is the ``result``):

* ``echo``: the params.
* ``ready``: ``"ready"``; answered after the signal setup, so the test knows it is in place.
* ``env``: ``{"value": os.environ.get(params["name"]), "keys": sorted(os.environ)}``.
* ``cwd``: ``os.getcwd()``.
* ``flood``: writes ``params["bytes"]`` bytes of lines to stderr, then answers.
* ``crash``: writes ``params["message"]`` to stderr and exits with ``params["code"]``, unanswered.

At end of input it floods stderr with ``--stderr-at-exit`` bytes (if given) and exits 0, unless
``--ignore-eof``: then it sleeps until killed.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

#: The last line of every stderr flood, so a test can find the end of the tail.
FLOOD_END = "END-OF-FLOOD"


def flood_stderr(size: int) -> None:
    """Write about ``size`` bytes to stderr in 100-byte lines, then the end marker."""
    line = (b"stderr flood " + b"x" * 86 + b"\n")[:100]
    chunk = line * 655  # 65,500 bytes per write: blocks as soon as nobody drains the pipe
    written = 0
    while written < size:
        os.write(2, chunk)
        written += len(chunk)
    os.write(2, FLOOD_END.encode() + b"\n")


def answer(method: str, params: Any) -> Any:
    if method == "echo":
        return params
    if method == "ready":
        return "ready"
    if method == "env":
        return {"value": os.environ.get(params["name"]), "keys": sorted(os.environ)}
    if method == "cwd":
        return os.getcwd()
    if method == "flood":
        flood_stderr(params["bytes"])
        return "flooded"
    if method == "crash":
        os.write(2, params["message"].encode())
        os._exit(params["code"])
    raise LookupError(method)


def main(args: list[str]) -> None:
    if "--ignore-sigterm" in args:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--stderr-flood" in args:
        flood_stderr(int(args[args.index("--stderr-flood") + 1]))
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" not in message:
            continue
        try:
            reply = {"result": answer(message["method"], message.get("params"))}
        except LookupError:
            reply = {"error": {"code": -32601, "message": "Method not found"}}
        reply.update(jsonrpc="2.0", id=message["id"])
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    if "--stderr-at-exit" in args:
        flood_stderr(int(args[args.index("--stderr-at-exit") + 1]))
    if "--ignore-eof" in args:
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1:])

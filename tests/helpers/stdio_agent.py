"""An agent that serves an accord ``Connection`` over its own stdin and stdout.

Used by the subprocess tests to exercise ``accord.transports.stdio_transport`` for real.
Run as ``python stdio_agent.py [asyncio|trio]``.

Methods (requests):

* ``echo``: the params.
* ``print``: ``print(params["text"])``, a stray print that must not reach the protocol stream.
* ``write_fd1``: writes ``params["text"]`` straight to file descriptor 1, below ``sys.stdout``.
* ``notify_back``: sends ``params["count"]`` notifications ``test/note`` ``{"i": n}``, then
  answers with the count.
* ``exit``: writes ``params["message"]`` to stderr and exits with ``params["code"]``, unanswered.

At end of input (the client closed our stdin) it leaves ``wait_closed()``, says goodbye on
stderr and exits 0.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio

from accord.errors import MethodNotFound
from accord.jsonrpc import Connection
from accord.transports import stdio_transport

#: What the agent writes to stderr when its stdin closes, just before it exits.
GOODBYE = "stdio agent: stdin closed, exiting"


async def main() -> None:
    transport = stdio_transport()
    connection: list[Connection] = []

    async def on_request(method: str, params: Any) -> Any:
        if method == "echo":
            return params
        if method == "print":
            print(params["text"])
            return "printed"
        if method == "write_fd1":
            os.write(1, params["text"].encode() + b"\n")
            return "written"
        if method == "notify_back":
            for n in range(params["count"]):
                await connection[0].notify("test/note", {"i": n})
            return params["count"]
        if method == "exit":
            sys.stderr.write(params["message"])
            sys.stderr.flush()
            os._exit(params["code"])
        raise MethodNotFound(data={"method": method})

    async with Connection(transport, on_request=on_request, name="stdio-agent") as conn:
        connection.append(conn)
        await conn.wait_closed()
    sys.stderr.write(f"{GOODBYE}\n")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")

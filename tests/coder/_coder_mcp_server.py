"""A tiny MCP server for the coder's tests: ``python _coder_mcp_server.py [http]``.

Over stdio by default. With ``http`` it serves streamable HTTP (path ``/mcp``) on a loopback
socket that is already listening when its port is printed on stdout, so a client can connect
as soon as it has read the line.
"""

from __future__ import annotations

import socket
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("demo")


@server.tool()
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def serve_http() -> None:
    import anyio
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(server.streamable_http_app(host="127.0.0.1"), log_level="warning")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run()

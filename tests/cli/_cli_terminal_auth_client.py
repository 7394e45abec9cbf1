"""Run in a pty by test_serve_configure.py: a client that signs in through terminal auth.

Connects to ``accord serve`` (argv[1:] is its command line) advertising ``auth.terminal``,
runs the agent's terminal auth method in this terminal (the user answers the setup there),
connects again and prompts once. Prints what it saw, one ``key: value`` line per fact.
"""

from __future__ import annotations

import sys

import anyio

from accord.client import connect, run_terminal_auth, terminal_auth_methods


async def main(command: list[str]) -> None:
    async with connect(command, terminal_auth=True) as conn:
        [method] = terminal_auth_methods(conn.auth_methods)
        print(f"method: {method.id} {method.args}", flush=True)
    await run_terminal_auth(command, method)
    async with connect(command, terminal_auth=True) as conn:
        print(f"auth methods after: {len(conn.auth_methods)}", flush=True)
        session = await conn.new_session()
        result = await session.prompt("hello")
        print(f"reply: {result.text}", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])

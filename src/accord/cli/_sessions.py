"""``accord sessions``: list the sessions an agent has stored (``session/list``).

Prints one line per session, newest first (``--json``: one JSON object per line, as the agent
sent it); ``--cwd`` keeps only the sessions of one working directory.
"""

from __future__ import annotations

import argparse
import os
import sys

import anyio
import orjson

from ..client import connect
from ..errors import AcpError, LocalProtocolError
from ._agent_spec import agent_spec, close_builtin_agent, describe_agent
from ._exit_codes import ExitCode

__all__ = ("sessions_command",)


def sessions_command(args: argparse.Namespace) -> int:
    """Run ``accord sessions`` and return its exit code."""
    args.cwd = os.path.abspath(args.cwd) if args.cwd else None
    try:
        return anyio.run(_sessions, args, backend="asyncio")
    except KeyboardInterrupt:
        print("\naccord: interrupted", file=sys.stderr)
        return ExitCode.CANCELLED


async def _sessions(args: argparse.Namespace) -> int:
    try:
        spec = agent_spec(args)
    except (ValueError, AcpError) as error:
        print(f"accord: {error}", file=sys.stderr)
        return ExitCode.ERROR
    cwd: str | None = args.cwd
    out = sys.stdout
    try:
        async with connect(spec) as conn:
            count = 0
            async for info in conn.iter_sessions(cwd):
                count += 1
                if args.json:
                    out.write(orjson.dumps(info.to_wire()).decode() + "\n")
                else:
                    title = info.title or "(untitled)"
                    updated = info.updated_at or "-"
                    out.write(f"{info.session_id}  {updated}  {title}  [{info.cwd}]\n")
            if count == 0 and not args.json:
                print("no sessions", file=sys.stderr)
    except LocalProtocolError as error:
        print(f"accord: {describe_agent(args)} cannot list sessions: {error}", file=sys.stderr)
        return ExitCode.ERROR
    except (AcpError, OSError) as error:
        print(f"accord: {describe_agent(args)} failed: {error}", file=sys.stderr)
        return ExitCode.AGENT_FAILED
    finally:
        await close_builtin_agent(spec)
    return ExitCode.OK

"""Run the hostile agent as an agent command over stdio, to test any ACP client with it.

    python -m accord.testing.hostile_agent [--attack NAME ...] [--report FILE] [--list]

Point a client at it as its agent command (``accord run -- python -m
accord.testing.hostile_agent --attack huge-message``, an editor's agent settings, your own
client's tests). Without ``--attack`` it plays every attack of
:data:`~accord.testing.HOSTILE_ATTACKS` in turn, one per prompt; ``--attack`` (repeatable)
picks some. It answers ``initialize`` and every ``session/new``, plays an attack inside each
``session/prompt``, ends the turn and checks the client still answers a request. With
``--report FILE`` it writes what happened as JSON (one report per attack played: each
request it made, the client's answer, whether the client was alive after it). The exit
status is 0 when every attack played found the client alive, 1 otherwise, 2 on bad usage.

The byte-level attacks exceed the client's line limit (``--max-message-bytes``, default
64 MiB as accord's); ``endless-line`` writes ``--endless-bytes`` (default four times the
limit) before ending its line, or with ``--never-end`` writes until the client closes the
pipe; ``notification-flood`` sends ``--flood`` notifications.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from ..transports import stdio_transport
from ._hostile_agent import HOSTILE_ATTACKS, HostileOptions, HostileReport, play_hostile_agent

__all__ = ("main",)


def _parser() -> argparse.ArgumentParser:
    defaults = HostileOptions()
    parser = argparse.ArgumentParser(
        prog="python -m accord.testing.hostile_agent",
        description="An ACP agent that attacks its client (for testing clients).",
    )
    parser.add_argument(
        "--attack",
        action="append",
        choices=sorted(HOSTILE_ATTACKS),
        help="an attack to play (repeatable; default: all, one per prompt)",
    )
    parser.add_argument("--report", type=Path, help="write the reports here as JSON")
    parser.add_argument("--list", action="store_true", help="print the attacks and exit")
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=defaults.max_message_bytes,
        help="the client's line limit, which huge-message exceeds",
    )
    parser.add_argument(
        "--endless-bytes",
        type=int,
        help="bytes of the endless line before it ends (default: 4 x --max-message-bytes)",
    )
    parser.add_argument(
        "--never-end",
        action="store_true",
        help="endless-line never ends its line (until the client closes the pipe)",
    )
    parser.add_argument(
        "--flood", type=int, default=defaults.flood, help="notifications notification-flood sends"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the hostile agent on stdin/stdout; return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(sorted(HOSTILE_ATTACKS)))
        return 0
    if args.max_message_bytes < 1 or (args.endless_bytes or 1) < 1 or args.flood < 0:
        parser.error("sizes must be positive")
    options = HostileOptions(
        max_message_bytes=args.max_message_bytes,
        endless_bytes=args.endless_bytes,
        never_end=args.never_end,
        flood=args.flood,
    )
    attacks: list[str] = args.attack or list(HOSTILE_ATTACKS)
    reports: list[HostileReport] = []

    async def serve() -> None:
        transport = stdio_transport()
        try:
            reports.extend(await play_hostile_agent(transport, attacks, options))
        except (anyio.EndOfStream, anyio.BrokenResourceError) as exc:
            print(f"hostile agent: the client went away ({type(exc).__name__})", file=sys.stderr)
        finally:
            await transport.aclose()

    anyio.run(serve)
    if args.report is not None:
        text = json.dumps([report.to_json() for report in reports], indent=2)
        args.report.write_text(text + "\n", encoding="utf-8")
    played = len(reports) == len(attacks)
    return 0 if played and all(report.alive for report in reports) else 1


if __name__ == "__main__":
    sys.exit(main())

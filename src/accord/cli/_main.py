"""Argument parsing and dispatch for the ``accord`` command.

Exit codes are part of the interface (see ``accord.cli.ExitCode``); they are documented in the
README.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

__all__ = ("build_parser", "main")


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of the ``accord`` command and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="accord",
        description="The Agent Client Protocol for Python: serve and drive ACP agents.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (repeat)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve", help="run the accord coding agent over stdio (for editors)"
    )
    serve.add_argument("--model", help="pydantic-ai model name, e.g. openai:gpt-5 or anthropic:…")
    serve.add_argument("--base-url", help="OpenAI-compatible endpoint (Ollama, llama.cpp, vLLM)")
    serve.add_argument(
        "--store", help="SQLite file or postgresql:// URL for sessions (default: user data dir)"
    )
    serve.add_argument(
        "--activity", help="append a privacy-safe activity record per event (NDJSON) to FILE"
    )
    serve.add_argument(
        "--configure",
        action="store_true",
        help="choose the provider, model and API key interactively, save them, and exit",
    )

    run = commands.add_parser("run", help="send one prompt to an agent and stream the reply")
    run.add_argument("prompt", help="the prompt text")
    run.add_argument("--agent", help='agent command line, e.g. "npx my-agent --acp"')
    run.add_argument("--cwd", help="session working directory (default: current)")
    run.add_argument("--session", help="continue a stored session (session/load)")
    run.add_argument("--json", action="store_true", help="print raw updates as JSON lines")
    policy = run.add_mutually_exclusive_group()
    policy.add_argument("--approve-all", action="store_true", help="allow every tool call")
    policy.add_argument("--deny-all", action="store_true", help="refuse every tool call")
    run.add_argument("--model", help="model for the built-in agent (without --agent)")
    run.add_argument("--base-url", help="OpenAI-compatible endpoint for the built-in agent")
    run.add_argument("--store", help="session store of the built-in agent")

    sessions = commands.add_parser("sessions", help="list an agent's stored sessions")
    sessions.add_argument("--agent", help="agent command line (default: the built-in agent)")
    sessions.add_argument("--cwd", help="only sessions with this working directory")
    sessions.add_argument("--json", action="store_true", help="print JSON lines")
    sessions.add_argument("--store", help="session store of the built-in agent")

    from ._chat import add_chat_parser  # the TUI's subcommand (it imports Textual only when run)

    add_chat_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``accord`` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    if args.command == "serve":
        from ._serve import serve_command

        return serve_command(args)
    if args.command == "run":
        from ._run import run_command

        return run_command(args)
    if args.command == "chat":
        from ._chat import chat_command

        return chat_command(args)
    from ._sessions import sessions_command

    return sessions_command(args)

"""``accord chat``: the terminal UI (:mod:`accord.tui`) on the built-in agent or ``--agent``.

Textual is an optional dependency (``pip install 'accord[tui]'``); it is imported here, when
the command runs, and nowhere else in the CLI. Without ``--agent`` the built-in coding agent
runs in this process (as for ``accord run``); ``--session ID`` loads a stored session
(``--resume``: resumes it without replaying its history).
"""

from __future__ import annotations

import argparse
import os
import sys

from ..client import AgentSpec
from ._agent_spec import agent_spec, choose_agent, close_builtin_agent, describe_agent
from ._exit_codes import ExitCode
from ._settings import CONTEXT_WINDOW_HELP, load, tokens_argument

__all__ = ("add_chat_parser", "chat_command")


def add_chat_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``chat`` subcommand to the ``accord`` parser."""
    chat = commands.add_parser("chat", help="talk to an agent in a terminal UI")
    chat.add_argument(
        "--agent",
        help="an agent name (claude, codex, gemini, ...), a command line, e.g. "
        '"npx my-agent --acp", or a served agent\'s URL (ws://host:8765/acp; token in '
        "ACCORD_TOKEN); default: built-in",
    )
    chat.add_argument("--cwd", help="session working directory (default: current)")
    chat.add_argument("--session", help="open a stored session (session/load)")
    chat.add_argument(
        "--resume", action="store_true", help="with --session: resume it without its history"
    )
    chat.add_argument("--model", help="model for the built-in agent (without --agent)")
    chat.add_argument("--base-url", help="OpenAI-compatible endpoint for the built-in agent")
    chat.add_argument(
        "--context-window", type=tokens_argument, metavar="TOKENS", help=CONTEXT_WINDOW_HELP
    )
    chat.add_argument("--store", help="session store of the built-in agent")


def chat_command(args: argparse.Namespace) -> int:
    """Run ``accord chat`` until the user quits; returns the exit code."""
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        print(f"accord: --cwd {cwd} is not a directory", file=sys.stderr)
        return ExitCode.ERROR
    if args.resume and not args.session:
        print("accord: --resume needs --session ID", file=sys.stderr)
        return ExitCode.USAGE
    # Bad input (a broken config file, an unknown agent name) is one line before the screen
    # is taken over; only building the agent (heavy for the built-in one) waits for the UI.
    try:
        settings = load()
        choice = choose_agent(args.agent, settings)
    except ValueError as error:
        print(f"accord: {error}", file=sys.stderr)
        return ExitCode.ERROR
    try:
        from ..tui import ChatApp
    except ImportError as error:
        print(
            f"accord: accord chat needs the tui extra (pip install 'accord[tui]'): {error}",
            file=sys.stderr,
        )
        return ExitCode.ERROR
    try:
        spec_error: list[str] = []

        async def build() -> AgentSpec:
            try:
                return agent_spec(choice, args, settings, needs_model=False)
            except ValueError as error:
                spec_error.append(str(error))
                raise

        app = ChatApp(
            build,
            agent_name=describe_agent(args),
            cwd=cwd,
            session_id=args.session,
            resume=args.resume,
            close_agent=close_builtin_agent,
        )
        code = app.run()
    except KeyboardInterrupt:
        return ExitCode.CANCELLED
    if spec_error:
        print(f"accord: {spec_error[0]}", file=sys.stderr)
        return ExitCode.ERROR
    if app.failed:
        return ExitCode.AGENT_FAILED
    return ExitCode.OK if code is None else code

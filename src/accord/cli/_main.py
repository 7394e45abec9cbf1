"""Argument parsing and dispatch for the ``accord`` command.

Exit codes are part of the interface (see ``accord.cli.ExitCode``); they are documented in
docs/cli.md and in ``accord --help``. No traceback reaches the terminal: a failure is one line
on stderr (``-v`` logs the traceback too).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from ._exit_codes import ExitCode

__all__ = ("build_parser", "main")


EXIT_CODES_HELP = """\
exit codes:
  0    the turn ended normally (end_turn, max_tokens, max_turn_requests)
  1    a local error: bad input (unknown agent, unreadable --file, empty prompt, broken
       config file, no model), or the agent lacks what was asked (session/load, list, modes)
  2    the command line could not be parsed
  3    the agent failed: could not start, crashed, broke the protocol, timed out, or
       answered with an error (an unreachable model, an HTTP error from it)
  4    a permission request was refused and the turn otherwise ended normally
  5    the agent refused the prompt (stopReason: refusal)
  130  Ctrl-C (session/cancel was sent first; a second Ctrl-C quits at once)
"""

ENVIRONMENT_HELP = """\
environment:
  ACCORD_MODEL        the built-in agent's model (e.g. openai:gpt-5; --model wins)
  ACCORD_BASE_URL     its OpenAI-compatible endpoint (Ollama, llama.cpp, vLLM)
  ACCORD_CONTEXT_WINDOW  its model's context window in tokens (--context-window wins)
  ACCORD_CONFIG       the config file (default: config.toml in the user config directory)
  OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_API_KEY, ...   the model provider's key
  NO_COLOR            set: no colours (neither are used when output is not a terminal)
"""

EXAMPLES_HELP = """\
examples:
  accord run "Explain this repository"              the built-in agent (needs a model)
  accord run --agent claude "Fix the failing test"  a well-known agent by name
  accord run --agent "my-agent --acp" -q "hi"       any ACP agent; only the final answer
  git diff | accord run --file - "Review this"      the prompt, then stdin
  accord run --continue "And now the tests"         the last session of this directory
  accord sessions show 0193...                      one session's history
  accord providers set openai --key-stdin < key     an agent's model provider and key
  accord serve --model openai:gpt-5                 for editors (ACP over stdio)
  accord serve --listen 127.0.0.1:8765              for remote clients (ws:// and http://)
  accord bridge wss://host:8765/acp                 a remote agent for an editor (stdio)
  eval "$(accord completion bash)"                  tab completion
"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("accord")
    except PackageNotFoundError:  # running from a source tree
        return "unknown (not installed)"


def _seconds(text: str) -> float:
    """A number of seconds, at least 0 (an ``argparse`` type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of the ``accord`` command and its subcommands."""
    from ._settings import CONTEXT_WINDOW_HELP, tokens_argument

    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="accord",
        description="The Agent Client Protocol for Python: serve and drive ACP agents.",
        epilog=f"{EXAMPLES_HELP}\n{ENVIRONMENT_HELP}\n{EXIT_CODES_HELP}",
        formatter_class=formatter,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"accord {_version()}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more, with tracebacks (repeat)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, help_text: str, epilog: str = EXIT_CODES_HELP
    ) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=epilog,
            formatter_class=formatter,
            allow_abbrev=False,
        )

    serve = command(
        "serve", "run the accord coding agent over stdio (for editors)", ENVIRONMENT_HELP
    )
    serve.add_argument("--model", help="pydantic-ai model name, e.g. openai:gpt-5 or anthropic:…")
    serve.add_argument("--base-url", help="OpenAI-compatible endpoint (Ollama, llama.cpp, vLLM)")
    serve.add_argument(
        "--context-window", type=tokens_argument, metavar="TOKENS", help=CONTEXT_WINDOW_HELP
    )
    serve.add_argument(
        "--store", help="SQLite file or postgresql:// URL for sessions (default: user data dir)"
    )
    serve.add_argument(
        "--activity", help="append a privacy-safe activity record per event (NDJSON) to FILE"
    )
    serve.add_argument(
        "--grace",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="keep a session live this long after its last client left, its turn running "
        "(default: 0 over stdio, where the client leaving cancels its turn; 600 with --listen)",
    )
    serve.add_argument(
        "--configure",
        action="store_true",
        help="choose the provider, model and API key interactively, save them, and exit",
    )
    from ._listen import add_listen_arguments

    add_listen_arguments(serve)

    run = command(
        "run",
        "send one prompt to an agent and show the reply and its work",
        f"{EXAMPLES_HELP}\n{ENVIRONMENT_HELP}\n{EXIT_CODES_HELP}",
    )
    run.add_argument(
        "prompt", nargs="?", help="the prompt; '-' or none with stdin piped: read from stdin"
    )
    run.add_argument(
        "-f",
        "--file",
        metavar="PATH",
        help="read the prompt (or more of it) from PATH ('-': stdin)",
    )
    run.add_argument(
        "--agent",
        help="an agent name (claude, codex, gemini, goose, opencode, qwen, or one from the "
        'config file) or a command line, e.g. "npx my-agent --acp"; default: built-in',
    )
    run.add_argument("--cwd", help="session working directory (default: current)")
    run.add_argument(
        "--add-dir",
        action="append",
        metavar="DIR",
        help="a further directory the session may use (repeat)",
    )
    which = run.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="ID", help="continue a stored session (session/load)")
    which.add_argument(
        "-c",
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the most recent session of the working directory",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="with --session: join the session where it is open (session/resume, no replay); "
        "a turn another client is running is shown first, and the prompt runs once it ends",
    )
    run.add_argument(
        "--mode", help="the session mode, e.g. ask, code or auto for the built-in agent"
    )
    run.add_argument(
        "--auth",
        metavar="METHOD",
        help="authenticate with the agent's auth method METHOD (an agent-type method id) "
        "before opening the session",
    )
    shown = run.add_mutually_exclusive_group()
    shown.add_argument(
        "--json",
        action="store_true",
        help="print each session/update as a JSON line, then one result record",
    )
    shown.add_argument("-q", "--quiet", action="store_true", help="print only the final answer")
    policy = run.add_mutually_exclusive_group()
    policy.add_argument("--approve-all", action="store_true", help="allow every tool call")
    policy.add_argument(
        "--deny-all",
        action="store_true",
        help="refuse every tool call, and host no file writes or terminals: the agent may "
        "read files of the session's directories, nothing more",
    )
    run.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="how long the agent may take to start (initialize); 0: no limit (default: 120)",
    )
    run.add_argument("--model", help="model for the built-in agent (without --agent)")
    run.add_argument("--base-url", help="OpenAI-compatible endpoint for the built-in agent")
    run.add_argument(
        "--context-window", type=tokens_argument, metavar="TOKENS", help=CONTEXT_WINDOW_HELP
    )
    run.add_argument("--store", help="session store of the built-in agent")

    sessions = command("sessions", "list, show or delete an agent's stored sessions")
    sessions.add_argument(
        "action",
        nargs="?",
        choices=("list", "show", "delete"),
        default="list",
        help="list (the default), show ID (its history) or delete ID...",
    )
    sessions.add_argument("ids", nargs="*", metavar="ID", help="session ids (show, delete)")
    sessions.add_argument("--agent", help="agent name or command line (default: built-in)")
    sessions.add_argument("--cwd", help="only sessions with this working directory")
    sessions.add_argument("--json", action="store_true", help="print JSON lines")
    sessions.add_argument("--store", help="session store of the built-in agent")

    providers = command("providers", "list, set or disable the model providers of an agent")
    from ._providers import add_providers_arguments

    add_providers_arguments(providers)

    bridge = command("bridge", "a remote agent (ws://, wss://, http(s)://) as a local stdio agent")
    from ._bridge import add_bridge_arguments

    add_bridge_arguments(bridge)

    completion = command("completion", "print a shell completion script", "")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"))

    from ._chat import add_chat_parser  # the TUI's subcommand (it imports Textual only when run)

    add_chat_parser(commands)
    for subparser in commands.choices.values():
        subparser.allow_abbrev = False  # --mod is never --model (nor --mode)
    return parser


class _SafeFormatter(logging.Formatter):
    """Log lines with control sequences neutralised; tracebacks only when ``verbose``."""

    def __init__(self, verbose: bool) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")
        self.verbose = verbose

    def format(self, record: logging.LogRecord) -> str:
        from ..client import neutralise

        if not self.verbose:
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        return neutralise(super().format(record))


def _configure_logging(verbosity: int, command: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_SafeFormatter(verbose=verbosity > 0))
    logging.basicConfig(level=logging.WARNING - 10 * min(verbosity, 2), handlers=[handler])
    if verbosity == 0 and command != "serve":
        # The built-in agent runs in this process: what fails in it reaches the person as
        # the one line the command prints; its own error log would say it twice.
        for name in ("accord.agent", "accord.engines", "accord.coder"):
            logging.getLogger(name).setLevel(logging.CRITICAL)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``accord`` command; returns the exit code."""
    os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")  # no first-run banner on stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose, args.command)
    try:
        code = _dispatch(parser, args)
        # Collect now, while every thread still runs: a finalizer left for interpreter
        # shutdown (an HTTP client of the built-in agent's model) can wait there for a
        # lock held by a daemon thread that shutdown has frozen, and the process would hang.
        import gc

        gc.collect()
        return code
    except KeyboardInterrupt:
        print("\naccord: interrupted", file=sys.stderr)
        return ExitCode.CANCELLED
    except Exception as error:  # the last net: one line, the traceback only with -v
        logging.getLogger("accord.cli").debug("unexpected failure", exc_info=error)
        from ._report import report

        leaf = _leaf(error)
        hint = "" if args.verbose else " (run with -v for the traceback)"
        report(f"unexpected error: {type(leaf).__name__}: {leaf}{hint}")
        if args.verbose:
            import traceback

            traceback.print_exception(error)
        return ExitCode.ERROR


def _leaf(error: BaseException) -> BaseException:
    """The one exception inside nested single-member exception groups (task groups wrap)."""
    leaf: BaseException = error
    members: tuple[BaseException, ...] = getattr(leaf, "exceptions", ())
    while len(members) == 1:
        leaf = members[0]
        members = getattr(leaf, "exceptions", ())
    return leaf


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "serve":
        from ._serve import serve_command

        return serve_command(args)
    if args.command == "run":
        from ._run import run_command

        return run_command(args)
    if args.command == "bridge":
        from ._bridge import bridge_command

        return bridge_command(args)
    if args.command == "completion":
        from ._completion import completion_script

        sys.stdout.write(completion_script(parser, args.shell))
        return ExitCode.OK
    if args.command == "chat":
        from ._chat import chat_command

        return chat_command(args)
    if args.command == "providers":
        from ._providers import providers_command

        return providers_command(args)
    from ._sessions import sessions_command

    return sessions_command(args)

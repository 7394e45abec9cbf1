"""``accord serve``: the accord coding agent over stdio, for editors.

::

    accord serve --model openai:gpt-5
    accord serve --model qwen2.5-coder:7b --base-url http://localhost:11434/v1   # Ollama
    accord serve --model local --base-url http://localhost:8000/v1 --context-window 32768
    accord serve --store ~/work/sessions.sqlite3
    accord serve --store postgresql://accord@db.internal/accord   # shared by several servers
    accord serve --activity ~/work/activity.ndjson

The agent speaks ACP on stdin/stdout (stdout carries nothing else; logs go to stderr, more with
``-v``). Sessions are kept in the SQLite store (``--store``, default
``<user data dir>/accord/sessions.sqlite3``), so ``session/load`` works across restarts, or in a
PostgreSQL database several servers share (``--store postgresql://...``).
``--model`` / ``--base-url`` fall back to ``ACCORD_MODEL`` / ``ACCORD_BASE_URL``; API keys come
from the provider's own variable (``OPENAI_API_KEY``, ...) and are never logged. Without a model
the agent still starts and tells the editor how to configure one. ``--activity FILE`` appends
one JSON line per committed event, the privacy-safe activity projection
(:class:`~accord.agent.ActivityLog`: kinds, sizes, counts, correlation ids; never text,
prompts, tool input or output, paths, URLs or error text). ``accord serve --configure``
asks for provider, model and key on the terminal and saves them (the key in the keyring or a
``0600`` file); later starts without ``--model`` use them (see :mod:`._configure`).

Start-up is kept short: this module imports only the runtime; pydantic-ai and the model SDKs
load in a worker thread after ``initialize`` has been answered (see :mod:`accord.coder`).
:func:`~._build_agent.build_agent` builds the agent (also for ``accord run`` without
``--agent`` and for ``accord serve --listen``).
"""

from __future__ import annotations

import argparse
import sys

from ._build_agent import build_agent
from ._exit_codes import ExitCode

__all__ = ("serve_command",)


def serve_command(args: argparse.Namespace) -> int:
    """Run ``accord serve`` until the editor closes stdin; returns the exit code."""
    if getattr(args, "configure", False):
        from ._configure import configure_command

        return configure_command()
    if getattr(args, "listen", None):
        from ._listen import listen_command

        return listen_command(args)
    import anyio

    from ..transports import stdio_transport
    from ._agent_spec import builtin_environ
    from ._settings import load

    try:
        environ = builtin_environ(load())
        runtime = build_agent(
            model=args.model,
            base_url=args.base_url,
            context_window=getattr(args, "context_window", None),
            store=args.store,
            environ=environ,
            activity=getattr(args, "activity", None),
            grace=getattr(args, "grace", None) or 0.0,
            freeze_heap=True,  # this process is the agent: see accord.coder._heap
        )
    except (ValueError, OSError) as exc:
        print(f"accord serve: {exc}", file=sys.stderr)
        return ExitCode.ERROR

    async def serve() -> None:
        # The one client over stdio leaving ends the process: close what it left behind.
        try:
            await runtime.serve(stdio_transport())
        finally:
            with anyio.CancelScope(shield=True):
                await runtime.aclose()

    try:
        anyio.run(serve, backend="asyncio")
    except KeyboardInterrupt:
        return ExitCode.CANCELLED
    return ExitCode.OK

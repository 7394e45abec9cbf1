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
:func:`build_agent` builds the same agent for ``accord run`` without ``--agent``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._exit_codes import ExitCode
from ._report import CODER_EXTRA_MISSING, coder_extra_missing

if TYPE_CHECKING:
    from ..coder import CoderConfig, CoderRuntime
    from ..store import SessionStore

__all__ = ("build_agent", "serve_command")

_log = logging.getLogger("accord.cli")


def build_agent(
    *,
    model: str | None = None,
    base_url: str | None = None,
    context_window: int | None = None,
    store: str | None = None,
    environ: Mapping[str, str] | None = None,
    warn: bool = True,
    activity: str | None = None,
    shared_store: SessionStore | None = None,
    grace: float = 0.0,
    freeze_heap: bool = False,
) -> CoderRuntime:
    """Build the coding agent (runtime, engine, session store) from command-line values.

    ``context_window``: the model's window in tokens (``--context-window``), over
    ``ACCORD_CONTEXT_WINDOW`` and what a ``base_url`` server reports.

    ``store`` is a SQLite file or a ``postgresql://`` URL (``None``: the default SQLite file,
    created when first used; see :func:`accord.store.open_store`). The
    runtime owns it: ``await runtime.aclose()`` when done (closes the sessions, then the
    store). ``grace`` is the runtime's grace period (:class:`~accord.agent.AgentRuntime`).
    ``environ``
    (default: this process's) supplies ``ACCORD_MODEL`` and friends; ``warn`` logs, once,
    what is missing (no model, or the ``coder`` extra) for an editor's log.

    ``activity`` is the activity log's file (``None``: none), closed with the runtime.
    ``shared_store``: an open store several runtimes use (not closed with this one; ``store``
    is then ignored). ``freeze_heap``: see :class:`~accord.coder.CoderRuntime` (for a process
    that serves the agent and does nothing else, as ``accord serve``).

    With a PostgreSQL store (which several server processes share), every attached client also
    sees, live, the turns the other processes' runtimes run on its session
    (``live_from_elsewhere``).

    Raises:
        ValueError: the environment's configuration is invalid (e.g. a bad context window).
        OSError: the activity file cannot be opened.
    """
    from ..coder import MODEL_ENV, CoderConfig, CoderRuntime, accord_config_dir, load_saved_model
    from ..store import POSTGRES_SCHEMES, PostgresSessionStore, open_store

    env = os.environ if environ is None else environ
    if not model and not env.get(MODEL_ENV):
        # What `accord serve --configure` saved.
        saved = load_saved_model(accord_config_dir(), os.environ)
        if saved is not None:
            model, base_url = saved.model, base_url or saved.base_url
    config = CoderConfig.from_sources(
        model=model, base_url=base_url, context_window=context_window, environ=env
    )
    if shared_store is not None:
        # Relays follow the store: worth it where other processes write (PostgreSQL), not
        # for one process's SQLite file, where each follower would only poll in vain.
        runtime = CoderRuntime(
            config,
            store=shared_store,
            activity=activity,
            live_from_elsewhere=isinstance(shared_store, PostgresSessionStore),
            grace=grace,
            freeze_heap=freeze_heap,
        )
        return _built(runtime, config, warn)
    runtime = CoderRuntime(
        config,
        store=open_store(store),
        owns_store=True,
        activity=activity,
        live_from_elsewhere=store is not None and store.startswith(POSTGRES_SCHEMES),
        grace=grace,
        freeze_heap=freeze_heap,
    )
    return _built(runtime, config, warn)


def _built(runtime: CoderRuntime, config: CoderConfig, warn: bool) -> CoderRuntime:
    if warn and not config.configured:
        _log.warning("%s", config.problem())
    elif warn and coder_extra_missing():
        _log.warning("%s", CODER_EXTRA_MISSING)
    return runtime


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

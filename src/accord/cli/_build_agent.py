"""The accord coding agent built from command-line values: :func:`build_agent`.

One builder for every command that serves or runs the built-in agent: ``accord serve`` (over
stdio), ``accord serve --listen`` (over the network) and ``accord run`` / ``accord chat``
without ``--agent`` (in process). Above: :mod:`._serve`, :mod:`._listen`, :mod:`._agent_spec`.
Below: :mod:`accord.coder` and :mod:`accord.store`, imported when an agent is built (start-up
stays short).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._report import CODER_EXTRA_MISSING, coder_extra_missing

if TYPE_CHECKING:
    from ..coder import CoderConfig, CoderRuntime
    from ..store import SessionStore

__all__ = ("build_agent",)

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

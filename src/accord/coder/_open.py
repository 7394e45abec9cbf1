"""Opening a coder session: configuration check, system prompt, tools, MCP, model engine.

:func:`open_coder_session` is what :meth:`CoderEngine.open_session` runs once the heavy modules
are loaded:

1. no model configured: -32000 (``AuthRequired``) with the configuration instructions;
2. the stored state gives the system prompt (load, resume, fork); a new session builds it now
   (:func:`~._prompt.build_system_prompt`), once;
3. the tools' context (:class:`~._deps.CoderDeps`) over the client's file and terminal services;
4. the MCP servers are connected (:class:`~._mcp.McpServers`);
5. the model engine opens its session with the stored history; a model that cannot be built
   (unknown name, missing API key, provider package not installed) is -32000 too, with
   pydantic-ai's reason (which names the variable to set, never its value).

It also hands over :func:`~._nes_model.suggest_with_model` (next edit suggestions), which
needs the model code as sessions do.

This module imports pydantic-ai (through :mod:`._agent`).
"""

from __future__ import annotations

import dataclasses
from typing import Final

import anyio.to_thread
from pydantic_ai.exceptions import UserError

from ..engines import EngineSession, SessionContext
from ..engines.pydantic_ai import PydanticAIEngine
from ..errors import AuthRequired, InternalError
from ._agent import build_engine, forget_models, prompt_support
from ._config import CoderConfig
from ._deps import CoderDeps
from ._files import Workspace
from ._mcp import McpServers
from ._nes_model import suggest_with_model
from ._paths import Roots
from ._prompt import CoderState, StateError, build_system_prompt, read_project_notes
from ._providers import ProviderRoutes
from ._session import CoderSession

__all__ = ("forget_models", "open_coder_session", "prompt_support", "suggest_with_model")

_KEYLESS_HINT: Final = " To try Pydantic AI without an API key"


def _model_problem(config: CoderConfig, exc: Exception) -> AuthRequired:
    reason = str(exc).split(_KEYLESS_HINT, 1)[0].strip() or type(exc).__name__
    model = config.default_model
    return AuthRequired(
        f"The model {model!r} cannot be used: {reason} "
        "Configure another with `accord serve --model ...` (any pydantic-ai model name).",
        {"model": model},
    )


async def _first_prompt(context: SessionContext) -> CoderState:
    notes = await anyio.to_thread.run_sync(read_project_notes, context.cwd)
    prompt = build_system_prompt(
        cwd=context.cwd,
        additional_directories=context.additional_directories,
        editor_files=context.file_reader is not None,
        editor_terminal=context.terminals is not None,
        project_notes=notes,
    )
    return CoderState(prompt)


async def _open_inner(
    engine: PydanticAIEngine, context: SessionContext, config: CoderConfig
) -> EngineSession:
    try:
        return await engine.open_session(context)
    except (UserError, ImportError) as exc:
        raise _model_problem(config, exc) from exc


async def open_coder_session(
    config: CoderConfig, context: SessionContext, routes: ProviderRoutes | None = None
) -> CoderSession:
    """Open a coder session (module docstring), its models built along ``routes``.

    Raises:
        AuthRequired: no usable model is configured (-32000, with what to do).
        InternalError: the stored state is not a coder session's.
    """
    problem = config.problem()
    if problem is not None:
        raise AuthRequired(problem)
    try:
        state = CoderState.from_json(context.history)
    except StateError as exc:
        raise InternalError(f"session {context.session_id} cannot be restored: {exc}") from exc
    if state is None:
        state = await _first_prompt(context)
    roots = Roots.of(context.cwd, context.additional_directories)
    deps = CoderDeps(
        session_id=context.session_id,
        workspace=Workspace(roots=roots, reader=context.file_reader, writer=context.file_writer),
        terminals=context.terminals,
        mode_id=context.mode_id,
    )
    servers = McpServers(context.mcp_servers, context.cwd, context.mcp_over_acp)
    await servers.open()
    try:
        engine = build_engine(
            config=config,
            routes=routes,
            system_prompt=state.system_prompt,
            deps=deps,
            mcp_toolsets=servers.toolsets,
        )
        inner_context = dataclasses.replace(context, history=state.engine)
        inner = await _open_inner(engine, inner_context, config)
    except BaseException:
        await servers.aclose()
        raise
    return CoderSession(
        context=inner_context, state=state, deps=deps, engine=engine, inner=inner, resources=servers
    )

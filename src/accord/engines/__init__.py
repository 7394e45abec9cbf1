"""Engines: adapters that turn an agent framework into an accord engine.

An *engine* produces the work of a session; the agent runtime (:mod:`accord.agent`, below)
serves it over ACP through the engine protocol (``Engine``, ``EngineSession``,
``TurnContext``). This package holds the adapters, one subpackage per framework:

:mod:`accord.engines.pydantic_ai`
    Any ``pydantic_ai.Agent`` as an engine: streamed text and thinking, tool calls with their
    kind, locations and diffs, tool approval through ``session/request_permission``, usage,
    model switching, cancellation, and the model's message history persisted through the
    session store.

The package itself exports nothing, so that importing it never imports a framework: each
adapter is imported by name (``from accord.engines.pydantic_ai import PydanticAIEngine``) and
needs its framework installed (for pydantic-ai: the ``coder`` extra).

Below: :mod:`accord.agent` (the engine protocol), :mod:`accord.events`, :mod:`accord.schema`.
Above: :mod:`accord.coder` and the CLI.
"""

__all__ = ()

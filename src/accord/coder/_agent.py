"""Building one session's model engine: the pydantic-ai agent and its adapter settings.

A coder session runs on :class:`~accord.engines.pydantic_ai.PydanticAIEngine` configured
here (:func:`build_engine`):

* the agent: the session's stored system prompt as its instructions, the coder's tools plus
  ``delegate``, and the session's MCP toolsets; built per session, since prompt and MCP servers
  are per session (constructing one costs well under a millisecond);
* the models: one :class:`~accord.engines.pydantic_ai.ModelChoice` per configured name
  (:func:`model_choices`), so the ``model`` config option switches between them; with a
  ``base_url`` each is pydantic-ai's OpenAI chat model at that URL;
* the modes: :func:`~._modes.tool_allowed` as the tool filter applied before every model
  request, :func:`~._modes.needs_approval` as the approval hook;
* the display: the tools' behaviours and the coder's translator (terminals, diffs, plans,
  sub-agents).

This module is imported only when the first session needs a model (it loads pydantic-ai).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models import Model
from pydantic_ai.toolsets import AbstractToolset

from ..engines.pydantic_ai import ModelChoice, PydanticAIEngine
from ._ask import ASK_USER_BEHAVIOUR, ask_user, offer_ask_user
from ._config import CoderConfig
from ._deps import CoderDeps
from ._modes import ASK_USER, needs_approval, tool_allowed
from ._subagent import BEHAVIOURS_WITH_DELEGATE, delegate
from ._tools import coder_toolset
from ._translator import CoderTranslator

__all__ = ("build_agent", "build_engine", "model_choices")


def _openai_compatible(base_url: str, model_id: str) -> Callable[[], Model]:
    def build() -> Model:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIChatModel(model_id, provider=OpenAIProvider(base_url=base_url))

    return build


def model_choices(config: CoderConfig) -> list[ModelChoice]:
    """One choice per configured model name (see :mod:`._config` for ``base_url``)."""
    choices: list[ModelChoice] = []
    for name in config.models:
        model: Callable[[], Model] | str = name
        if config.base_url is not None:
            model = _openai_compatible(config.base_url, config.served_model_id(name))
        choices.append(ModelChoice(id=name, model=model, context_window=config.context_window))
    return choices


def build_agent(
    system_prompt: str, mcp_toolsets: Sequence[AbstractToolset[Any]] = ()
) -> Agent[CoderDeps, str]:
    """The session's agent: its instructions, every coder tool and its MCP tools."""
    tools = coder_toolset()
    tools.add_function(delegate)
    tools.add_function(ask_user, prepare=offer_ask_user)
    return Agent(
        name="accord",
        deps_type=CoderDeps,
        instructions=system_prompt,
        toolsets=[tools, *mcp_toolsets],
    )


def build_engine(
    *,
    config: CoderConfig,
    system_prompt: str,
    deps: CoderDeps,
    mcp_toolsets: Sequence[AbstractToolset[Any]] = (),
) -> PydanticAIEngine:
    """The model engine of one coder session (module docstring)."""
    return PydanticAIEngine(
        build_agent(system_prompt, mcp_toolsets),
        models=model_choices(config),
        tool_behaviour={**BEHAVIOURS_WITH_DELEGATE, ASK_USER: ASK_USER_BEHAVIOUR},
        needs_approval=needs_approval,
        tool_filter=tool_allowed,
        deps=lambda _context: deps,
        translator=CoderTranslator,
    )

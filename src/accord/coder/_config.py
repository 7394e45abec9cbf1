"""The coder's configuration: which model(s), where, and what to say when there is none.

Sources, first one wins: the command line (``accord serve --model ... --base-url ...
--context-window ...``), then the environment (:data:`MODEL_ENV`, :data:`BASE_URL_ENV`,
:data:`CONTEXT_WINDOW_ENV`), which the CLI fills from its config file where unset.

* ``model``: any pydantic-ai model name (``openai:gpt-5``, ``anthropic:claude-sonnet-4-5``,
  ``google-gla:gemini-2.5-pro``, ...). Several names separated by commas are offered as the
  choices of the ``model`` config option, the first being the default.
* ``base_url``: an OpenAI-compatible endpoint (Ollama, llama.cpp, vLLM, LM Studio, a proxy).
  With it, every model is served by pydantic-ai's OpenAI chat model at that URL, and the name is
  the server's model id (an ``openai:`` prefix is dropped, so ``openai:qwen2.5-coder:7b`` and
  ``qwen2.5-coder:7b`` both work).
* ``context_window``: the models' context window in tokens, for ``usage_update``; it wins
  over what a ``base_url`` server reports and over pydantic-ai's figure (see
  :mod:`._agent`). The same window decides when the conversation is compacted
  (``compact_share`` of it, 85% unless set).

API keys are never part of the configuration: each provider reads its own variable
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...) from the environment when a session first
needs the model, and nothing here logs, stores or echoes them. Without a model the agent still
starts: ``initialize`` advertises an auth method whose description says how to configure one,
and ``session/new`` answers -32000 with the same instructions (:meth:`CoderConfig.problem`).
The same methods are advertised while the default model's provider key is not in the
environment (:meth:`CoderConfig.missing_key`), since ``session/new`` answers -32000 then too.

This module imports nothing of pydantic-ai.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ..schema import (
    AuthMethod,
    AuthMethodAgent,
    SelectSessionConfigOption,
    SessionConfigSelectOption,
    TerminalAuthMethod,
)

__all__ = (
    "BASE_URL_ENV",
    "CONFIGURE_AUTH_METHOD_ID",
    "CONFIGURE_FLAG",
    "CONTEXT_WINDOW_ENV",
    "MODEL_CONFIG_ID",
    "MODEL_ENV",
    "SAVED_MODEL_AUTH_METHOD_ID",
    "CoderConfig",
)

MODEL_ENV: Final = "ACCORD_MODEL"
"""Environment variable naming the model(s) when ``--model`` is not given."""

BASE_URL_ENV: Final = "ACCORD_BASE_URL"
"""Environment variable with an OpenAI-compatible endpoint when ``--base-url`` is not given."""

CONTEXT_WINDOW_ENV: Final = "ACCORD_CONTEXT_WINDOW"
"""Environment variable with the model's context window in tokens (for local models)."""

MODEL_CONFIG_ID: Final = "model"
"""The id of the model config option (the same as the pydantic-ai engine's)."""

CONFIGURE_AUTH_METHOD_ID: Final = "configure-model"
"""The id of the terminal auth method (``--configure``) advertised while sessions cannot start."""

SAVED_MODEL_AUTH_METHOD_ID: Final = "use-saved-model"
"""The id of the ``agent`` auth method: the agent reads the key ``--configure`` saved again."""

CONFIGURE_FLAG: Final = "--configure"
"""The argument a terminal auth method appends to the agent's command (``accord serve``)."""

_OPENAI_PREFIXES: Final = ("openai:", "openai-chat:")

_KEY_VARIABLES: Final = (
    (_OPENAI_PREFIXES, "OPENAI_API_KEY"),
    (("anthropic:",), "ANTHROPIC_API_KEY"),
    (("google-gla:",), "GOOGLE_API_KEY"),
)
"""Model name prefixes whose provider reads its key from one known variable."""

_HOW_TO: Final = (
    "Start the agent with a model, e.g. `accord serve --model openai:gpt-5` (any pydantic-ai "
    f"model name: anthropic:..., google-gla:..., ...), or set {MODEL_ENV}; put the provider's "
    "API key in its environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_API_KEY, "
    "...). For a local OpenAI-compatible server (Ollama, llama.cpp, vLLM) add "
    "`--base-url http://localhost:11434/v1`."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CoderConfig:
    """Which models the coder uses (module docstring).

    Attributes:
        models: pydantic-ai model names, the default first; empty when none is configured.
        base_url: An OpenAI-compatible endpoint serving every model, if any.
        context_window: The models' context window in tokens, if known only from here.
        compact_share: Compact the conversation before a model request that would take more
            than this share of the model's window (``None``: only on ``/compact``).

    Raises:
        ValueError: ``compact_share`` is not in (0, 1].
    """

    models: tuple[str, ...] = ()
    base_url: str | None = None
    context_window: int | None = None
    compact_share: float | None = 0.85

    def __post_init__(self) -> None:
        """Check ``compact_share``."""
        share = self.compact_share
        if share is not None and (isinstance(share, bool) or not 0 < share <= 1):
            raise ValueError(f"compact_share must be in (0, 1], not {share!r}")

    @classmethod
    def from_sources(
        cls,
        *,
        model: str | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> CoderConfig:
        """Combine the command line (``model``, ``base_url``, ``context_window``) with the
        environment.

        Raises:
            ValueError: ``context_window`` or :data:`CONTEXT_WINDOW_ENV` is not a positive
                integer.
        """
        if context_window is not None and context_window <= 0:
            raise ValueError(f"the context window must be a positive integer, not {context_window}")
        env = environ or {}
        names = model if model else env.get(MODEL_ENV, "")
        models = tuple(name.strip() for name in names.split(",") if name.strip())
        url = base_url or env.get(BASE_URL_ENV) or None
        window_text = env.get(CONTEXT_WINDOW_ENV, "").strip()
        window = context_window
        if window is None and window_text:
            if not window_text.isdigit() or int(window_text) <= 0:
                raise ValueError(f"{CONTEXT_WINDOW_ENV} must be a positive integer")
            window = int(window_text)
        return cls(models=models, base_url=url, context_window=window)

    @property
    def configured(self) -> bool:
        """Whether a model is configured."""
        return bool(self.models)

    @property
    def default_model(self) -> str | None:
        """The model new sessions start with."""
        return self.models[0] if self.models else None

    def problem(self) -> str | None:
        """Why sessions cannot start (an actionable message), or ``None`` when they can."""
        if self.configured:
            return None
        return f"No model is configured for the accord coding agent. {_HOW_TO}"

    def key_variable(self) -> str | None:
        """The variable the default model's provider reads its key from, when known here.

        ``None`` without a model, with a ``base_url`` (local servers mostly take none) and for
        providers whose variable is not known here.
        """
        model = self.default_model
        if model is None or self.base_url is not None:
            return None
        for prefixes, variable in _KEY_VARIABLES:
            if model.startswith(prefixes):
                return variable
        return None

    def missing_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The variable the default model's provider reads its key from, when it is unset.

        ``None`` when :meth:`key_variable` is, and when the variable is set in ``environ``
        (default: this process's environment).
        """
        variable = self.key_variable()
        env = os.environ if environ is None else environ
        return None if variable is None or env.get(variable) else variable

    def key_problem(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Why sessions cannot start for want of a key (:meth:`missing_key`), or ``None``."""
        missing = self.missing_key(environ)
        if missing is None:
            return None
        return (
            f"{missing} is not set, nor saved by `accord serve --configure`: the model "
            f"{self.default_model!r} cannot be used without it."
        )

    def auth_methods(
        self, *, terminal: bool = False, environ: Mapping[str, str] | None = None
    ) -> tuple[AuthMethod, ...]:
        """What ``initialize`` advertises: how to fix the model, while sessions cannot start.

        Advertised while no model is configured or its key is missing (:meth:`missing_key`):
        with ``terminal`` (the client advertised ``auth.terminal``) a terminal method first,
        the client running the agent's command again with ``--configure`` (an interactive
        setup of provider, model and key, saved for later starts); in any case an ``agent``
        method whose description says how to configure one, and with which the agent reads
        the saved key again (:data:`SAVED_MODEL_AUTH_METHOD_ID`).
        """
        missing = self.missing_key(environ)
        if self.configured and missing is None:
            return ()
        how_to = _HOW_TO if missing is None else f"{missing} is not set. {_HOW_TO}"
        agent = AuthMethodAgent(
            id=SAVED_MODEL_AUTH_METHOD_ID,
            name="Use the saved model",
            description=(
                f"{how_to} Or run `accord serve {CONFIGURE_FLAG}` in a terminal, then sign in "
                "with this method: the agent reads the saved key again."
            ),
        )
        if not terminal:
            return (agent,)
        return (
            TerminalAuthMethod(
                id=CONFIGURE_AUTH_METHOD_ID,
                name="Configure a model",
                description=(
                    "Choose the model provider, the model and its API key in a terminal; "
                    "they are saved for later starts (the key in your keyring, or a file "
                    "only you can read)."
                ),
                args=[CONFIGURE_FLAG],
            ),
            agent,
        )

    def served_model_id(self, name: str) -> str:
        """The id sent to the ``base_url`` server for model ``name`` (``openai:`` dropped)."""
        for prefix in _OPENAI_PREFIXES:
            if name.startswith(prefix):
                return name[len(prefix) :]
        return name

    def model_option(self) -> SelectSessionConfigOption | None:
        """The ``model`` config option listing the models (``None`` without models)."""
        if not self.models:
            return None
        return SelectSessionConfigOption(
            id=MODEL_CONFIG_ID,
            name="Model",
            category="model",
            current_value=self.models[0],
            options=[SessionConfigSelectOption(value=name, name=name) for name in self.models],
        )

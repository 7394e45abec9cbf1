"""Building one session's model engine: the pydantic-ai agent and its adapter settings.

A coder session runs on :class:`~accord.engines.pydantic_ai.PydanticAIEngine` configured
here (:func:`build_engine`):

* the agent: the session's stored system prompt as its instructions, the coder's tools plus
  ``delegate``, and the session's MCP toolsets; built per session, since prompt and MCP servers
  are per session (constructing one costs well under a millisecond);
* the models: one :class:`~accord.engines.pydantic_ai.ModelChoice` per configured name
  (:func:`model_choices`), so the ``model`` config option switches between them; with a
  ``base_url`` each is pydantic-ai's OpenAI chat model at that URL; the model objects (with
  their HTTP clients) and the coder's tool definitions are built once per process and shared
  by every session (:func:`shared_model`, :func:`shared_toolset`); a provider routed by
  ``providers/set`` (:mod:`._providers`) builds its models with the URL and headers given
  (:func:`routed_model`, also once per process and route), a disabled one none;
* the context meter: the configured window, else (with a ``base_url``) what the server
  reports (:func:`served_window`, asked once per process and model), else pydantic-ai's; a
  model behind a ``base_url`` has a cost only when ``genai-prices`` knows that server
  (:func:`server_priced`): a local server's model named like a hosted one costs nothing;
* the modes: :func:`~._modes.tool_allowed` as the tool filter applied before every model
  request, :func:`~._modes.needs_approval` as the approval hook;
* the model's view: tool results longer than :data:`TOOL_RESULT_LIMIT` characters are cut
  for the model with a note (``bound_tool_results``; the client gets them whole);
* the display: the tools' behaviours and the coder's translator (terminals, diffs, plans,
  sub-agents).

This module is imported only when the first session needs a model (it loads pydantic-ai).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.models import Model
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from ..engines.pydantic_ai import (
    Compaction,
    ModelChoice,
    PydanticAIEngine,
    ServedWindow,
    bound_tool_results,
)
from ..errors import InvalidParams
from ._ask import ASK_USER_BEHAVIOUR, ask_user, offer_ask_user
from ._config import CoderConfig
from ._deps import CoderDeps
from ._modes import ASK_USER, needs_approval, tool_allowed
from ._providers import ProviderRoutes, Route, routable_provider
from ._subagent import BEHAVIOURS_WITH_DELEGATE, delegate
from ._tools import coder_toolset
from ._translator import CoderTranslator

__all__ = (
    "build_agent",
    "build_engine",
    "forget_models",
    "model_choices",
    "routed_model",
    "served_window",
    "server_priced",
    "shared_model",
    "shared_toolset",
)

#: Model families known to read images (the name after any ``vendor/`` or ``vendor.`` part).
#: pydantic-ai's profiles default to images on, so a model no profile describes (e.g.
#: ``openai:gpt-3.5-turbo``) would be said to read them: a client would send a pasted image
#: to a text-only model. Only these families advertise ``promptCapabilities.image``.
_READS_IMAGES: Final = re.compile(
    r"(?:^|[./])(?:gpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-4-vision|gpt-5|chatgpt-4o"
    r"|o1(?!-mini|-preview)|o3(?!-mini)|o4-mini|claude-3|claude-(?:sonnet|opus|haiku)-4"
    r"|gemini|pixtral|mistral-(?:medium|small)|llama-4|grok-2-vision|grok-4|nova-(?:pro|lite))"
)


def known_to_read_images(model_name: str) -> bool:
    """Whether ``model_name`` (a pydantic-ai model's ``model_name``) is of a family known to
    read images (:data:`_READS_IMAGES`)."""
    return _READS_IMAGES.search(model_name.lower()) is not None


TOOL_RESULT_LIMIT: Final = 40_000
"""The longest tool result (characters) the model sees whole; longer ones are cut with a note."""


_NO_KEY: Final = "api-key-not-set"
"""The key sent to a routed server when none is given: a server other than the public API
may take none (pydantic-ai does the same for an OpenAI provider with a base URL)."""


def _openai_provider(
    base_url: str, headers: tuple[tuple[str, str], ...], key: str | None, *, public: bool
) -> Any:
    """An OpenAI provider for a route: its headers sent with every request (over the SDK's own).

    The provider makes (and closes, and makes again on another event loop) its HTTP client
    as pydantic-ai's own providers do; only the client's default headers are the route's.

    Raises:
        UserError: the public API and no key anywhere.
    """
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.providers.openai import OpenAIProvider

    from ._openai_chat import plain_chat

    api_key = key or os.environ.get("OPENAI_API_KEY")
    if not api_key and public:
        raise UserError(
            "no OpenAI key: send it as an Authorization header with providers/set, or set "
            "OPENAI_API_KEY."
        )
    extra = dict(headers)

    class RoutedOpenAIProvider(OpenAIProvider):
        """pydantic-ai's OpenAI provider with the route's headers on its client."""

        def _create_openai_client(
            self,
            *,
            base_url: str | None,
            api_key: Any,
            http_client: Any,
            default_headers: Mapping[str, str] | None = None,
        ) -> Any:
            merged: dict[str, str] = {**extra, **(default_headers or {})}
            return super()._create_openai_client(
                base_url=base_url, api_key=api_key, http_client=http_client, default_headers=merged
            )

    routed = RoutedOpenAIProvider(base_url=base_url, api_key=api_key or _NO_KEY)
    plain_chat(routed.client)
    return routed


@functools.cache
def routed_model(route: Route, model_name: str) -> Model:
    """The pydantic-ai model ``model_name`` with its provider's requests sent along ``route``
    (base URL and headers of ``providers/set``), once per process and route.

    The model class is pydantic-ai's for the name (``openai:`` a Responses model,
    ``openai-chat:`` a chat model, ``anthropic:`` ...); only its provider is built here.

    Raises:
        UserError: the route is to the public API and no key is anywhere.
    """
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model
    from pydantic_ai.providers import Provider, infer_provider

    from ._providers import ROUTABLE_PROVIDERS

    provider = next(p for p in ROUTABLE_PROVIDERS if p.id == route.provider_id)
    public = route.base_url == provider.default_base_url

    def factory(name: str) -> Provider[Any]:
        if name not in provider.model_prefixes:
            return infer_provider(name)
        if provider.id == "openai":
            return _openai_provider(route.base_url, route.headers, route.key(), public=public)
        from anthropic import AsyncAnthropic
        from pydantic_ai.providers.anthropic import AnthropicProvider

        api_key = route.header("x-api-key") or None
        token = route.key() if api_key is None and route.header("authorization") else None
        if api_key is None and token is None:
            api_key = os.environ.get("ANTHROPIC_API_KEY") or (None if public else _NO_KEY)
        if api_key is None and token is None:
            raise UserError(
                "no Anthropic key: send it as an x-api-key header with providers/set, or set "
                "ANTHROPIC_API_KEY."
            )
        client = AsyncAnthropic(
            api_key=api_key,
            auth_token=token,
            base_url=route.base_url,
            default_headers=dict(route.headers),
        )
        return AnthropicProvider(anthropic_client=client)

    return infer_model(model_name, provider_factory=factory)


def _disabled(provider_id: str, model_name: str) -> Model:
    """The factory of a disabled provider's model: always refuses.

    Raises:
        InvalidParams: always (-32602: the model cannot be chosen now).
    """
    raise InvalidParams(
        f"the model {model_name!r} cannot be used: its provider {provider_id!r} is disabled "
        "(providers/disable); providers/set enables it again",
        {"model": model_name, "providerId": provider_id},
    )


@functools.cache
def shared_model(
    base_url: str | None, model_id: str, headers: tuple[tuple[str, str], ...] = ()
) -> Model:
    """The model ``model_id`` (at ``base_url``, else a pydantic-ai model name), once per process.

    Every session of the process uses the same model object, and so the same provider and
    HTTP client (its connection pool, its TLS context): built per session, they were about
    nine tenths of a session's memory (``docs/benchmarks.md``). Sharing is safe: a model
    holds no conversation state, and pydantic-ai counts the sessions that entered it, closes
    its client when the last one leaves and opens a new one when another enters.

    ``headers`` (a route of ``providers/set`` to an OpenAI-compatible server) are sent with
    every request; a bearer token among them is the key.

    Raises:
        Exception: what pydantic-ai raises for a model it cannot build (e.g. no API key);
            nothing is cached then, so the next session tries again.
    """
    if base_url is None:
        from pydantic_ai.models import infer_model

        return infer_model(model_id)
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.profiles import ModelProfile
    from pydantic_ai.providers.openai import OpenAIProvider

    from ._openai_chat import plain_chat

    # A model on an OpenAI-compatible server (Ollama, vLLM, ...) is known by a name no
    # profile describes, and most served models read text only: its profile says so, and
    # the agent's prompt capabilities follow (``prompt_support``).
    text_only = ModelProfile(supports_image_input=False, supports_audio_file_input=False)
    if headers:
        key = Route("openai", "openai", base_url, headers).key()
        provider = _openai_provider(base_url, headers, key, public=False)
    else:
        provider = OpenAIProvider(base_url=base_url)
        plain_chat(provider.client)
    return OpenAIChatModel(model_id, provider=provider, profile=text_only)


def forget_models() -> None:
    """Drop every model built so far (and the keys their clients hold): the next session
    builds its own from the credentials there are then. Sessions holding one keep it."""
    shared_model.cache_clear()
    routed_model.cache_clear()


def prompt_support(config: CoderConfig) -> tuple[bool, bool] | None:
    """Whether every configured model takes images, and audio, by its pydantic-ai profile.

    Images also need the model to be of a family known to read them
    (:func:`known_to_read_images`): a profile says images unless it knows better.

    The agent advertises ``promptCapabilities.image`` / ``.audio`` from this, so a client
    does not send a pasted image to a model that cannot read it. ``None`` when a model cannot
    be built (e.g. no API key yet): the caller takes that as neither, and does not remember it
    (see :mod:`._prompt_cache`).
    """
    image = audio = bool(config.models)
    for choice in model_choices(config):
        try:
            model = choice.build()
        except Exception:
            return None
        profile = model.profile
        image = image and bool(profile.get("supports_image_input", True))
        # the profile's default is images on: only a model known to read them keeps it
        image = image and known_to_read_images(model.model_name)
        audio = audio and bool(profile.get("supports_audio_file_input", False))
    return image, audio


@functools.cache
def served_window(base_url: str, model_id: str) -> ServedWindow:
    """The window the server at ``base_url`` reports for ``model_id``: one lookup per process.

    The request carries ``OPENAI_API_KEY`` when it is set, as the model's own requests do.
    """
    return ServedWindow(base_url, model_id, api_key=os.environ.get("OPENAI_API_KEY") or None)


@functools.cache
def server_priced(base_url: str) -> bool:
    """Whether ``genai-prices`` knows the server at ``base_url`` (and so its models' prices).

    A server it does not know (a local one, a private proxy) bills nobody by its list, so its
    models get no cost even when one is named like a hosted model.
    """
    from genai_prices.data_snapshot import get_snapshot

    try:
        get_snapshot().find_provider(None, None, base_url)
    except LookupError:
        return False
    return True


def model_choices(config: CoderConfig, routes: ProviderRoutes | None = None) -> list[ModelChoice]:
    """One choice per configured model name (see :mod:`._config` for ``base_url``), built
    along the provider routes of ``providers/set`` when given (:mod:`._providers`)."""
    choices: list[ModelChoice] = []
    window = config.context_window
    for name in config.models:
        provider = routable_provider(name, base_url=config.base_url)
        route = None if routes is None or provider is None else routes.route(provider.id)
        if routes is not None and provider is not None and routes.disabled(provider.id):
            build = functools.partial(_disabled, provider.id, name)
            choices.append(ModelChoice(id=name, model=build, context_window=window))
            continue
        if config.base_url is None:
            if route is not None:
                build = functools.partial(routed_model, route, name)
            else:
                build = functools.partial(shared_model, None, name)
            choices.append(ModelChoice(id=name, model=build, context_window=window))
            continue
        model_id = config.served_model_id(name)
        base_url = config.base_url if route is None else route.base_url
        headers = () if route is None else route.headers
        lookup = None
        if not window:
            lookup = (
                served_window(base_url, model_id)
                if route is None
                else ServedWindow(base_url, model_id, api_key=route.key())
            )
        choices.append(
            ModelChoice(
                id=name,
                model=functools.partial(shared_model, base_url, model_id, headers),
                context_window=window,
                window_lookup=lookup,
                priced=server_priced(base_url),
            )
        )
    return choices


@functools.cache
def shared_toolset() -> FunctionToolset[CoderDeps]:
    """Every coder tool, ``delegate`` and ``ask_user``: built once, shared by every session.

    A tool's definition (its JSON schema, its argument validator, compiled by pydantic-core)
    is the same for every session, and building it is most of what a session costs: shared,
    a new session costs about a tenth (see ``docs/benchmarks.md``). Per-call state lives in
    the run context, never in the toolset.
    """
    tools = coder_toolset()
    tools.add_function(delegate)
    tools.add_function(ask_user, prepare=offer_ask_user)  # offered per turn (see _ask.py)
    return tools


def build_agent(
    system_prompt: str, mcp_toolsets: Sequence[AbstractToolset[Any]] = ()
) -> Agent[CoderDeps, str]:
    """The session's agent: its instructions, every coder tool and its MCP tools."""
    return Agent(
        name="accord",
        deps_type=CoderDeps,
        instructions=system_prompt,
        toolsets=[shared_toolset(), *mcp_toolsets],
        capabilities=[ProcessHistory(bound_tool_results(TOOL_RESULT_LIMIT))],
    )


def build_engine(
    *,
    config: CoderConfig,
    routes: ProviderRoutes | None = None,
    system_prompt: str,
    deps: CoderDeps,
    mcp_toolsets: Sequence[AbstractToolset[Any]] = (),
) -> PydanticAIEngine:
    """The model engine of one coder session (module docstring)."""

    def translator(**kwargs: Any) -> CoderTranslator:
        made = CoderTranslator(**kwargs)
        deps.acp_tool_call_id = made.acp_tool_call_id
        return made

    return PydanticAIEngine(
        build_agent(system_prompt, mcp_toolsets),
        models=model_choices(config, routes),
        tool_behaviour={**BEHAVIOURS_WITH_DELEGATE, ASK_USER: ASK_USER_BEHAVIOUR},
        needs_approval=needs_approval,
        tool_filter=tool_allowed,
        deps=lambda _context: deps,
        translator=translator,
        titles=True,
        compaction=None if config.compact_share is None else Compaction(share=config.compact_share),
    )

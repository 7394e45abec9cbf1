"""The coder as an engine: capabilities now, pydantic-ai only when a session needs a model.

:class:`CoderEngine` is what the agent runtime serves. Its capabilities are known without any
model code (modes, the ``model`` option, slash commands, MCP over HTTP), except what prompts
may hold: images and audio are taken as the configured models' pydantic-ai profiles say, read
by :meth:`CoderEngine.resolve_prompt_support` (``accord serve`` runs it in ``initialize``). The
answer is remembered per configuration and pydantic-ai version (:mod:`._prompt_cache`), so only
the first start with a new configuration waits there for the model code; later starts answer
``initialize`` without importing it. Everything heavy (pydantic-ai, the
OpenAI SDK: about a second of imports) lives in :mod:`._open` and below, imported in a worker
thread (by that, by :meth:`CoderEngine.prewarm` or, at the latest, by the first
:meth:`CoderEngine.open_session`) so the event loop keeps serving (a ``session/cancel`` is
never stuck behind an import).

This module imports nothing of pydantic-ai.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
from typing import TYPE_CHECKING, Final

import anyio.to_thread

from ..engines import (
    EditFeedback,
    EditRequest,
    Engine,
    EngineCapabilities,
    EngineSession,
    SessionContext,
    SuggestedEdit,
)
from ..errors import AuthRequired, InternalError
from ..schema import ProviderInfo, SetProviderRequest
from ._commands import COMMANDS
from ._config import CoderConfig
from ._credentials import accord_config_dir
from ._modes import DEFAULT_MODE_ID, mode_option, session_modes
from ._nes import Verdicts
from ._prompt_cache import cached_support, remember_support
from ._providers import ProviderRoutes, Route, routable_provider

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ("HEAVY_MODULE", "CoderEngine")

_log = logging.getLogger("accord.coder")

HEAVY_MODULE: Final = "accord.coder._open"
"""The module that loads pydantic-ai; imported lazily."""


_loaded: list[ModuleType] = []

EXTRA_MODULES: Final = frozenset(
    {"pydantic_ai", "pydantic_graph", "genai_prices", "openai", "anthropic", "google", "mcp"}
)
"""Top-level modules of the ``coder`` extra: missing, they are reported as such."""


async def _load_heavy(*, abandon_on_cancel: bool = False) -> ModuleType:
    """Import :data:`HEAVY_MODULE` in a worker thread, once.

    ``sys.modules`` is not consulted: while another thread imports the module it is there but
    incomplete. ``import_module`` waits for that import to finish instead.
    """
    if not _loaded:
        try:
            module = await anyio.to_thread.run_sync(
                importlib.import_module, HEAVY_MODULE, abandon_on_cancel=abandon_on_cancel
            )
        except ModuleNotFoundError as error:
            if error.name is None or error.name.split(".")[0] not in EXTRA_MODULES:
                raise
            raise InternalError(
                f'the accord coding agent needs the "coder" extra: pip install "accord[coder]" '
                f"(missing module: {error.name})",
                {"error": "ModelNotInstalled", "missing": error.name},
            ) from None
        if not _loaded:
            _loaded.append(module)
    return _loaded[0]


class CoderEngine(Engine):
    """The accord coding agent's engine (module docstring).

    With a model configured it also suggests next edits (``EngineCapabilities.nes``, the
    :class:`~accord.engines.EditSuggester` methods): one small request to the default model
    per ``nes/suggest`` (:mod:`._nes`, :mod:`._nes_model`), the client's verdicts on earlier
    suggestions fed into the next request of the same NES session.

    Args:
        config: The models to use (none: sessions are refused with instructions).
    """

    def __init__(self, config: CoderConfig) -> None:
        """Derive the capabilities from ``config``; nothing heavy is loaded."""
        self._config = config
        self._prompt_support_resolved = False
        self._verdicts = Verdicts()
        self._routes: ProviderRoutes | None = None
        option = config.model_option()
        self._capabilities = EngineCapabilities(
            image=False,  # until resolve_prompt_support() read the models' profiles
            embedded_context=True,
            mcp_http=True,
            mcp_acp=True,
            nes=config.configured,
            modes=session_modes(),
            default_mode_id=DEFAULT_MODE_ID,
            config_options=(mode_option(),) if option is None else (mode_option(), option),
            commands=COMMANDS,
        )

    @property
    def config(self) -> CoderConfig:
        """The configuration."""
        return self._config

    @property
    def capabilities(self) -> EngineCapabilities:
        """Modes (also as the ``mode`` option), the model option, commands, MCP over HTTP and
        over ACP, next edit suggestions (with a model configured), images and audio as the
        models' profiles say (see :meth:`resolve_prompt_support`)."""
        return self._capabilities

    async def resolve_prompt_support(self) -> None:
        """Take images and audio in prompts as the configured models' profiles say (once).

        The answer remembered for this configuration (:mod:`._prompt_cache`) is taken without
        loading anything; otherwise the model code is loaded (in a worker thread) and the
        answer remembered. Without a model, when a model cannot be built yet (no API key) or
        the code cannot be loaded, prompts take neither.
        """
        if self._prompt_support_resolved or not self._config.configured:
            return
        self._prompt_support_resolved = True
        support = await anyio.to_thread.run_sync(cached_support, self._config)
        if support is None:
            try:
                module = await _load_heavy()
                support = module.prompt_support(self._config)
            except InternalError:  # the extra is missing: open_session says so
                return
            except Exception:
                _log.warning("the models' profiles could not be read", exc_info=True)
                return
            if support is None:  # a model cannot be built yet: neither, not remembered
                return
            await anyio.to_thread.run_sync(remember_support, self._config, support)
        image, audio = support
        self._capabilities = dataclasses.replace(self._capabilities, image=image, audio=audio)

    async def prewarm(self) -> None:
        """Load the model code in a worker thread, so the first session does not wait for it.

        Cancelling it does not wait for the import to finish. A failure is left for
        :meth:`open_session` to report.
        """
        if not self._config.configured:
            return
        try:
            await _load_heavy(abandon_on_cancel=True)
        except InternalError as error:  # the extra is missing: said once, plainly
            _log.warning("%s", error.message)
        except Exception:
            _log.warning("loading the model code failed", exc_info=True)

    def forget_models(self) -> None:
        """Drop the models built so far (``logout``, a provider changed): the next session
        builds its model again, from the credentials there are then. Live sessions keep theirs."""
        if _loaded:
            _loaded[0].forget_models()

    # ------------------------------------------------------------------ providers (._providers)

    async def _provider_routes(self) -> ProviderRoutes:
        """The providers' routing, read from the config dir the first time (worker thread)."""
        if self._routes is None:
            routes = ProviderRoutes(accord_config_dir())
            await anyio.to_thread.run_sync(routes.load)
            if self._routes is None:
                self._routes = routes
        return self._routes

    def _in_use(self) -> str | None:
        """The routable provider of the default model (``required``), or ``None``."""
        model = self._config.default_model
        if model is None:
            return None
        provider = routable_provider(model, base_url=self._config.base_url)
        return None if provider is None else provider.id

    async def list_providers(self) -> list[ProviderInfo]:
        """``providers/list`` (see :mod:`._providers`)."""
        routes = await self._provider_routes()
        return await anyio.to_thread.run_sync(
            lambda: routes.describe(in_use=self._in_use(), base_url=self._config.base_url)
        )

    async def set_provider(self, request: SetProviderRequest) -> None:
        """``providers/set``: kept (headers with the keys), and the models built so far
        dropped, so the next session builds along the new route; live sessions keep theirs.

        Raises:
            InvalidParams: see :mod:`._providers` (-32602).
            OSError: the configuration cannot be written.
        """
        routes = await self._provider_routes()
        await anyio.to_thread.run_sync(routes.set, request)
        self.forget_models()

    async def disable_provider(self, provider_id: str) -> None:
        """``providers/disable`` (see :mod:`._providers`); live sessions keep their models.

        Raises:
            InvalidParams: an unknown id, or the default model's provider (-32602).
            OSError: the configuration cannot be written.
        """
        routes = await self._provider_routes()
        required = self._in_use()
        await anyio.to_thread.run_sync(lambda: routes.disable(provider_id, required=required))
        self.forget_models()

    async def route_in_use(self) -> Route | None:
        """The ``providers/set`` route of the default model's provider, or ``None``."""
        in_use = self._in_use()
        if in_use is None:
            return None
        return (await self._provider_routes()).route(in_use)

    async def key_problem(self) -> str | None:
        """Why sessions cannot start for want of a key, or ``None``: none when a route of
        ``providers/set`` serves the default model (the route says where its key is)."""
        if await self.route_in_use() is not None:
            return None
        return self._config.key_problem()

    async def open_session(self, context: SessionContext) -> EngineSession:
        """Open a coder session (see :mod:`._open`), its models built along the provider
        routes (:mod:`._providers`).

        Raises:
            AuthRequired: no usable model is configured (-32000, saying what to do).
            InternalError: the stored state cannot be read back.
        """
        problem = self._config.problem() or await self.key_problem()
        if problem is not None:
            raise AuthRequired(problem)
        routes = await self._provider_routes()
        module = await _load_heavy()
        session: EngineSession = await module.open_coder_session(self._config, context, routes)
        return session

    async def suggest_edits(self, request: EditRequest) -> list[SuggestedEdit]:
        """``nes/suggest``: the default model's suggestion (:mod:`._nes_model`), the model
        built along the provider routes as a session's is.

        Raises:
            AuthRequired: no usable model (-32000, saying what to do).
            InternalError: the model failed or its answer is unusable (``data.reason``).
        """
        problem = self._config.problem() or await self.key_problem()
        if problem is not None:
            raise AuthRequired(problem)
        routes = await self._provider_routes()
        module = await _load_heavy()
        verdicts = self._verdicts.lines(request.nes_session_id)
        made: list[SuggestedEdit] = await module.suggest_with_model(
            self._config, request, verdicts, routes
        )
        return made

    async def edit_feedback(self, feedback: EditFeedback) -> None:
        """``nes/accept`` / ``nes/reject``: remembered for the session's next requests."""
        self._verdicts.note(feedback)

"""The coder served over ACP: the agent runtime, plus model warm-up and the auth method.

:class:`CoderRuntime` is an :class:`~accord.agent.AgentRuntime` serving a
:class:`~._engine.CoderEngine`, with three additions:

* ``agentInfo`` names accord;
* without a configured model, ``initialize`` advertises one auth method whose description says
  how to configure a model, and ``authenticate`` answers -32000 with the same text (the model
  cannot be configured over ACP; restarting the agent with ``--model`` is the way);
* while serving (:meth:`CoderRuntime.serve`), answering ``initialize`` starts loading the model
  code in the background, so ``initialize`` is fast and the first ``session/new`` rarely waits;
* ``logout`` (``auth.logout``) is offered exactly when it can work: the default model's key
  is one ``accord serve --configure`` saved (keyring or file) and this process's variable
  holds that key or nothing (a key the user exported is not the agent's to forget). It
  removes the saved key, takes it out of this process's environment and drops the models
  built with it: the next ``session/new`` answers -32000 again, with the sign-in methods;
  live sessions keep the model they have until they close;
* ``auth/status`` (unstable, ``auth.status``) says whether sessions can start:
  ``unauthenticated`` (no model, or its key is missing), ``authenticated`` (a ``providers/set``
  route with a key serves the default model, or its key variable is set; the account is that
  route or variable, never the key) or ``not_required`` (a model that takes no key); after
  ``authenticate``, ``logout``, ``providers/set`` and ``providers/disable`` every connected
  client whose last report differs (in state or accounts) is sent ``auth/status_update``;
* a session that has no stored engine state yet (new, or created and never prompted) gets its
  state, the system prompt just built, saved before the response: the runtime stores engine
  state only from turns, and the prompt must be stored from the start;
* with ``freeze_heap=True`` (``accord serve``), once the first prompt turn has ended (the
  model code, the shared model and the tools are built by then), the objects that live as
  long as the process are frozen out of the garbage collector's full collections
  (:mod:`._heap`), which keeps its pauses short.

This module imports nothing of pydantic-ai.
"""

from __future__ import annotations

import logging
import os
import weakref
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from ..agent import ActivityLog, AgentRuntime
from ..errors import AuthRequired, InvalidParams
from ..schema import (
    AuthAccount,
    AuthenticateRequest,
    AuthenticateResponse,
    AuthStatusRequest,
    AuthStatusResponse,
    AuthStatusUpdateNotification,
    DisableProviderRequest,
    DisableProviderResponse,
    ForkSessionRequest,
    ForkSessionResponse,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    LogoutRequest,
    LogoutResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SetProviderRequest,
    SetProviderResponse,
)
from ..store import SessionStore
from ._config import SAVED_MODEL_AUTH_METHOD_ID, CoderConfig
from ._credentials import accord_config_dir, forget_saved_key, load_saved_model, read_secret
from ._engine import CoderEngine
from ._heap import freeze_heap
from ._session import CoderSession

if TYPE_CHECKING:
    from ..transports import Transport

__all__ = ("CoderRuntime", "agent_info")

_log = logging.getLogger("accord.coder")


def agent_info() -> Implementation:
    """accord's ``agentInfo``: its name and installed version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("accord")
    except PackageNotFoundError:  # pragma: lax no cover - running from a source tree
        installed = "0"
    return Implementation(name="accord", title="accord coding agent", version=installed)


class CoderRuntime(AgentRuntime):
    """The accord coding agent as an ACP agent (module docstring).

    Args:
        config: The models to use.
        store: Where sessions are kept (default: the SQLite store at its default path).
        owns_store: Close ``store`` in :meth:`aclose` (default: only the default store, which
            the runtime creates itself).
        activity: Where to write the activity log (see :class:`~accord.agent.AgentRuntime`).
        freeze_heap: Freeze the heap out of the garbage collector after the first prompt
            turn (module docstring): for a process that is the agent and nothing else.
    """

    def __init__(
        self,
        config: CoderConfig,
        *,
        store: SessionStore | None = None,
        owns_store: bool = False,
        activity: ActivityLog | str | os.PathLike[str] | None = None,
        live_from_elsewhere: bool = False,
        grace: float = 0.0,
        freeze_heap: bool = False,
    ) -> None:
        """Build the engine and the runtime around it (``live_from_elsewhere``: see
        :class:`~accord.agent.AgentRuntime`; for a store several processes share; ``grace``:
        see :class:`~accord.agent.AgentRuntime`).

        Raises:
            OSError: the activity file cannot be opened.
        """
        self._coder = CoderEngine(config)
        super().__init__(
            self._coder,
            store=store,
            agent_info=agent_info(),
            activity=activity,
            live_from_elsewhere=live_from_elsewhere,
            grace=grace,
        )
        self.auth_methods = config.auth_methods()
        self._background: TaskGroup | None = None
        self._warm = False
        self._close_store = owns_store and store is not None
        self._freeze_pending = freeze_heap
        # The last auth state (state and accounts) sent on each connection (or answered to it).
        self._auth_told: weakref.WeakKeyDictionary[object, object] = weakref.WeakKeyDictionary()

    @property
    def coder(self) -> CoderEngine:
        """The coder engine."""
        return self._coder

    async def aclose(self) -> None:
        """Close every live session and the store, if the runtime owns it."""
        try:
            await super().aclose()
        finally:
            if self._close_store:
                self._close_store = False
                await self.store.aclose()

    async def serve(self, transport: Transport) -> None:
        """Serve one client over ``transport``; the model code loads after ``initialize``."""
        async with anyio.create_task_group() as background:
            self._background = background
            try:
                await super().serve(transport)
            finally:
                self._background = None
                background.cancel_scope.cancel()

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        """Answer as the runtime does, then start loading the model code (once).

        Without a model, the auth method is a terminal one when the client can run it
        (``clientCapabilities.auth.terminal``), else an ``agent`` one with instructions.
        """
        terminal = request.client_capabilities.auth.terminal
        self.auth_methods = self._coder.config.auth_methods(terminal=terminal)
        # Prompt capabilities come from the models' profiles: remembered per configuration
        # (no import), else read once the model code is in; the runtime advertises and checks
        # these.
        await self._coder.resolve_prompt_support()
        self._capabilities = self._coder.capabilities
        response = await super().initialize(request)
        if not self._warm and self._background is not None:
            self._warm = True
            self._background.start_soon(self._coder.prewarm)
        return response

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        """``session/prompt``; the first turn to end freezes the heap, if asked to."""
        response = await super().prompt(request)
        if self._freeze_pending:
            self._freeze_pending = False
            frozen = freeze_heap()
            _log.debug("froze %d objects out of the garbage collector", frozen)
        return response

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        """``session/new``; the system prompt is stored before the answer."""
        response = await super().new_session(request)
        await self._store_initial_state(response.session_id)
        return response

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        """``session/load``; a session stored without state gets it now."""
        response = await super().load_session(request)
        await self._store_initial_state(request.session_id)
        return response

    async def resume_session(self, request: ResumeSessionRequest) -> ResumeSessionResponse:
        """``session/resume``; a session stored without state gets it now."""
        response = await super().resume_session(request)
        await self._store_initial_state(request.session_id)
        return response

    async def fork_session(self, request: ForkSessionRequest) -> ForkSessionResponse:
        """``session/fork``; a copy of a session without state gets it now."""
        response = await super().fork_session(request)
        await self._store_initial_state(response.session_id)
        return response

    async def _store_initial_state(self, session_id: str) -> None:
        # The runtime keeps engine state only from StateSnapshot events, which only turns
        # yield; until the engine protocol can hand over a session's opening state, the coder
        # stores it itself through the runtime's session table (reaching into AgentRuntime).
        live = self._sessions.live.get(session_id)
        if live is None or live.has_engine_state:
            return
        if isinstance(live.engine, CoderSession):
            live.keep_engine_state(live.engine.opening_state_json())
            await live.save(self.store)

    def _stored_key(self) -> tuple[str, str] | None:
        """The default model's key variable and the saved key, when ``logout`` can forget it."""
        variable = self._coder.config.key_variable()
        if variable is None:
            return None
        stored = read_secret(accord_config_dir(), variable)
        if stored is None or os.environ.get(variable, stored) != stored:
            return None
        return variable, stored

    def offered_methods(self) -> set[str]:
        """The runtime's methods; ``logout`` only while there is a saved key to forget."""
        offered = super().offered_methods()
        if self._stored_key() is None:
            offered.discard("logout")
        return offered

    async def logout(self, request: LogoutRequest) -> LogoutResponse:
        """Forget the saved key (module docstring); nothing to do when it is already gone.

        Raises:
            OSError: the configuration directory cannot be rewritten.
        """
        found = await anyio.to_thread.run_sync(self._stored_key)
        variable = self._coder.config.key_variable()
        if variable is not None:
            await anyio.to_thread.run_sync(forget_saved_key, accord_config_dir(), variable)
        if found is not None and os.environ.get(found[0]) == found[1]:
            del os.environ[found[0]]
        self._coder.forget_models()
        self.auth_methods = self._coder.config.auth_methods()
        await self._tell_auth_status()
        return LogoutResponse()

    # ------------------------------------------------------------------ auth status

    async def _auth_state(self) -> AuthStatusResponse:
        """Whether sessions can start, and with what key (module docstring)."""
        coder = self._coder
        config = coder.config
        if config.problem() is not None or await coder.key_problem() is not None:
            return AuthStatusResponse(state="unauthenticated")
        route = await coder.route_in_use()
        if route is not None and route.key() is not None:
            label = f"{route.provider_id} key (providers/set)"
            return AuthStatusResponse(
                state="authenticated", accounts=[AuthAccount(label=label, active=True)]
            )
        variable = config.key_variable()
        if variable is None or not os.environ.get(variable):
            return AuthStatusResponse(state="not_required")
        return AuthStatusResponse(
            state="authenticated", accounts=[AuthAccount(label=f"{variable} key", active=True)]
        )

    async def auth_status(self, request: AuthStatusRequest) -> AuthStatusResponse:
        """``auth/status`` (unstable): the state now; never refused with -32000."""
        status = await self._auth_state()
        link = self._find_link()
        if link is not None:
            self._auth_told[link.connection] = _told(status)
        return status

    async def _tell_auth_status(self) -> None:
        """Send ``auth/status_update`` to every connection whose last report differs (in
        its state or its accounts)."""
        status = await self._auth_state()
        update = AuthStatusUpdateNotification(state=status.state, accounts=status.accounts)
        told = _told(status)
        for connection in list(self._links):
            if self._auth_told.get(connection) == told:
                continue
            self._auth_told[connection] = told
            try:
                await connection.auth_status_update(update)
            except Exception as error:  # a client gone meanwhile: nothing to tell
                _log.debug("auth/status_update not sent: %s", error)

    async def set_provider(self, request: SetProviderRequest) -> SetProviderResponse:
        """``providers/set``, then ``auth/status_update`` where the state changed."""
        try:
            return await super().set_provider(request)
        finally:
            await self._tell_auth_status()

    async def disable_provider(self, request: DisableProviderRequest) -> DisableProviderResponse:
        """``providers/disable``, then ``auth/status_update`` where the state changed."""
        try:
            return await super().disable_provider(request)
        finally:
            await self._tell_auth_status()

    async def authenticate(self, request: AuthenticateRequest) -> AuthenticateResponse:
        """Sign in (:meth:`_authenticate`), then ``auth/status_update`` where it changed."""
        try:
            return await self._authenticate(request)
        finally:
            await self._tell_auth_status()

    async def _authenticate(self, request: AuthenticateRequest) -> AuthenticateResponse:
        """Sign in with an advertised method; nothing to do once sessions can start.

        With the ``agent`` method (:data:`~._config.SAVED_MODEL_AUTH_METHOD_ID`) the key
        ``accord serve --configure`` saved is read again into this process's environment.

        Raises:
            InvalidParams: the method id is not one this agent advertised (-32602).
            AuthRequired: sessions still cannot start (-32000, with the instructions).
        """
        offered = [method.id for method in self.auth_methods]
        if request.method_id not in offered:
            named = ", ".join(offered) if offered else "none: no sign-in is needed"
            raise InvalidParams(
                f"unknown auth method {request.method_id!r}; this agent offers {named}",
                {"methodId": request.method_id, "offered": offered},
            )
        config = self._coder.config
        if request.method_id == SAVED_MODEL_AUTH_METHOD_ID and config.missing_key() is not None:
            await anyio.to_thread.run_sync(load_saved_model, accord_config_dir(), os.environ)
        problem = config.problem() or config.key_problem()
        if problem is not None:
            raise AuthRequired(problem, {"methodId": request.method_id})
        return AuthenticateResponse()


def _told(status: AuthStatusResponse) -> object:
    """What a client was told of the auth state: its state and accounts (labels, active)."""
    return status.state, tuple((account.label, account.active) for account in status.accounts)

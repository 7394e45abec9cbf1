"""The coder served over ACP: the agent runtime, plus model warm-up and the auth method.

:class:`CoderRuntime` is an :class:`~accord.agent.AgentRuntime` serving a
:class:`~._engine.CoderEngine`, with three additions:

* ``agentInfo`` names accord;
* without a configured model, ``initialize`` advertises one auth method whose description says
  how to configure a model, and ``authenticate`` answers -32000 with the same text (the model
  cannot be configured over ACP; restarting the agent with ``--model`` is the way);
* while serving (:meth:`CoderRuntime.serve`), answering ``initialize`` starts loading the model
  code in the background, so ``initialize`` is fast and the first ``session/new`` rarely waits.

This module imports nothing of pydantic-ai.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from ..agent import AgentRuntime
from ..errors import AuthRequired
from ..schema import (
    AuthenticateRequest,
    AuthenticateResponse,
    Implementation,
    InitializeRequest,
    InitializeResponse,
)
from ..store import SessionStore
from ._config import CoderConfig
from ._engine import CoderEngine

if TYPE_CHECKING:
    from ..transports import Transport

__all__ = ("CoderRuntime", "agent_info")


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
    """

    def __init__(
        self,
        config: CoderConfig,
        *,
        store: SessionStore | None = None,
        owns_store: bool = False,
    ) -> None:
        """Build the engine and the runtime around it."""
        self._coder = CoderEngine(config)
        super().__init__(self._coder, store=store, agent_info=agent_info())
        self.auth_methods = config.auth_methods()
        self._background: TaskGroup | None = None
        self._warm = False
        self._close_store = owns_store and store is not None

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
        """Answer as the runtime does, then start loading the model code (once)."""
        response = await super().initialize(request)
        if not self._warm and self._background is not None:
            self._warm = True
            self._background.start_soon(self._coder.prewarm)
        return response

    async def authenticate(self, request: AuthenticateRequest) -> AuthenticateResponse:
        """Nothing to authenticate once a model is configured; otherwise say how to.

        Raises:
            AuthRequired: no model is configured (-32000, with the instructions).
        """
        problem = self._coder.config.problem()
        if problem is not None:
            raise AuthRequired(problem, {"methodId": request.method_id})
        return AuthenticateResponse()

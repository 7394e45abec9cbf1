"""The engine: any ``pydantic_ai`` agent, served over ACP by the agent runtime.

:class:`PydanticAIEngine` implements the engine protocol. It holds what every session shares
(the agent or the factory that builds one per session, the model choices, the tool hooks) and
opens a :class:`~._session.PydanticAISession` per ACP session: restoring the message history
from the session store, building the chosen model's client once, building the session's deps.

This module sits on pydantic-ai, the engine protocol and the modules beside it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias, cast

from pydantic_ai.agent import AbstractAgent

from ...errors import InternalError
from ...schema import PermissionOption
from .. import Engine, EngineCapabilities, SessionContext
from ._approval import ApprovalHook, ToolFilter
from ._compaction import Compaction
from ._history import HistoryError, history_from_json
from ._models import MODEL_CONFIG_ID, ModelChoice, SessionModel, model_config_option
from ._session import (
    DEFAULT_CHUNK_INTERVAL,
    PydanticAISession,
    SessionOptions,
    TranslatorFactory,
)
from ._stream import EventTranslator
from ._tools import BehaviourLookup

__all__ = ("AgentFactory", "DepsFactory", "PydanticAIEngine")

AnyAgent: TypeAlias = AbstractAgent[Any, Any]

AgentFactory: TypeAlias = Callable[[SessionContext], AnyAgent | Awaitable[AnyAgent]]
"""Builds the agent of one session (sync or async), e.g. with tools bound to its cwd."""

DepsFactory: TypeAlias = Callable[[SessionContext], Any]
"""Builds the deps of one session (passed to every run of that session)."""


class PydanticAIEngine(Engine):
    """Serves a pydantic-ai agent: one engine per agent process, one session per ACP session.

    Args:
        agent: The agent every session runs, or a factory building one per session.
        models: The models the user can choose between: offered as a ``select`` config option
            ``model`` (category ``model``). ``None``: the agent's own model, no option.
        default_model: The id of the choice new sessions start with (default: the first).
        tool_behaviour: How tools are shown (kind, title, locations, diff), by tool name or a
            function of the name; see :class:`ToolBehaviour`.
        needs_approval: ``(tool_name, args, mode_id) -> bool | None``: ``True`` asks the user
            before the call runs, ``False`` runs it without asking, ``None`` leaves it to the
            tool (``requires_approval=True`` asks).
        tool_filter: ``(tool_name, mode_id) -> bool``: the tools a mode offers, applied before
            every model request.
        deps: Builds each session's deps.
        permission_options: The choices of every permission request (default: the runtime's
            allow once / always, reject once / always).
        capabilities: What the engine accepts and offers besides the model option (prompt
            content types, MCP transports, modes, config options, commands).
        translator: The event translator class (or factory), to change how events map.
        chunk_interval: The least time in seconds between two chunks of one message. The
            first chunk of a message goes out at once; deltas arriving within the interval are
            merged into the next chunk, which goes out when the interval is over or as soon as
            anything else happens (a tool call, the end of the message). The client sees the
            same text in fewer notifications. ``0`` merges only deltas already queued while the
            runtime was busy; ``None`` sends one chunk per model delta.
        titles: Title every untitled session from its first prompt (``TitleChanged``): a
            few words the session's model writes, bounded in time, else the prompt's first
            line (see :mod:`._title`).
        compaction: Compact a session's history before a turn whose request would take more
            than ``compaction.share`` of the model's window (see :mod:`._compaction`);
            ``None``: never by itself (:meth:`PydanticAISession.compact` still does on
            request).

    Raises:
        ValueError: ``models`` has duplicate ids, ``default_model`` is not one of them, or
            ``capabilities`` already has a config option with id ``model``.
    """

    def __init__(
        self,
        agent: AnyAgent | AgentFactory,
        *,
        models: Sequence[ModelChoice] | None = None,
        default_model: str | None = None,
        tool_behaviour: BehaviourLookup | None = None,
        needs_approval: ApprovalHook | None = None,
        tool_filter: ToolFilter | None = None,
        deps: DepsFactory | None = None,
        permission_options: Sequence[PermissionOption] = (),
        capabilities: EngineCapabilities | None = None,
        translator: TranslatorFactory = EventTranslator,
        chunk_interval: float | None = DEFAULT_CHUNK_INTERVAL,
        titles: bool = False,
        compaction: Compaction | None = None,
    ) -> None:
        """Check the configuration; see the class docstring for the arguments."""
        if isinstance(agent, AbstractAgent):
            self._agent: AnyAgent | None = cast(AnyAgent, agent)
            self._agent_factory: AgentFactory | None = None
        else:
            self._agent = None
            self._agent_factory = agent
        self._choices = tuple(models or ())
        ids = [choice.id for choice in self._choices]
        if len(set(ids)) != len(ids):
            raise ValueError(f"model choice ids must be unique, got {ids}")
        if default_model is not None and default_model not in ids:
            raise ValueError(f"default_model {default_model!r} is not among {ids}")
        self._default_model = default_model or (ids[0] if ids else None)
        capabilities = capabilities or EngineCapabilities()
        if self._default_model is not None:
            if any(option.id == MODEL_CONFIG_ID for option in capabilities.config_options):
                raise ValueError(f"capabilities already offer a config option {MODEL_CONFIG_ID!r}")
            option = model_config_option(self._choices, self._default_model)
            capabilities = dataclasses.replace(
                capabilities, config_options=(*capabilities.config_options, option)
            )
        self._capabilities = capabilities
        self._deps = deps
        self._options = SessionOptions(
            behaviours=tool_behaviour,
            needs_approval=needs_approval,
            tool_filter=tool_filter,
            permission_options=tuple(permission_options),
            translator=translator,
            chunk_interval=chunk_interval,
            titles=titles,
            compaction=compaction,
        )

    @property
    def capabilities(self) -> EngineCapabilities:
        """What the engine accepts and offers, the ``model`` option included."""
        return self._capabilities

    @property
    def model_choices(self) -> tuple[ModelChoice, ...]:
        """The configured model choices."""
        return self._choices

    async def open_session(self, context: SessionContext) -> PydanticAISession:
        """Build a session: its agent, history, model client and deps.

        Raises:
            InternalError: the stored history cannot be read back, or the runtime does not run
                on asyncio (pydantic-ai needs it).
            Exception: whatever the agent, model or deps factory raises.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise InternalError(
                "the pydantic-ai engine needs the asyncio backend (pydantic-ai runs on no other)"
            ) from None
        try:
            history = history_from_json(context.history)
        except HistoryError as exc:
            raise InternalError(
                f"the model history of session {context.session_id} cannot be restored: {exc}"
            ) from exc
        agent = await self._build_agent(context)
        wanted = context.config_values.get(MODEL_CONFIG_ID)
        current = self._default_model
        if isinstance(wanted, str) and any(choice.id == wanted for choice in self._choices):
            current = wanted
        model = SessionModel(self._choices, current)
        await model.open()
        try:
            deps = None if self._deps is None else self._deps(context)
        except BaseException:
            await model.aclose()
            raise
        return PydanticAISession(
            agent=agent,
            context=context,
            model=model,
            history=history,
            deps=deps,
            options=self._options,
        )

    async def _build_agent(self, context: SessionContext) -> AnyAgent:
        if self._agent is not None:
            return self._agent
        assert self._agent_factory is not None
        built = self._agent_factory(context)
        if inspect.isawaitable(built):
            return await built
        return built

"""Model choices: the ``model`` config option, and one session's model client.

An engine configured with :class:`ModelChoice` s offers a ``select`` config option with id
:data:`MODEL_CONFIG_ID` and category ``model`` listing them. Each session builds the chosen
model once (:meth:`ModelChoice.build`: the factory runs, its provider's HTTP client is opened)
and reuses it for every turn; choosing another model builds that one, and the old client is
closed as soon as no turn uses it. A model switch during a turn applies from the next turn.

This module sits on pydantic-ai and :mod:`accord.schema`; the session owns one
:class:`SessionModel`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

import anyio
from pydantic_ai.models import Model, infer_model

from ...schema import SelectSessionConfigOption, SessionConfigSelectOption

__all__ = (
    "MODEL_CONFIG_ID",
    "ModelChoice",
    "SessionModel",
    "WindowLookup",
    "model_config_option",
)

_log = logging.getLogger("accord.engines.pydantic_ai")

CLOSE_TIMEOUT: Final = 5.0
"""Seconds to wait for model clients to close (shielded, so a cancelled turn still closes
them); an HTTP client that takes longer is abandoned to the garbage collector."""

MODEL_CONFIG_ID: Final = "model"
"""The id of the model config option."""

AnyModel: TypeAlias = "Model[Any]"

ModelFactory: TypeAlias = Callable[[], AnyModel]
"""Builds a model (and its client) for one session."""

WindowLookup: TypeAlias = Callable[[], Awaitable[int | None]]
"""Finds a model's context window where it is served (``None``: not reported); e.g.
:class:`~._served_window.ServedWindow`. Called after each model response until it answers,
so it should remember its answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChoice:
    """A model the user can choose, as one value of the ``model`` config option.

    Attributes:
        id: The option value (unique among the choices), e.g. ``"gpt-5"``.
        model: A factory that builds the model for one session (the usual choice: it creates
            the provider and its HTTP client), a pydantic-ai model name such as
            ``"openai:gpt-5"`` (inferred once per session), or a model instance (shared by
            every session).
        name: The label shown to users (default: ``id``).
        description: Optional text shown with the choice.
        context_window: The model's context window in tokens, as configured; it wins over
            every other source. ``usage_update`` needs a window.
        window_lookup: Where to ask for the window when none is configured (the server the
            model runs on); its answer wins over pydantic-ai's (``model.context_window``).
        priced: Whether the model's responses have a price. ``False`` for a model on a server
            no price list knows (one's own), whose name may still match a hosted model's:
            its ``usage_update`` then carries no cost, rather than a price nobody charges.
    """

    id: str
    model: ModelFactory | AnyModel | str = field(repr=False)
    name: str | None = None
    description: str | None = None
    context_window: int | None = None
    window_lookup: WindowLookup | None = field(default=None, repr=False)
    priced: bool = True

    def build(self) -> AnyModel:
        """Return the model for one session: call the factory, infer the name, or share."""
        model = self.model
        if isinstance(model, str):
            return infer_model(model)
        if isinstance(model, Model):
            shared: AnyModel = model  # pyright: ignore[reportUnknownVariableType]
            return shared
        return model()


def model_config_option(choices: Sequence[ModelChoice], current: str) -> SelectSessionConfigOption:
    """Return the ``model`` config option listing ``choices``, with ``current`` selected."""
    return SelectSessionConfigOption(
        id=MODEL_CONFIG_ID,
        name="Model",
        category="model",
        current_value=current,
        options=[
            SessionConfigSelectOption(value=c.id, name=c.name or c.id, description=c.description)
            for c in choices
        ],
    )


@dataclass(slots=True)
class _Built:
    choice: ModelChoice
    model: AnyModel


class SessionModel:
    """The model one session uses: built once, rebuilt only when the choice changes.

    Args:
        choices: The choices on offer (empty: the agent's own model is used, nothing is built).
        current: The id of the choice to start with.
    """

    __slots__ = ("_busy", "_choices", "_current", "_pending", "_retired")

    def __init__(self, choices: Sequence[ModelChoice], current: str | None) -> None:
        """Remember the choices; :meth:`open` builds the current one."""
        self._choices = {choice.id: choice for choice in choices}
        self._current: _Built | None = None
        self._retired: list[_Built] = []
        self._busy = False
        self._pending = current

    async def open(self) -> None:
        """Build the starting model.

        Raises:
            Exception: whatever the model factory raises.
        """
        if self._pending is not None:
            self._current = await self._build(self._choices[self._pending])

    @property
    def choice_id(self) -> str | None:
        """The id of the current choice (``None`` without choices)."""
        return None if self._current is None else self._current.choice.id

    @property
    def priced(self) -> bool:
        """Whether the current model's responses have a price (:attr:`ModelChoice.priced`)."""
        return self._current is None or self._current.choice.priced

    async def context_window(self) -> int | None:
        """The current model's context window in tokens, if anyone knows it.

        The configured window (:attr:`ModelChoice.context_window`), else what the choice's
        :attr:`~ModelChoice.window_lookup` finds, else pydantic-ai's.
        """
        current = self._current
        if current is None:
            return None
        choice = current.choice
        if choice.context_window:
            return choice.context_window
        if choice.window_lookup is not None:
            served = await choice.window_lookup()
            if served:
                return served
        return current.model.context_window

    async def switch(self, choice_id: str) -> None:
        """Make ``choice_id`` the current model (building it unless it is current already).

        The previous model's client closes now, or when the running turn ends.

        Raises:
            KeyError: ``choice_id`` is not one of the choices.
        """
        choice = self._choices[choice_id]
        if self._current is not None and self._current.choice.id == choice_id:
            return
        built = await self._build(choice)
        if self._current is not None:
            self._retired.append(self._current)
        self._current = built
        if not self._busy:
            await self._close_retired()

    def begin_turn(self) -> AnyModel | None:
        """Return the model for a turn starting now (``None``: the agent's own model)."""
        self._busy = True
        return None if self._current is None else self._current.model

    async def end_turn(self) -> None:
        """The turn ended: close the clients of models switched away from during it."""
        self._busy = False
        await self._close_retired()

    async def aclose(self) -> None:
        """Close every client this session opened."""
        if self._current is not None:
            self._retired.append(self._current)
            self._current = None
        await self._close_retired()

    async def _build(self, choice: ModelChoice) -> _Built:
        model = choice.build()
        await model.__aenter__()
        return _Built(choice, model)

    async def _close_retired(self) -> None:
        retired, self._retired = self._retired, []
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            for built in retired:
                try:
                    await built.model.__aexit__(None, None, None)
                except Exception:
                    _log.warning("closing model %r failed", built.choice.id, exc_info=True)

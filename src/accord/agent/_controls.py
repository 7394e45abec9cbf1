"""Session controls: modes and config options, with one session's current values.

The engine declares what it offers (:class:`EngineCapabilities`: ``modes``, ``config_options``
with their defaults as current values); :class:`Controls` holds one session's choices and
enforces the rules of ``session/set_mode`` and ``session/set_config_option``:

* a mode must be one of the offered modes, else -32602 and nothing changes;
* a ``select`` value must be one of the option's values (flat or grouped), a ``boolean``
  value must be a JSON boolean; an unknown option id, or the wrong type, is -32602;
* ``boolean`` options exist only for clients that advertised
  ``session.configOptions.boolean``: for the others they are left out of every list and cannot
  be set (they keep their default);
* the complete option list always carries the current values;
* a ``select`` option of category ``mode`` whose values are mode ids is kept in sync with the
  mode, both ways (ACP's transition advice: send both, keep them in sync).

Model choice is nothing special: a ``select`` option with ``category="model"``.

The values persist in the session's state record as ``{"mode": ..., "config": {...}}``;
:meth:`Controls.restore` reads them back and drops what the engine no longer offers. Below:
:mod:`accord.schema`, the engine protocol. Above: the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..engines import ConfigValue, EngineCapabilities
from ..errors import InvalidParams
from ..schema import (
    BooleanSessionConfigOption,
    SelectSessionConfigOption,
    SessionConfigOption,
    SessionConfigSelectGroup,
    SessionModeState,
)

__all__ = ("Controls", "select_values")


def select_values(option: SelectSessionConfigOption) -> list[str]:
    """Return the value ids of a ``select`` option, groups flattened."""
    values: list[str] = []
    for entry in option.options:
        if isinstance(entry, SessionConfigSelectGroup):
            values.extend(choice.value for choice in entry.options)
        else:
            values.append(entry.value)
    return values


def _valid(option: SessionConfigOption, value: object) -> bool:
    if isinstance(option, BooleanSessionConfigOption):
        return isinstance(value, bool)
    return isinstance(value, str) and value in select_values(option)


class Controls:
    """The modes and config options of one session, with its current choices.

    Args:
        capabilities: What the engine offers.
        mode_id: The current mode (default: the engine's initial mode).
        values: Current config values by option id (default: each option's default).
    """

    __slots__ = ("_modes", "_options", "mode_id", "values")

    def __init__(
        self,
        capabilities: EngineCapabilities,
        *,
        mode_id: str | None = None,
        values: Mapping[str, ConfigValue] | None = None,
    ) -> None:
        """Create the controls; see the class docstring for the arguments."""
        self._modes = capabilities.modes
        self._options: tuple[SessionConfigOption, ...] = capabilities.config_options
        self.mode_id: str | None = capabilities.initial_mode_id
        if mode_id is not None and any(mode.id == mode_id for mode in self._modes):
            self.mode_id = mode_id
        self.values: dict[str, ConfigValue] = {o.id: o.current_value for o in self._options}
        for option in self._options:
            given = (values or {}).get(option.id)
            if given is not None and _valid(option, given):
                self.values[option.id] = given
        if self.mode_id is not None:
            self.set_mode(self.mode_id)  # the mode option shows the mode (it wins if they differ)

    # ------------------------------------------------------------------ reading

    @property
    def offers_modes(self) -> bool:
        """Whether the engine offers modes at all."""
        return bool(self._modes)

    @property
    def offers_options(self) -> bool:
        """Whether the engine offers config options at all."""
        return bool(self._options)

    def modes_state(self) -> SessionModeState | None:
        """The ``modes`` field of new/load/resume/fork responses (``None`` without modes)."""
        if not self._modes or self.mode_id is None:
            return None
        return SessionModeState(current_mode_id=self.mode_id, available_modes=list(self._modes))

    def options(self, *, boolean: bool = True) -> list[SessionConfigOption]:
        """The complete option list with current values.

        Args:
            boolean: Include ``boolean`` options (only for clients that advertised them).
        """
        return [
            option.model_copy(update={"current_value": self.values[option.id]})
            for option in self._options
            if boolean or not isinstance(option, BooleanSessionConfigOption)
        ]

    def response_options(self, *, boolean: bool) -> list[SessionConfigOption] | None:
        """The ``configOptions`` field of session responses (``None`` when none are offered)."""
        return self.options(boolean=boolean) if self._options else None

    def option(self, config_id: str, *, boolean: bool) -> SessionConfigOption:
        """The offered option ``config_id``.

        Raises:
            InvalidParams: no such option is offered to this client.
        """
        for option in self._options:
            if option.id == config_id and (
                boolean or not isinstance(option, BooleanSessionConfigOption)
            ):
                return option
        offered = [
            o.id for o in self._options if boolean or isinstance(o, SelectSessionConfigOption)
        ]
        raise InvalidParams(
            f"unknown config option {config_id!r} (offered: {', '.join(offered) or 'none'})",
            {"configId": config_id, "offered": offered},
        )

    # ------------------------------------------------------------------ checking

    def check_mode(self, mode_id: str) -> None:
        """Refuse a mode that is not offered.

        Raises:
            InvalidParams: ``mode_id`` is not one of the offered modes.
        """
        available = [mode.id for mode in self._modes]
        if mode_id not in available:
            raise InvalidParams(
                f"unknown mode {mode_id!r} (available: {', '.join(available) or 'none'})",
                {"modeId": mode_id, "availableModes": available},
            )

    def check_value(self, config_id: str, value: object, *, boolean: bool) -> ConfigValue:
        """Return ``value`` if option ``config_id`` may take it.

        Raises:
            InvalidParams: unknown option, wrong value type, or a value the option lacks.
        """
        option = self.option(config_id, boolean=boolean)
        if isinstance(option, BooleanSessionConfigOption):
            if not isinstance(value, bool):
                raise InvalidParams(
                    f"config option {config_id!r} is a boolean; send type 'boolean' and a "
                    f"true/false value, not {value!r}",
                    {"configId": config_id, "value": value},
                )
            return value
        allowed = select_values(option)
        if isinstance(value, bool) or value not in allowed:
            raise InvalidParams(
                f"invalid value {value!r} for config option {config_id!r} "
                f"(allowed: {', '.join(allowed)})",
                {"configId": config_id, "value": value, "allowed": allowed},
            )
        assert isinstance(value, str)
        return value

    # ------------------------------------------------------------------ changing

    def _mode_option(self) -> SelectSessionConfigOption | None:
        for option in self._options:
            if isinstance(option, SelectSessionConfigOption) and option.category == "mode":
                return option
        return None

    def selects_mode(self, config_id: str, value: ConfigValue) -> bool:
        """Whether setting ``config_id`` to ``value`` is a mode switch (the ``mode`` option
        set to one of the modes)."""
        option = self._mode_option()
        return (
            option is not None
            and option.id == config_id
            and isinstance(value, str)
            and any(mode.id == value for mode in self._modes)
        )

    def set_mode(self, mode_id: str) -> tuple[bool, bool]:
        """Switch to ``mode_id`` (already checked); return ``(mode changed, config changed)``.

        A ``mode``-category option that offers ``mode_id`` follows along.
        """
        mode_changed = mode_id != self.mode_id
        self.mode_id = mode_id
        config_changed = False
        option = self._mode_option()
        if option is not None and mode_id in select_values(option):
            config_changed = self.values.get(option.id) != mode_id
            self.values[option.id] = mode_id
        return mode_changed, config_changed

    def set_value(self, config_id: str, value: ConfigValue) -> tuple[bool, bool]:
        """Set an option (value already checked); return ``(config changed, mode changed)``.

        Setting the ``mode``-category option to a mode id switches the mode too.
        """
        config_changed = self.values.get(config_id) != value
        self.values[config_id] = value
        mode_changed = False
        option = self._mode_option()
        if (
            option is not None
            and option.id == config_id
            and isinstance(value, str)
            and any(mode.id == value for mode in self._modes)
        ):
            mode_changed = value != self.mode_id
            self.mode_id = value
        return config_changed, mode_changed

    def adopt(self, options: Sequence[SessionConfigOption]) -> bool:
        """Take an engine's complete option list (after a dependent change) as current.

        Returns whether the mode followed a ``mode``-category option.

        Raises:
            InvalidParams: an option's current value is not one of its values.
        """
        for option in options:
            if not _valid(option, option.current_value):
                raise InvalidParams(
                    f"the engine returned config option {option.id!r} with invalid current "
                    f"value {option.current_value!r}"
                )
        self._options = tuple(options)
        self.values = {option.id: option.current_value for option in options}
        option = self._mode_option()
        if option is not None:
            value = self.values[option.id]
            if (
                isinstance(value, str)
                and value != self.mode_id
                and any(mode.id == value for mode in self._modes)
            ):
                self.mode_id = value
                return True
        return False

    # ------------------------------------------------------------------ persistence

    def to_json(self) -> dict[str, Any]:
        """The controls' part of the session state record."""
        return {"mode": self.mode_id, "config": dict(self.values)}

    @classmethod
    def restore(cls, capabilities: EngineCapabilities, state: Mapping[str, Any]) -> Controls:
        """Rebuild controls from a state record; unknown modes, options and values are
        dropped in favour of the engine's defaults."""
        mode = state.get("mode")
        config = state.get("config")
        values: dict[str, ConfigValue] = {}
        if isinstance(config, dict):
            for key, value in config.items():  # pyright: ignore[reportUnknownVariableType]
                if isinstance(key, str) and isinstance(value, str | bool):
                    values[key] = value
        return cls(capabilities, mode_id=mode if isinstance(mode, str) else None, values=values)

"""Hand-written support for the generated wire models.

`WireModel` is the base of every generated class. The markers below are pydantic
`Annotated` metadata that the generator attaches to fields to implement the schema's
leniency annotations. They are built from pydantic-core schemas (no Python validator runs on
the happy path), so they cost nothing when the input is well formed:

* `DefaultOnError(default)` (`x-deserialize-default-on-error`): a malformed value becomes the
  default; the rest of the message is kept.
* `SKIP_INVALID` (`x-deserialize-skip-invalid-items`, on the item type of a list): malformed
  items are dropped; the rest of the list is kept.
* `NullAsDefault(factory)` (`x-deserialize-default-on-null`): `null` becomes the default.
* `UnknownAs(value)` (closed string enums the peer may extend, e.g. `ToolKind`): an unknown
  string decodes as `value`.
* `tag_discriminator(...)`: the discriminator of an open tagged union (unknown tags go to the
  `Other...` variant, a missing tag to the untagged fallback variant).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = (
    "SKIP_INVALID",
    "DefaultOnError",
    "MethodSpec",
    "NullAsDefault",
    "UnknownAs",
    "WireModel",
    "empty_dict",
    "empty_list",
    "is_none",
    "tag_discriminator",
)


class WireModel(BaseModel):
    """Base of every ACP wire model.

    Attributes are snake_case; the wire names (camelCase, `_meta`) are the fields' aliases.
    Both are accepted on input; `to_wire()` emits the wire names. Unknown fields are kept
    (`extra="allow"`) and emitted again, so a message passes through unchanged.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """Dump for the wire: JSON types, wire names, only the fields that were set."""
        # What model_dump(mode="json", by_alias=True, exclude_unset=True) does, minus its
        # Python-level argument handling (this runs for every message sent).
        wire: dict[str, Any] = self.__pydantic_serializer__.to_python(
            self, mode="json", by_alias=True, exclude_unset=True
        )
        return wire


def empty_list() -> list[Any]:
    """Default factory of list fields (typed, unlike a bare `list`)."""
    return []


def empty_dict() -> dict[str, Any]:
    """Default factory of map fields (typed, unlike a bare `dict`)."""
    return {}


def is_none(value: object) -> bool:
    """`exclude_if` predicate of optional fields the schema does not allow to be null."""
    return value is None


@dataclass(frozen=True, slots=True)
class DefaultOnError:
    """A malformed value is replaced by `default` (or `default_factory()`)."""

    default: Any = None
    default_factory: Callable[[], Any] | None = None

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        inner = handler(source)
        if self.default_factory is not None:
            return core_schema.with_default_schema(
                inner, default_factory=self.default_factory, on_error="default"
            )
        return core_schema.with_default_schema(inner, default=self.default, on_error="default")


@dataclass(frozen=True, slots=True)
class _SkipInvalid:
    """Item marker: a malformed list item is dropped."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.with_default_schema(handler(source), on_error="omit")


SKIP_INVALID = _SkipInvalid()


@dataclass(frozen=True, slots=True)
class NullAsDefault:
    """`null` on the wire becomes `factory()` (an empty list or map)."""

    factory: Callable[[], Any]

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        factory = self.factory

        def replace_null(value: Any) -> Any:
            return factory() if value is None else value

        return core_schema.no_info_before_validator_function(replace_null, handler(source))


@dataclass(frozen=True, slots=True)
class UnknownAs:
    """An unknown string decodes as `value` (Rust `#[serde(other)]`)."""

    value: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        value = self.value

        def to_fallback(_: str) -> str:
            return value

        return core_schema.union_schema(
            [
                handler(source),
                core_schema.no_info_after_validator_function(to_fallback, core_schema.str_schema()),
            ],
            mode="left_to_right",
        )


def tag_discriminator(
    alias: str,
    attribute: str,
    known: frozenset[str],
    *,
    other: str | None = None,
    fallback: str | None = None,
) -> Callable[[Any], str | None]:
    """Discriminator of an open tagged union.

    Returns the tag for a wire dict (looked up by `alias`) or a model (by `attribute`): a known
    tag as is, an unknown string tag as `other` (when the union has an `Other...` variant),
    a missing or unusable tag as `fallback` (the untagged variant), else `None` (an error).
    """

    def discriminate(value: Any) -> str | None:
        # Runs for every union value validated or dumped: the common cases (a wire dict, a
        # model) first, without the slow ABC check.
        tag: object
        if type(value) is dict:
            tag = cast("dict[str, object]", value).get(alias)
        else:
            tag = getattr(value, attribute, None)
            if tag is None and isinstance(value, Mapping):
                tag = cast("Mapping[str, object]", value).get(alias)
        if isinstance(tag, str):
            if tag in known:
                return tag
            if other is not None:
                return other
        return fallback

    return discriminate


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One ACP method, as listed in the generated tables of `accord.schema.methods`.

    Attributes:
        method: The wire method name (`session/prompt`).
        handler: The Python method name on `accord.roles.Agent` / `Client` (`prompt`).
        side: Who handles it: `agent` (client to agent), `client` (agent to client), or
            `protocol` (either way).
        kind: `request` (answered) or `notification`.
        params_name: The params model's name.
        result_name: The result model's name for a request; `None` for a notification.
        capability: The capability path (camelCase wire names, from the handler side's
            capabilities) that must be advertised before the peer may call it; `None` when
            the method is baseline.
        unstable: Not part of the stable schema (`schema.json`).
        models: The module that defines the models (`accord.schema._generated_v1`).

    The models themselves are :attr:`params_type` and :attr:`result_type`, defined on first
    use (the generated models module defines each name when it is first asked for).
    """

    method: str
    handler: str
    side: Literal["agent", "client", "protocol"]
    kind: Literal["request", "notification"]
    params_name: str
    result_name: str | None
    capability: tuple[str, ...] | None
    unstable: bool
    models: str
    _params: type[WireModel] | None = field(default=None, init=False, repr=False, compare=False)
    _result: type[WireModel] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def params_type(self) -> type[WireModel]:
        """The params model."""
        params = self._params
        if params is None:
            params = getattr(import_module(self.models), self.params_name)
            object.__setattr__(self, "_params", params)
        return cast("type[WireModel]", params)

    @property
    def result_type(self) -> type[WireModel] | None:
        """The result model of a request; `None` for a notification."""
        if self.result_name is None:
            return None
        result = self._result
        if result is None:
            result = getattr(import_module(self.models), self.result_name)
            object.__setattr__(self, "_result", result)
        return cast("type[WireModel]", result)

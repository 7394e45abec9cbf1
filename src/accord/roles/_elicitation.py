"""Elicitation forms as a contract: does an answer's content match the schema that was asked?

``elicitation/create`` in form mode carries a ``requestedSchema`` (a flat JSON Schema object of
primitive properties, :class:`~accord.schema.ElicitationSchema`); the answer's ``content`` must
match it. Both roles check: the client library before it sends an answer (a policy's mistake
is caught where it is made), the agent runtime before it hands one to its engine (a client's
mistake never reaches a tool). :func:`content_problems` lists what is wrong, in words a person
can act on; :func:`default_content` collects the defaults a schema declares.

Checked per property type: ``string`` (``minLength``, ``maxLength``, ``pattern``, ``format``
email / uri / date / date-time, ``enum`` or titled ``oneOf``), ``number`` and ``integer``
(``minimum``, ``maximum``; booleans are not numbers), ``boolean``, ``array`` (multi-select:
strings from ``items``' ``enum`` or ``anyOf``, ``minItems``, ``maxItems``). Property types this
version does not know are not checked. Unknown keys and missing required keys are problems.

Below: :mod:`accord.schema`. Above: :mod:`accord.agent`, :mod:`accord.client`.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from .. import schema as wire

if TYPE_CHECKING:
    from ..schema import (
        ArrayElicitationPropertySchema,
        ElicitationContentValue,
        ElicitationPropertySchema,
        ElicitationSchema,
        StringElicitationPropertySchema,
    )

__all__ = ("choices_of", "content_problems", "default_content", "value_problem")

_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")


def choices_of(prop: StringElicitationPropertySchema) -> list[tuple[str, str]] | None:
    """The ``(value, label)`` choices of a single-select string property, or ``None``."""
    if prop.one_of:
        return [(option.const, option.title) for option in prop.one_of]
    if prop.enum:
        return [(value, value) for value in prop.enum]
    return None


def _array_choices(prop: ArrayElicitationPropertySchema) -> list[str] | None:
    items = prop.items
    if isinstance(items, wire.StringMultiSelectItems):
        return list(items.enum)
    if isinstance(items, wire.TitledMultiSelectItems):
        return [option.const for option in items.any_of]
    return None


def default_content(schema: ElicitationSchema) -> dict[str, ElicitationContentValue]:
    """The values the schema's properties declare as ``default`` (the others are left out)."""
    content: dict[str, ElicitationContentValue] = {}
    for name, prop in schema.properties.items():
        match prop:
            case wire.ArrayElicitationPropertySchema(default=list() as chosen):
                content[name] = list(chosen)
            case (
                wire.StringElicitationPropertySchema(default=str() as default)
                | wire.BooleanElicitationPropertySchema(default=bool() as default)
                | wire.IntegerElicitationPropertySchema(default=int() as default)
                | wire.NumberElicitationPropertySchema(default=int() | float() as default)
            ):
                content[name] = default
            case _:
                pass
    return content


def content_problems(schema: ElicitationSchema, content: Mapping[str, Any] | None) -> list[str]:
    """What is wrong with ``content`` as an answer to a form of ``schema`` (empty: nothing).

    ``None`` stands for an answer without content, which is fine only when nothing is required.
    """
    values: Mapping[str, Any] = content or {}
    problems: list[str] = []
    for name in schema.required or ():
        if name not in values:
            problems.append(f"{name!r} is required")
    for name, value in values.items():
        prop = schema.properties.get(name)
        if prop is None:
            problems.append(f"{name!r} is not a field of the form")
            continue
        problem = value_problem(prop, value)
        if problem is not None:
            problems.append(f"{name!r} {problem}")
    return problems


def value_problem(prop: ElicitationPropertySchema, value: Any) -> str | None:
    """Why ``value`` does not fit property ``prop`` (a phrase after its name), or ``None``."""
    match prop:
        case wire.StringElicitationPropertySchema():
            return _string_problem(prop, value)
        case wire.IntegerElicitationPropertySchema():
            if isinstance(value, bool) or not isinstance(value, int):
                return "must be an integer"
            return _range_problem(value, prop.minimum, prop.maximum)
        case wire.NumberElicitationPropertySchema():
            if isinstance(value, bool) or not isinstance(value, int | float):
                return "must be a number"
            return _range_problem(value, prop.minimum, prop.maximum)
        case wire.BooleanElicitationPropertySchema():
            return None if isinstance(value, bool) else "must be true or false"
        case wire.ArrayElicitationPropertySchema():
            return _array_problem(prop, value)
        case _:
            return None  # a property type this version does not know: not checked


def _range_problem(value: float, minimum: float | None, maximum: float | None) -> str | None:
    if minimum is not None and value < minimum:
        return f"must be at least {minimum}"
    if maximum is not None and value > maximum:
        return f"must be at most {maximum}"
    return None


def _string_problem(prop: StringElicitationPropertySchema, value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    choices = choices_of(prop)
    if choices is not None:
        allowed = [choice for choice, _ in choices]
        return None if value in allowed else f"must be one of {', '.join(map(repr, allowed))}"
    if prop.min_length is not None and len(value) < prop.min_length:
        return f"must be at least {prop.min_length} characters long"
    if prop.max_length is not None and len(value) > prop.max_length:
        return f"must be at most {prop.max_length} characters long"
    if prop.pattern is not None:
        try:
            matched = re.search(prop.pattern, value) is not None
        except re.error:
            return f"cannot be checked: the form's pattern {prop.pattern!r} is not a valid regex"
        if not matched:
            return f"must match the pattern {prop.pattern!r}"
    if prop.format is not None and not _has_format(value, prop.format):
        return f"must be a valid {prop.format}"
    return None


def _has_format(value: str, fmt: str) -> bool:
    if fmt == "email":
        return _EMAIL.match(value) is not None
    if fmt == "uri":
        parts = urlsplit(value)
        return bool(parts.scheme) and bool(parts.netloc or parts.path)
    try:
        if fmt == "date":
            datetime.date.fromisoformat(value)
        elif fmt == "date-time":
            datetime.datetime.fromisoformat(value)
            return "T" in value.upper() or " " in value  # a date alone is not a date-time
    except ValueError:
        return False
    return True


def _array_problem(prop: ArrayElicitationPropertySchema, value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):  # pyright: ignore[reportUnknownVariableType]
        return "must be a list of strings"
    items: list[str] = value  # pyright: ignore[reportUnknownVariableType]
    allowed = _array_choices(prop)
    if allowed is not None:
        unknown = [item for item in items if item not in allowed]
        if unknown:
            return f"may hold only {', '.join(map(repr, allowed))} (not {', '.join(unknown)})"
    if len(set(items)) != len(items):
        return "must not repeat a choice"
    if prop.min_items is not None and len(items) < prop.min_items:
        return f"must hold at least {prop.min_items} choices"
    if prop.max_items is not None and len(items) > prop.max_items:
        return f"must hold at most {prop.max_items} choices"
    return None

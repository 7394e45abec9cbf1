"""The elicitation content check: answers measured against the form that was asked."""

from __future__ import annotations

from typing import Any

import pytest

from accord.roles import content_problems, default_content
from accord.schema import ElicitationSchema


def schema(properties: dict[str, Any], required: list[str] | None = None) -> ElicitationSchema:
    wire: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        wire["required"] = required
    return ElicitationSchema.model_validate(wire)


@pytest.mark.parametrize(
    ("prop", "value", "problem"),
    [
        ({"type": "string"}, 3, "must be a string"),
        ({"type": "string", "minLength": 2}, "a", "must be at least 2 characters long"),
        ({"type": "string", "maxLength": 2}, "abc", "must be at most 2 characters long"),
        ({"type": "string", "pattern": "^[a-z]+$"}, "A1", "must match the pattern '^[a-z]+$'"),
        ({"type": "string", "format": "email"}, "ada@", "must be a valid email"),
        ({"type": "string", "format": "uri"}, "not a uri", "must be a valid uri"),
        ({"type": "string", "format": "date"}, "2026-13-01", "must be a valid date"),
        ({"type": "string", "format": "date-time"}, "2026-01-01", "must be a valid date-time"),
        ({"type": "string", "enum": ["a", "b"]}, "c", "must be one of 'a', 'b'"),
        (
            {"type": "string", "oneOf": [{"const": "x", "title": "Ex"}]},
            "Ex",
            "must be one of 'x'",
        ),
        ({"type": "integer"}, 1.5, "must be an integer"),
        ({"type": "integer"}, True, "must be an integer"),
        ({"type": "integer", "minimum": 1}, 0, "must be at least 1"),
        ({"type": "number", "maximum": 1.5}, 2, "must be at most 1.5"),
        ({"type": "number"}, "1", "must be a number"),
        ({"type": "boolean"}, "yes", "must be true or false"),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}},
            "a",
            "must be a list of strings",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            ["a", "z"],
            "may hold only 'a', 'b' (not z)",
        ),
        (
            {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}, "minItems": 1},
            [],
            "must hold at least 1 choices",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1},
            ["a", "b"],
            "must hold at most 1 choices",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a"]}},
            ["a", "a"],
            "must not repeat a choice",
        ),
    ],
)
def test_each_kind_of_field_is_checked(prop: dict[str, Any], value: object, problem: str) -> None:
    assert content_problems(schema({"f": prop}), {"f": value}) == [f"'f' {problem}"]


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        ({"type": "string", "format": "email"}, "ada@example.org"),
        ({"type": "string", "format": "uri"}, "https://example.org/x"),
        ({"type": "string", "format": "date"}, "2026-12-01"),
        ({"type": "string", "format": "date-time"}, "2026-12-01T10:00:00Z"),
        ({"type": "string", "oneOf": [{"const": "x", "title": "Ex"}]}, "x"),
        ({"type": "integer", "minimum": 0, "maximum": 3}, 3),
        ({"type": "number"}, 2),
        ({"type": "boolean"}, False),
        ({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}, ["a"]),
        ({"type": "_vendor_widget"}, {"anything": 1}),  # unknown types are not checked
    ],
)
def test_valid_values_pass(prop: dict[str, Any], value: object) -> None:
    assert content_problems(schema({"f": prop}), {"f": value}) == []


def test_required_and_unknown_fields() -> None:
    form = schema({"a": {"type": "string"}, "b": {"type": "string"}}, required=["a"])
    assert content_problems(form, None) == ["'a' is required"]
    assert content_problems(form, {"a": "x", "c": "y"}) == ["'c' is not a field of the form"]
    assert content_problems(schema({"a": {"type": "string"}}), None) == []


def test_an_invalid_pattern_is_reported_not_raised() -> None:
    form = schema({"f": {"type": "string", "pattern": "("}})
    [problem] = content_problems(form, {"f": "x"})
    assert "not a valid regex" in problem


def test_defaults_are_collected_by_type() -> None:
    form = schema(
        {
            "s": {"type": "string", "default": "x"},
            "i": {"type": "integer", "default": 2},
            "n": {"type": "number", "default": 0.5},
            "b": {"type": "boolean", "default": False},
            "a": {"type": "array", "items": {"type": "string", "enum": ["p"]}, "default": ["p"]},
            "none": {"type": "string"},
        }
    )
    assert default_content(form) == {"s": "x", "i": 2, "n": 0.5, "b": False, "a": ["p"]}

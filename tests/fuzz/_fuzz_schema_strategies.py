"""Hypothesis strategies for ACP messages, built from the official JSON Schema's ``$defs``.

``params_for(method)`` draws params shaped like the schema's request type for that method
(bounded depth: past it, optional members are left out and nested values kept minimal);
``mutated_line(...)`` turns a message into something a hostile or broken peer sends:
truncated, retyped, oversized numbers, deep nesting, bad UTF-8, JSON that is not an object,
ids of every type. Written here because hypothesis-jsonschema is not available.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from helpers.acp_schema import load_schema
from hypothesis import strategies as st

MAX_DEPTH = 4


def _dumps(value: object) -> bytes:
    """JSON bytes of ``value``; integers of any size (a hostile peer sends those too)."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
IDS = st.one_of(
    st.integers(),
    st.text(max_size=8),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@cache
def _defs() -> dict[str, Any]:
    defs: dict[str, Any] = load_schema()["$defs"]
    return defs


@cache
def methods(side: str) -> dict[str, str]:
    """``method -> $defs name`` of the request params handled by ``side`` (agent or client)."""
    return {
        schema["x-method"]: name
        for name, schema in _defs().items()
        if schema.get("x-side") in (side, "protocol")
        and "x-method" in schema
        and name.endswith(("Request", "Notification"))
    }


def params_for(method: str, side: str) -> st.SearchStrategy[Any]:
    """Params for ``method`` as the schema shapes them."""
    return _from(_defs()[methods(side)[method]], 0)


def _from(node: Any, depth: int) -> st.SearchStrategy[Any]:
    if not isinstance(node, dict):
        return ANY_JSON
    if "$ref" in node:
        return st.deferred(lambda: _from(_defs()[node["$ref"].rsplit("/", 1)[-1]], depth + 1))
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    for key in ("anyOf", "oneOf"):
        if key in node:
            options = [_merged(node, option) for option in node[key]]
            return st.one_of([_from(option, depth + 1) for option in options])
    if "allOf" in node:
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for part in node["allOf"]:
            part = _defs()[part["$ref"].rsplit("/", 1)[-1]] if "$ref" in part else part
            merged = _merged(merged, part)
        return _from(merged, depth)
    kind = node.get("type")
    if isinstance(kind, list):
        return st.one_of([_from({**node, "type": one}, depth) for one in kind])
    if kind == "object" or "properties" in node:
        return _object(node, depth)
    if kind == "array":
        size = 0 if depth >= MAX_DEPTH else 2
        return st.lists(_from(node.get("items", {}), depth + 1), max_size=size)
    if kind == "string":
        return st.text(max_size=12)
    if kind == "integer":
        low = node.get("minimum")
        return st.integers(min_value=int(low) if low is not None else None, max_value=2**53)
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return ANY_JSON if depth < MAX_DEPTH else JSON_SCALARS


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in extra and "properties" in base:
        extra = _defs()[extra["$ref"].rsplit("/", 1)[-1]]
    merged = {k: v for k, v in base.items() if k not in ("anyOf", "oneOf")}
    for key, value in extra.items():
        if key == "properties":
            merged["properties"] = {**merged.get("properties", {}), **value}
        elif key == "required":
            merged["required"] = [*merged.get("required", []), *value]
        else:
            merged[key] = value
    return merged


def _object(node: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    properties: dict[str, Any] = node.get("properties", {})
    required = set(node.get("required", []))
    fixed = {key: _from(properties[key], depth + 1) for key in properties if key in required}
    optional = (
        {}
        if depth >= MAX_DEPTH
        else {
            key: _from(value, depth + 1) for key, value in properties.items() if key not in required
        }
    )
    return st.fixed_dictionaries(fixed, optional=optional)


# --- invalid input, by mutation --------------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


MUTATIONS = (
    "as-is",
    "truncate",
    "retype-id",
    "retype-params",
    "huge-number",
    "deep-nesting",
    "bad-utf8",
    "non-object",
    "lone-surrogate",
)


@st.composite
def mutated_line(draw: st.DrawFn, message: dict[str, Any]) -> bytes:
    """One line (with its newline) carrying ``message`` mutated one way."""
    how = draw(st.sampled_from(MUTATIONS))
    if how == "retype-id":
        message = {**message, "id": draw(IDS)}
    elif how == "retype-params":
        message = {**message, "params": draw(ANY_JSON)}
    line = _dumps(message)
    if how == "truncate":
        line = line[: draw(st.integers(0, max(0, len(line) - 1)))]
    elif how == "huge-number":
        line = line.replace(
            b'"jsonrpc"', b'"n":' + b"9" * draw(st.integers(20, 5000)) + b',"jsonrpc"', 1
        )
    elif how == "deep-nesting":
        line = line[:-1] + b',"deep":' + _nested(draw(st.integers(100, 100_000))) + b"}"
    elif how == "bad-utf8":
        at = draw(st.integers(0, len(line)))
        line = (
            line[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]))
            + line[at:]
        )
    elif how == "non-object":
        line = _dumps(draw(st.one_of(st.lists(ANY_JSON, max_size=3), JSON_SCALARS)))
    elif how == "lone-surrogate":
        line = line.replace(b'"jsonrpc"', b'"s":"ab\\ud83d","jsonrpc"', 1)
    return line.replace(b"\n", b" ") + b"\n"

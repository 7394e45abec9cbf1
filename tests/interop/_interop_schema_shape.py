"""The shape of a JSON Schema, for comparing two spellings of one protocol definition.

``shape(schema, defs)`` reduces a definition to what a message must look like: object
properties (each with its shape), required sets, arrays, nullability, string enums and
constants, and scalar types with their bounds, references resolved, documentation and
deserialisation hints dropped. The JSON Schema of the Rust-generated ACP schema and the JSON
Schema zod writes for the TypeScript SDK's validators spell the same thing differently (a
``uint32`` format against explicit bounds, ``allOf`` against ``anyOf``, ``oneOf`` against
``anyOf``); the shape is the same. ``differences(a, b)`` lists where two shapes disagree, by
path (``SuggestNesRequest.position.line``).
"""

from __future__ import annotations

from typing import Any

__all__ = ("differences", "shape")

_UINT32_MAX = 4_294_967_295
_DROPPED = frozenset(
    {
        "description",
        "title",
        "$schema",
        "default",
        "discriminator",
        "x-side",
        "x-method",
        "x-deserialize-default-on-error",
        "x-deserialize-skip-invalid-items",
    }
)

Shape = tuple[Any, ...]


def shape(schema: dict[str, Any], defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Shape:
    """The shape of ``schema`` (see the module docstring); ``defs`` resolves ``$ref``."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return ("recursive", name)
        return shape(defs[name], defs, (*seen, name))
    node = {k: v for k, v in schema.items() if k not in _DROPPED}
    if "allOf" in node:
        parts = [shape(part, defs, seen) for part in node.pop("allOf")]
        if node:
            parts.append(shape(node, defs, seen))
        objects = [p for p in parts if p[0] == "object"]
        if len(objects) < len(parts):
            return parts[0] if len(parts) == 1 else ("allOf", tuple(parts))
        props: dict[str, Shape] = {}
        required: set[str] = set()
        for part in objects:
            props.update(dict(part[1]))
            required |= set(part[2])
        return ("object", tuple(sorted(props.items())), tuple(sorted(required)))
    for key in ("anyOf", "oneOf"):
        if key in node:
            members = [m for m in node[key] if m.get("type") != "null"]
            shapes = [shape(m, defs, seen) for m in members]
            if shapes and all(s[0] == "const" for s in shapes):
                found: Shape = ("enum", tuple(sorted(s[1] for s in shapes)))
            elif len(shapes) == 1:
                found = shapes[0]
            else:
                found = ("union", tuple(sorted(shapes, key=repr)))
            return ("nullable", found) if len(members) < len(node[key]) else found
    if "const" in node:
        return ("const", node["const"])
    if "enum" in node:
        return ("enum", tuple(sorted(node["enum"])))
    kind = node.get("type")
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        found = shape({**node, "type": rest[0]}, defs, seen)
        return ("nullable", found) if "null" in kind else found
    if kind == "object":
        properties = node.get("properties", {})
        if not properties:
            return ("map",)
        return (
            "object",
            tuple(sorted((k, shape(v, defs, seen)) for k, v in properties.items())),
            tuple(sorted(node.get("required", []))),
        )
    if kind == "array":
        return ("array", shape(node.get("items", {}), defs, seen))
    if kind == "integer":
        fmt = node.get("format")
        if fmt == "uint32":
            return ("integer", 0, _UINT32_MAX)
        if fmt in ("int64", "uint64"):
            return ("integer", fmt)
        return ("integer", node.get("minimum"), node.get("maximum"))
    return (kind,)


def differences(ours: Shape, theirs: Shape, path: str) -> list[tuple[str, Shape, Shape]]:
    """Where two shapes disagree: ``(path, ours, theirs)`` at the deepest place each time."""
    if ours == theirs:
        return []
    if ours[0] == theirs[0] == "object":
        mine, other = dict(ours[1]), dict(theirs[1])
        found: list[tuple[str, Shape, Shape]] = []
        for name in sorted(set(mine) | set(other)):
            here = f"{path}.{name}"
            if name not in mine or name not in other:
                found.append((here, mine.get(name, ("absent",)), other.get(name, ("absent",))))
            else:
                found += differences(mine[name], other[name], here)
        if ours[2] != theirs[2]:
            found.append((f"{path} (required)", ours[2], theirs[2]))
        return found
    if ours[0] == theirs[0] and ours[0] in ("nullable", "array"):
        return differences(ours[1], theirs[1], path + ("[]" if ours[0] == "array" else ""))
    return [(path, ours, theirs)]

"""Test helpers: the official stable schema and a validator of ``SessionNotification`` with it."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson

_CACHE = Path(__file__).resolve().parents[2] / ".schema-cache"


@functools.cache
def stable_schema() -> dict[str, Any] | None:
    """The official stable v1 schema from the local cache, or ``None`` if not fetched."""
    found = sorted(_CACHE.glob("*/v1/schema.json"))
    return orjson.loads(found[-1].read_bytes()) if found else None


def stable_validator() -> Any:
    """A jsonschema validator of ``SessionNotification`` against the stable schema, or None."""
    schema = stable_schema()
    if schema is None:
        return None
    import jsonschema

    root = {"$ref": "#/$defs/SessionNotification", "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(root)

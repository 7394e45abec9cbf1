"""The ACP schema accord is checked against: ``scripts/schema_sources.py``, loaded by path.

The scripts directory is not a package the tests can import, so this helper loads the one
module that knows where the schema comes from (the pinned ``@agentclientprotocol/sdk`` release
plus its supplements: next edit suggestions and document sync from 1.4.0) and re-exports what
the tests use. ``load_schema()`` is cached: every caller gets the same dict, not to be changed.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ("SchemaSourceError", "load_schema", "schema_available", "sources")

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "schema_sources.py"


def _load_module() -> ModuleType:
    name = "accord_tests_schema_sources"
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.spec_from_file_location(name, _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


sources: ModuleType = _load_module()
"""``scripts/schema_sources.py`` itself (``PRIMARY_VERSION``, ``SUPPLEMENTS``, ...)."""

SchemaSourceError: type[Exception] = sources.SchemaSourceError


@functools.cache
def load_schema(protocol: str = "v1", *, stable: bool = False) -> dict[str, Any]:
    """The schema of ``protocol`` (shared; do not modify it). See ``scripts/schema_sources.py``.

    Raises:
        SchemaSourceError: a file is missing; run ``scripts/fetch_schema.sh``.
    """
    schema: dict[str, Any] = sources.load_schema(protocol, stable=stable)
    return schema


def schema_available() -> bool:
    """Whether every file of the schema is in ``.schema-cache`` (fetched)."""
    try:
        load_schema()
    except SchemaSourceError:
        return False
    return True

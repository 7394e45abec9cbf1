"""The ACP JSON Schema accord is generated from and checked against, and where its parts come from.

One place answers "which schema": :func:`load_schema` is what ``scripts/generate_schema.py``
generates the wire models from, and what the tests' wire check (``tests/helpers/wire_schema.py``)
validates every message against. Nothing of it is committed: ``scripts/fetch_schema.sh`` fetches
the pinned npm packages into ``.schema-cache/`` and the parts are put together in memory here, so
a fresh machine gets the same schema from the same two pins.

* The primary source: ``@agentclientprotocol/sdk`` at :data:`PRIMARY_VERSION`, its
  ``schema/<protocol>/schema.unstable.json`` (a strict superset of ``schema.json``, the stable
  surface, which is read as well to tell stable methods from unstable ones).
* Supplements (:data:`SUPPLEMENTS`): parts of the protocol that upstream moved out of the JSON
  schema, taken from the last release whose JSON schema still carried them. Next edit
  suggestions and document sync (``nes/*``, ``document/*``) left the JSON schema after
  ``@agentclientprotocol/sdk`` 1.4.0; 2.4.0 keeps them as a frozen TypeScript module
  (``@agentclientprotocol/sdk/experimental/nes``: ``dist/nes/schema/types.gen.d.ts`` and
  ``zod.gen.js``, "frozen NES compatibility snapshot from schema-v1.25.0"). accord takes the
  1.4.0 JSON definitions of those methods, checked against the 2.4.0 module by
  ``tests/interop/test_nes_sdk.py`` (the definitions agree field for field, required sets and
  enums included; the one difference is how 64-bit integers are spelled: ``integer`` with an
  ``int64`` / ``uint64`` format in the JSON schema, a plain JavaScript ``number`` in zod, which
  is a representation of the same field and not a change of the protocol).

A supplement adds the definitions its methods need (the ``x-method`` definitions of the named
method prefixes and everything they reference) and the capability properties it names; a
definition the primary source already has is kept from the primary source (the newer one wins),
and one that would differ from it in more than its documentation is refused, so a supplement can
never quietly change what the primary source defines.

Usage from another script: ``from schema_sources import load_schema`` (``scripts/`` is on
``sys.path`` when a script there runs); from the tests, ``tests/helpers/acp_schema.py`` loads
this file by path. ``python scripts/schema_sources.py`` prints what each supplement adds;
``--files`` prints the files ``scripts/fetch_schema.sh`` fetches for the supplements, one
``<version> <path>`` line each (stdlib only: it runs before any virtual environment exists).
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".schema-cache"
SDK_PACKAGE = "@agentclientprotocol/sdk"
PRIMARY_VERSION = "2.4.0"

Schema = dict[str, Any]


@dataclass(frozen=True)
class Supplement:
    """Definitions taken from another release of the SDK's JSON schema (module docstring).

    Attributes:
        version: The ``@agentclientprotocol/sdk`` version they come from.
        path: The schema file inside ``.schema-cache/<version>/`` (``scripts/fetch_schema.sh``
            fetches it).
        protocol: The protocol version (``v1``) whose schema they extend.
        methods: Method-name prefixes (``nes/``) or names whose definitions are taken.
        capabilities: Properties added to capability definitions: ``{def name: (property,
            ...)}``, each copied with the definitions it references.
        why: One line saying why the supplement exists.
    """

    version: str
    path: str
    protocol: str
    methods: tuple[str, ...]
    capabilities: dict[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])
    why: str = ""

    @property
    def file(self) -> Path:
        """Where ``scripts/fetch_schema.sh`` puts the file."""
        return CACHE / self.version / self.path

    def takes(self, method: str) -> bool:
        """Whether definitions of ``method`` come from this supplement."""
        return any(method == m or (m.endswith("/") and method.startswith(m)) for m in self.methods)


SUPPLEMENTS: tuple[Supplement, ...] = (
    Supplement(
        version="1.4.0",
        path="schema.json",
        protocol="v1",
        methods=("nes/", "document/"),
        capabilities={
            "AgentCapabilities": ("nes", "positionEncoding"),
            "ClientCapabilities": ("nes", "positionEncodings"),
        },
        why=(
            "next edit suggestions and document sync: in the JSON schema up to 1.4.0, a frozen "
            "TypeScript module (experimental/nes) in 2.4.0"
        ),
    ),
)


class SchemaSourceError(Exception):
    """A schema file is missing, or a supplement would change a primary definition."""


def primary_file(protocol: str, *, stable: bool = False) -> Path:
    """The primary source's schema file for ``protocol`` (unstable unless ``stable``)."""
    name = "schema.json" if stable else "schema.unstable.json"
    return CACHE / PRIMARY_VERSION / protocol / name


def _read(path: Path) -> Schema:
    if not path.exists():
        raise SchemaSourceError(f"{path} is missing; run scripts/fetch_schema.sh")
    loaded: Schema = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _strip_docs(value: Any, *, in_properties: bool = False) -> Any:
    """``value`` without ``description`` / ``title`` keywords (property names are kept)."""
    if isinstance(value, dict):
        items: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return {
            k: _strip_docs(v, in_properties=k == "properties" and not in_properties)
            for k, v in items.items()
            if in_properties or k not in ("description", "title")
        }
    if isinstance(value, list):
        values: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        return [_strip_docs(v) for v in values]
    return value


def _refs(value: Any) -> Iterator[str]:
    """The definition names ``value`` references (``#/$defs/Name``), depth first."""
    if isinstance(value, dict):
        items: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        ref = items.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref.removeprefix("#/$defs/")
        for v in items.values():
            yield from _refs(v)
    elif isinstance(value, list):
        values: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        for v in values:
            yield from _refs(v)


def apply_supplement(schema: Schema, supplement: Supplement, source: Schema) -> list[str]:
    """Add ``supplement``'s definitions from ``source`` to ``schema`` (in place).

    Returns the names of the definitions added, in order.

    Raises:
        SchemaSourceError: a capability definition or property is missing from a source, or a
            definition both have differs in more than its documentation.
    """
    defs: dict[str, Schema] = schema["$defs"]
    extra: dict[str, Schema] = source["$defs"]
    wanted: list[str] = [
        name
        for name, d in extra.items()
        if isinstance(d.get("x-method"), str) and supplement.takes(d["x-method"])
    ]
    properties: dict[str, dict[str, Schema]] = {}
    for owner, names in supplement.capabilities.items():
        if owner not in defs or owner not in extra:
            raise SchemaSourceError(f"{owner} is not defined in both sources")
        for prop in names:
            given = extra[owner].get("properties", {}).get(prop)
            if given is None:
                raise SchemaSourceError(
                    f"{SDK_PACKAGE} {supplement.version} defines no {owner}.{prop}"
                )
            if prop in defs[owner].get("properties", {}):
                continue  # the primary source has it now: the newer one wins
            properties.setdefault(owner, {})[prop] = copy.deepcopy(given)
            wanted.extend(_refs(given))
    added: list[str] = []
    seen: set[str] = set()
    queue = list(wanted)
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name not in extra:
            raise SchemaSourceError(f"{SDK_PACKAGE} {supplement.version} has no $defs/{name}")
        if name in defs:
            if _strip_docs(defs[name]) != _strip_docs(extra[name]):
                raise SchemaSourceError(
                    f"$defs/{name} of {SDK_PACKAGE} {supplement.version} differs from "
                    f"{PRIMARY_VERSION}'s: a supplement may only add definitions"
                )
            continue
        defs[name] = copy.deepcopy(extra[name])
        added.append(name)
        queue.extend(_refs(extra[name]))
    for owner, props in properties.items():
        target = defs[owner].setdefault("properties", {})
        meta = target.pop("_meta", None)  # keep `_meta` last, as the schema writes it
        target.update(props)
        if meta is not None:
            target["_meta"] = meta
    return added


def load_schema(protocol: str = "v1", *, stable: bool = False) -> Schema:
    """The schema of ``protocol``: the primary source with its supplements (module docstring).

    The stable schema (``stable=True``) is the primary source's alone: every supplemented
    method is unstable.

    Raises:
        SchemaSourceError: a file is missing (run ``scripts/fetch_schema.sh``) or a supplement
            does not fit.
    """
    schema = _read(primary_file(protocol, stable=stable))
    if stable:
        return schema
    for supplement in SUPPLEMENTS:
        if supplement.protocol == protocol:
            apply_supplement(schema, supplement, _read(supplement.file))
    return schema


def describe() -> str:
    """What each supplement adds to the primary source (for people; ``python`` this file)."""
    lines = [f"primary: {SDK_PACKAGE} {PRIMARY_VERSION}"]
    for supplement in SUPPLEMENTS:
        schema = _read(primary_file(supplement.protocol))
        added = apply_supplement(schema, supplement, _read(supplement.file))
        props = ", ".join(
            f"{owner}.{p}" for owner, names in supplement.capabilities.items() for p in names
        )
        lines.append(
            f"supplement: {SDK_PACKAGE} {supplement.version} {supplement.path} "
            f"({supplement.why}): {len(added)} definitions; properties {props}"
        )
        lines.extend(f"  {name}" for name in added)
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] == ["--files"]:
        for wanted in SUPPLEMENTS:
            print(wanted.version, wanted.path)
        sys.exit(0)
    try:
        print(describe())
    except SchemaSourceError as error:
        sys.exit(f"error: {error}")

#!/usr/bin/env python3
"""Generate accord's wire models from the official ACP JSON Schema.

Reads the schema of `scripts/schema_sources.py` (`.schema-cache/<sdk version>/<protocol
version>/schema.unstable.json`, fetched by `scripts/fetch_schema.sh`, with the supplements
listed there: next edit suggestions and document sync from an older release, which still
carried them; the unstable schema is a strict superset of the stable one) and writes two
committed modules:

* `src/accord/schema/_generated_<v>.py`: one pydantic model or type alias per `$defs` entry,
  plus one class per variant of each tagged union;
* `src/accord/schema/_methods_<v>.py`: the method tables built from `x-method` / `x-side`.

The rules (class names, aliases, leniency, defaults) are documented in docs/architecture.md,
"Wire models". The output is deterministic and formatted with `ruff format`.

Usage: python scripts/generate_schema.py [--protocol v1] [--check]
"""

from __future__ import annotations

import argparse
import io
import json
import keyword
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schema_sources import PRIMARY_VERSION, SDK_PACKAGE, SUPPLEMENTS, SchemaSourceError, load_schema

ROOT = Path(__file__).resolve().parent.parent
SDK_VERSION = PRIMARY_VERSION

Schema = dict[str, Any]

# --- hand-written knowledge the schema does not carry ------------------------------------

# Handler names that do not follow "strip Request/Notification, snake_case".
HANDLER_OVERRIDES: dict[str, str] = {
    "SessionNotification": "session_update",
    "CancelNotification": "cancel",
    # mcp/message is both a request (agent -> client) and a notification (client -> agent).
    "MessageMcpRequest": "mcp_message",
    "MessageMcpNotification": "mcp_notification",
}

# Capability path (wire names, in the handler side's capabilities) that gates a method.
# Methods absent from this map are baseline (capability None).
CAPABILITIES: dict[str, tuple[str, ...]] = {
    # agentCapabilities
    "session/load": ("loadSession",),
    "session/list": ("sessionCapabilities", "list"),
    "session/resume": ("sessionCapabilities", "resume"),
    "session/close": ("sessionCapabilities", "close"),
    "session/delete": ("sessionCapabilities", "delete"),
    "session/fork": ("sessionCapabilities", "fork"),
    "session/archive": ("sessionCapabilities", "archive"),
    "session/unarchive": ("sessionCapabilities", "archive"),
    "session/status": ("sessionCapabilities", "status"),
    "session/set_title": ("sessionCapabilities", "title"),
    "logout": ("auth", "logout"),
    "auth/status": ("auth", "status"),
    "providers/list": ("providers",),
    "providers/set": ("providers",),
    "providers/disable": ("providers",),
    "nes/start": ("nes",),
    "nes/suggest": ("nes",),
    "nes/close": ("nes",),
    "nes/accept": ("nes",),
    "nes/reject": ("nes",),
    "document/didOpen": ("nes", "events", "document", "didOpen"),
    "document/didChange": ("nes", "events", "document", "didChange"),
    "document/didClose": ("nes", "events", "document", "didClose"),
    "document/didSave": ("nes", "events", "document", "didSave"),
    "document/didFocus": ("nes", "events", "document", "didFocus"),
    # clientCapabilities
    "fs/read_text_file": ("fs", "readTextFile"),
    "fs/write_text_file": ("fs", "writeTextFile"),
    "terminal/create": ("terminal",),
    "terminal/output": ("terminal",),
    "terminal/wait_for_exit": ("terminal",),
    "terminal/kill": ("terminal",),
    "terminal/release": ("terminal",),
    "elicitation/create": ("elicitation",),
    "elicitation/complete": ("elicitation",),
}

# Sides that get a table; `proxy/*` (proxy chains, x-side "proxy") is left out on purpose.
TABLE_SIDES = {"agent": "AGENT_METHODS", "client": "CLIENT_METHODS", "protocol": "PROTOCOL_METHODS"}

# String enums whose unknown values decode as a known one (Rust `#[serde(other)]`).
ENUM_FALLBACKS: dict[str, str] = {"ToolKind": "other"}

# Required fields of these enums decode a missing, null or unknown value as an extra member that
# is not in the schema, so a peer that bends the schema is still understood (a permission option
# without a usable kind is still offered, by its id and name, and never picked by kind).
ENUM_FIELD_UNKNOWN: dict[str, str] = {"PermissionOptionKind": "unknown"}


@dataclass(frozen=True)
class Target:
    """One protocol version to generate (v1 now; v2 later with the same rules)."""

    protocol: str

    @property
    def models_path(self) -> Path:
        return ROOT / "src" / "accord" / "schema" / f"_generated_{self.protocol}.py"

    @property
    def stub_path(self) -> Path:
        return self.models_path.with_suffix(".pyi")

    @property
    def methods_path(self) -> Path:
        return ROOT / "src" / "accord" / "schema" / f"_methods_{self.protocol}.py"


# --- naming -------------------------------------------------------------------------------


def snake(name: str) -> str:
    """Wire name -> Python attribute: `sessionUpdate` -> `session_update`, `_meta` -> `meta`."""
    name = name.lstrip("_")
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    name = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", name)
    name = re.sub(r"[^0-9a-zA-Z_]", "_", name).lower()
    if keyword.iskeyword(name):
        name += "_"
    return name


def camel_tag(value: str) -> str:
    """Tag value -> class-name prefix: `agent_message_chunk` -> `AgentMessageChunk`."""
    parts = re.split(r"[^0-9a-zA-Z]+", value)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


def ref_name(ref: str) -> str:
    assert ref.startswith("#/$defs/"), ref
    return ref.removeprefix("#/$defs/")


# --- output model ---------------------------------------------------------------------------


@dataclass
class FieldSpec:
    name: str
    wire: str
    annotation: str
    required: bool
    default: str | None = None  # a Python expression
    default_factory: str | None = None
    exclude_none: bool = False
    description: str | None = None


@dataclass
class ClassSpec:
    name: str
    doc: str | None
    base: str
    fields: list[FieldSpec]
    tags: list[tuple[str, str, str]] = field(default_factory=list[tuple[str, str, str]])
    deps: set[str] = field(default_factory=set[str])


@dataclass
class AliasSpec:
    name: str
    doc: str | None
    expr: str
    deps: set[str] = field(default_factory=set[str])


Decl = ClassSpec | AliasSpec


# --- schema helpers ---------------------------------------------------------------------------


def strip_docs(schema: Any, *, in_properties: bool = False) -> Any:
    """The schema without `description` / `title` keywords (property names are kept)."""
    if isinstance(schema, dict):
        items: dict[str, Any] = schema  # pyright: ignore[reportUnknownVariableType]
        return {
            k: strip_docs(v, in_properties=(k == "properties" and not in_properties))
            for k, v in items.items()
            if in_properties or k not in ("description", "title")
        }
    if isinstance(schema, list):
        values: list[Any] = schema  # pyright: ignore[reportUnknownVariableType]
        return [strip_docs(v) for v in values]
    return schema


def canonical(schema: Any) -> str:
    return json.dumps(strip_docs(schema), sort_keys=True)


def single_ref(schema: Schema) -> str | None:
    """The def a property schema points to (`$ref` or `allOf: [$ref]`), if that is all it is."""
    if "$ref" in schema:
        return ref_name(schema["$ref"])
    all_of = schema.get("allOf")
    if all_of and len(all_of) == 1 and "$ref" in all_of[0]:
        return ref_name(all_of[0]["$ref"])
    return None


def is_null(schema: Schema) -> bool:
    return schema.get("type") == "null"


def nullable(schema: Schema) -> bool:
    t = schema.get("type")
    if isinstance(t, list) and "null" in t:
        return True
    return any(is_null(m) for m in schema.get("anyOf", []))


def const_tag(member: Schema) -> tuple[str, Any] | None:
    """`(property, value)` when a union member is tagged by one const property."""
    consts: list[tuple[str, Any]] = [
        (name, prop["const"])
        for name, prop in member.get("properties", {}).items()
        if isinstance(prop, dict) and "const" in prop
    ]
    if len(consts) == 1:
        return consts[0]
    return None


def is_other_member(member: Schema, tag: str) -> bool:
    props = member.get("properties", {})
    return (
        member.get("title") == "other"
        and tag in props
        and "const" not in props[tag]
        and props[tag].get("type") == "string"
    )


def is_pure_ref(member: Schema) -> bool:
    return single_ref(
        {k: v for k, v in member.items() if k not in ("title", "description")}
    ) is not None and not member.get("properties")


def doc_text(text: str | None) -> str | None:
    if not text:
        return None
    return text.strip() or None


# --- the generator ------------------------------------------------------------------------------


class Generator:
    def __init__(self, schema: Schema, stable: Schema, target: Target) -> None:
        self.schema = schema
        self.defs: dict[str, Schema] = schema["$defs"]
        self.stable_defs: dict[str, Schema] = stable["$defs"]
        self.target = target
        self.decls: dict[str, Decl] = {}
        self.def_kind: dict[str, str] = {}  # def name -> "class" | "alias"
        # Variant classes merged into their referenced def (variant name == def name).
        self.merged_tags: dict[str, list[tuple[str, str, str]]] = {}
        self._deps: set[str] = set()

    # ---- classification ---------------------------------------------------------------

    def classify(self, name: str, schema: Schema) -> str:
        unions = schema.get("oneOf") or schema.get("anyOf")
        has_props = "properties" in schema or schema.get("type") == "object"
        if has_props and unions:
            if "oneOf" in schema and "discriminator" in schema:
                return "tagged"
            return "merged"
        if has_props:
            return "class"
        if unions:
            members: list[Schema] = unions
            if all(self._is_scalar_enum_member(m) for m in members):
                return "enum"
            if any(const_tag(m) for m in members):
                return "tagged"
            if all(is_pure_ref(m) or self._is_plain_type(m) for m in members):
                return "union"
            return "merged"
        if "allOf" in schema and single_ref(schema):
            target = single_ref(schema)
            assert target is not None
            return (
                "subclass"
                if self.classify(target, self.defs[target]) in ("class", "merged", "subclass")
                else "alias"
            )
        if "type" in schema:
            return "scalar"
        return "any"

    @staticmethod
    def _is_scalar_enum_member(member: Schema) -> bool:
        if "const" in member and member.get("type") in ("string", "integer"):
            return True
        return (
            member.get("title", "").lower() == "other"
            and member.get("type")
            in (
                "string",
                "integer",
            )
            and "properties" not in member
        )

    @staticmethod
    def _is_plain_type(member: Schema) -> bool:
        return "type" in member and "properties" not in member and "allOf" not in member

    # ---- type rendering -------------------------------------------------------------------

    def render(self, schema: Schema, *, skip_invalid_items: bool = False) -> str:
        """Python type expression of a (property) schema, without the null part."""
        ref = single_ref(schema)
        if ref is not None:
            self._deps.add(ref)
            return ref
        if "const" in schema:
            return f"Literal[{json.dumps(schema['const'])}]"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.render_union([m for m in schema[key] if not is_null(m)])
        if "allOf" in schema:
            raise ValueError(f"unsupported allOf: {schema}")
        t = schema.get("type")
        if t is None:
            return "Any"
        listed: list[Any] = t if isinstance(t, list) else [t]  # pyright: ignore[reportUnknownVariableType]
        types = [x for x in listed if x != "null"]
        if not types:
            return "None"
        assert len(types) == 1, schema
        t = types[0]
        if t == "string":
            if "minLength" in schema:
                return f"Annotated[str, Field(min_length={schema['minLength']})]"
            return "str"
        if t == "boolean":
            return "bool"
        if t == "number":
            return "float"
        if t == "integer":
            bounds: list[str] = []
            if "minimum" in schema:
                bounds.append(f"ge={schema['minimum']}")
            if "maximum" in schema:
                bounds.append(f"le={schema['maximum']}")
            if bounds:
                return f"Annotated[int, Field({', '.join(bounds)})]"
            return "int"
        if t == "array":
            item = self.render(schema.get("items", {}))
            if skip_invalid_items:
                item = f"Annotated[{item}, SKIP_INVALID]"
            return f"list[{item}]"
        if t == "object":
            add = schema.get("additionalProperties", True)
            if schema.get("properties"):
                raise ValueError(f"inline object with properties: {schema}")
            value = "Any" if add is True or add == {} else self.render(add)
            return f"dict[str, {value}]"
        raise ValueError(f"unsupported type {t!r}")

    def render_union(self, members: list[Schema]) -> str:
        parts: list[str] = []
        str_consts: list[Any] = []
        for m in members:
            if "const" in m and not m.get("properties"):
                str_consts.append(m["const"])
                continue
            parts.append(self.render(m))
        if str_consts:
            parts.insert(0, f"Literal[{', '.join(json.dumps(c) for c in str_consts)}]")
        out: list[str] = []
        for p in parts:
            if p not in out:
                out.append(p)
        if any(p == "Any" or self.def_kind.get(p) == "any" for p in out):
            return "Any"
        return " | ".join(out)

    # ---- fields ------------------------------------------------------------------------

    def make_field(self, wire: str, prop: Schema, required: bool, deps: set[str]) -> FieldSpec:
        self._deps = set()
        skip = bool(prop.get("x-deserialize-skip-invalid-items"))
        base = self.render(prop, skip_invalid_items=skip)
        deps |= self._deps
        is_any = base == "Any" or self.def_kind.get(base) == "any"
        is_nullable = nullable(prop) and not is_any
        annotation = f"{base} | None" if is_nullable else base
        spec = FieldSpec(
            name=snake(wire),
            wire=wire,
            annotation=annotation,
            required=required,
            description=doc_text(prop.get("description")),
        )
        kind = self._container_kind(prop)
        if not required:
            if "default" in prop:
                default = prop["default"]
                if isinstance(default, (bool, int, float, str)) or default is None:
                    spec.default = repr(default)
                elif default == [] and kind == "list":
                    spec.default_factory = "list"
                elif isinstance(default, dict) and kind == "dict":
                    assert default == {}, prop
                    spec.default_factory = "dict"
                elif isinstance(default, dict) and single_ref(prop):
                    target = single_ref(prop)
                    assert target is not None
                    assert self.classify(target, self.defs[target]) == "class", target
                    spec.default_factory = target
                else:
                    raise ValueError(f"unsupported default {default!r} in {prop}")
            elif is_nullable or is_any:
                spec.default = "None"
            elif kind == "list":
                spec.default_factory = "list"
            elif kind == "dict":
                spec.default_factory = "dict"
            else:
                # Optional but not nullable: absent means None here; never sent as null.
                spec.annotation = f"{annotation} | None"
                spec.default = "None"
                spec.exclude_none = True
        markers: list[str] = []
        if prop.get("x-deserialize-default-on-null"):
            assert kind in ("list", "dict"), prop
            markers.append(f"NullAsDefault(empty_{kind})")
        if prop.get("x-deserialize-default-on-error") and not is_any:
            if spec.default_factory in ("list", "dict"):
                markers.append(f"DefaultOnError(default_factory=empty_{spec.default_factory})")
            elif spec.default_factory is not None:
                markers.append(f"DefaultOnError(default_factory={spec.default_factory})")
            elif spec.default is not None:
                markers.append(f"DefaultOnError({spec.default})")
            elif required and kind == "list":
                markers.append("DefaultOnError(default_factory=empty_list)")
            else:
                raise ValueError(f"default-on-error without a default: {wire} {prop}")
        if base in ENUM_FIELD_UNKNOWN and required and not is_nullable:
            assert not markers, (wire, prop)
            unknown = json.dumps(ENUM_FIELD_UNKNOWN[base])
            spec.annotation = f"{base} | Literal[{unknown}]"
            markers.append(f"DefaultOnError({unknown})")
        if markers:
            spec.annotation = f"Annotated[{spec.annotation}, {', '.join(markers)}]"
        return spec

    @staticmethod
    def _container_kind(prop: Schema) -> str | None:
        t = prop.get("type")
        types: list[Any] = t if isinstance(t, list) else [t]  # pyright: ignore[reportUnknownVariableType]
        if "array" in types:
            return "list"
        if "object" in types and "additionalProperties" in prop and not prop.get("properties"):
            return "dict"
        return None

    def fields_of(
        self, props: dict[str, Schema], required: Iterable[str], deps: set[str]
    ) -> list[FieldSpec]:
        req = set(required)
        return [self.make_field(wire, p, wire in req, deps) for wire, p in props.items()]

    # ---- flattening (merged classes) ---------------------------------------------------

    def alternatives(self, schema: Schema) -> list[tuple[dict[str, Schema], set[str]]]:
        """The property sets a schema admits: base properties x union branches (allOf = and)."""
        ref = single_ref(schema) if not schema.get("properties") else None
        if ref is not None and set(schema) <= {"$ref", "allOf", "title", "description"}:
            return self.alternatives(self.defs[ref])
        base: list[tuple[dict[str, Schema], set[str]]] = [
            (dict(schema.get("properties", {})), set(schema.get("required", [])))
        ]
        for part in schema.get("allOf", []):
            base = self._combine(base, self.alternatives(part))
        union = schema.get("oneOf") or schema.get("anyOf")
        if union:
            branches: list[tuple[dict[str, Schema], set[str]]] = []
            for member in union:
                if is_null(member):
                    continue
                branches.extend(self.alternatives(member))
            base = self._combine(base, branches)
        return base

    @staticmethod
    def _combine(
        left: list[tuple[dict[str, Schema], set[str]]],
        right: list[tuple[dict[str, Schema], set[str]]],
    ) -> list[tuple[dict[str, Schema], set[str]]]:
        out: list[tuple[dict[str, Schema], set[str]]] = []
        for lp, lr in left:
            for rp, rr in right:
                props = dict(lp)
                for k, v in rp.items():
                    props.setdefault(k, v)  # the outer (wider) schema wins
                out.append((props, lr | rr))
        return out

    def merged_props(self, schema: Schema) -> tuple[dict[str, Schema], set[str]]:
        alts = self.alternatives(schema)
        order: list[str] = []
        variants: dict[str, list[Schema]] = {}
        for props, _ in alts:
            for k, v in props.items():
                if k not in variants:
                    order.append(k)
                    variants[k] = []
                if canonical(v) not in [canonical(x) for x in variants[k]]:
                    variants[k].append(v)
        required = {k for k in order if all(k in props and k in req for props, req in alts)}
        for k in order:
            # A tag (a string constant) that some open alternative leaves out may be any string
            # there: "Unknown `type` values with string payloads" read as that alternative.
            if any(k not in props for props, _ in alts) and all(
                isinstance(v.get("const"), str) for v in variants[k]
            ):
                variants[k].append({"type": "string"})
        merged: dict[str, Schema] = {}
        for k in order:
            vs = variants[k]
            descriptions: list[str] = []
            for v in vs:
                text = doc_text(v.get("description"))
                if text and text not in descriptions:
                    descriptions.append(text)
            description = "\n\nOr: ".join(descriptions) if descriptions else None
            if len(vs) == 1:
                merged[k] = vs[0]
            else:
                merged[k] = {"anyOf": [strip_docs(v) for v in vs]}
                for flag in ("x-deserialize-default-on-error", "x-deserialize-skip-invalid-items"):
                    if all(v.get(flag) for v in vs):
                        merged[k][flag] = True
            if description and not merged[k].get("description"):
                merged[k] = {**merged[k], "description": description}
        return merged, required

    # ---- declarations ----------------------------------------------------------------------

    def build(self) -> None:
        for name, schema in self.defs.items():
            self.def_kind[name] = self.classify(name, schema)
        for name, schema in self.defs.items():
            kind = self.def_kind[name]
            getattr(self, f"build_{kind}")(name, schema)
        for name, tags in self.merged_tags.items():
            decl = self.decls[name]
            assert isinstance(decl, ClassSpec)
            decl.tags.extend(tags)

    def add(self, decl: Decl) -> None:
        if decl.name in self.decls:
            raise ValueError(f"name collision: {decl.name}")
        self.decls[decl.name] = decl

    def build_class(self, name: str, schema: Schema) -> None:
        deps: set[str] = set()
        fields = self.fields_of(schema.get("properties", {}), schema.get("required", []), deps)
        self.add(
            ClassSpec(name, doc_text(schema.get("description")), "WireModel", fields, deps=deps)
        )

    def build_merged(self, name: str, schema: Schema) -> None:
        deps: set[str] = set()
        props, required = self.merged_props(schema)
        fields = self.fields_of(props, required, deps)
        self.add(
            ClassSpec(name, doc_text(schema.get("description")), "WireModel", fields, deps=deps)
        )

    def build_subclass(self, name: str, schema: Schema) -> None:
        target = single_ref(schema)
        assert target is not None
        self.add(ClassSpec(name, doc_text(schema.get("description")), target, [], deps={target}))

    def build_alias(self, name: str, schema: Schema) -> None:
        self._deps = set()
        expr = self.render(schema)
        self.add(AliasSpec(name, doc_text(schema.get("description")), expr, deps=set(self._deps)))

    def build_scalar(self, name: str, schema: Schema) -> None:
        self.build_alias(name, schema)

    def build_any(self, name: str, schema: Schema) -> None:
        self.add(AliasSpec(name, doc_text(schema.get("description")), "Any"))

    def build_union(self, name: str, schema: Schema) -> None:
        self._deps = set()
        members = [m for m in (schema.get("oneOf") or schema["anyOf"]) if not is_null(m)]
        expr = self.render_union(members)
        if any(is_null(m) for m in (schema.get("oneOf") or schema["anyOf"])):
            expr += " | None"
        self.add(AliasSpec(name, doc_text(schema.get("description")), expr, deps=set(self._deps)))

    def build_enum(self, name: str, schema: Schema) -> None:
        members = schema.get("oneOf") or schema["anyOf"]
        consts = [m["const"] for m in members if "const" in m]
        others = [m for m in members if "const" not in m]
        expr = f"Literal[{', '.join(json.dumps(c) for c in consts)}]"
        if others:
            expr += " | " + ("str" if others[0]["type"] == "string" else "int")
        if name in ENUM_FALLBACKS:
            assert not others, name
            assert ENUM_FALLBACKS[name] in consts
            expr = f"Annotated[{expr}, UnknownAs({json.dumps(ENUM_FALLBACKS[name])})]"
        self.add(AliasSpec(name, doc_text(schema.get("description")), expr))

    def build_tagged(self, name: str, schema: Schema) -> None:
        members: list[Schema] = schema.get("oneOf") or schema["anyOf"]
        tag: str | None = schema.get("discriminator", {}).get("propertyName")
        if tag is None:
            tags = {t[0] for m in members if (t := const_tag(m))}
            assert len(tags) == 1, (name, tags)
            tag = tags.pop()
        assert tag is not None
        attr = snake(tag)
        # Properties every variant shares (SessionConfigOption's id/name/...).
        base_props: dict[str, Schema] = schema.get("properties", {})
        base_required: list[str] = schema.get("required", [])
        variants: list[tuple[str, str]] = []  # (class name, Tag value)
        known: list[str] = []
        other: str | None = None
        fallback: str | None = None
        deps: set[str] = set()
        for member in members:
            ct = const_tag(member)
            ref = (
                single_ref({k: v for k, v in member.items() if k == "allOf"})
                if "allOf" in member
                else None
            )
            if ref is not None and self.def_kind[ref] not in ("class", "merged", "subclass"):
                # v2's SessionUpdate has `state_update` wrapping the StateUpdate union.
                raise NotImplementedError(
                    f"variant of {name} wraps {ref}, a {self.def_kind[ref]}: nested unions are "
                    "not supported yet"
                )
            if ct is not None:
                assert ct[0] == tag, (name, ct)
                value = ct[1]
                known.append(value)
                cls = camel_tag(value) + name
                fdeps: set[str] = set()
                fields = self.fields_of(base_props, base_required, fdeps)
                tag_field = FieldSpec(
                    name=attr,
                    wire=tag,
                    annotation=f"Literal[{json.dumps(value)}]",
                    required=False,
                    default=json.dumps(value),
                    description=doc_text(member["properties"][tag].get("description")),
                )
                doc = doc_text(member.get("description")) or (
                    doc_text(self.defs[ref].get("description")) if ref else None
                )
                if ref is not None and ref == cls and not base_props:
                    # The def already is the variant (e.g. IdleStateUpdate): tag it in place.
                    target = self.defs[ref]
                    assert tag not in target.get("properties", {}), cls
                    self.merged_tags.setdefault(ref, []).append((attr, tag, value))
                    self._pending_tag_fields.setdefault(ref, []).append(tag_field)
                else:
                    self.add(
                        ClassSpec(
                            cls,
                            doc,
                            ref or "WireModel",
                            [*fields, tag_field],
                            tags=[(attr, tag, value)],
                            deps=fdeps | ({ref} if ref else set()),
                        )
                    )
                variants.append((cls, value))
                deps.add(cls)
            elif is_other_member(member, tag):
                assert not base_props
                other = "other"
                cls = "Other" + name
                self.add(
                    ClassSpec(
                        cls,
                        doc_text(member.get("description"))
                        or f"A `{name}` with a `{tag}` this version does not know; kept as is.",
                        "WireModel",
                        [FieldSpec(name=attr, wire=tag, annotation="str", required=True)],
                    )
                )
                variants.append((cls, "other"))
                deps.add(cls)
            else:
                assert is_pure_ref(member), (name, member)
                target = single_ref({k: v for k, v in member.items() if k != "title"})
                assert target is not None
                fallback_tag: str = member.get("title") or target
                fallback = fallback_tag
                variants.append((target, fallback_tag))
                deps.add(target)
        open_union = other is not None or fallback is not None
        if not open_union:
            body = " | ".join(cls for cls, _ in variants)
            expr = f'Annotated[{body}, Field(discriminator="{attr}")]'
        else:
            body = " | ".join(f'Annotated[{cls}, Tag("{value}")]' for cls, value in variants)
            known_expr = "frozenset({" + ", ".join(json.dumps(k) for k in known) + "})"
            args = [json.dumps(tag), json.dumps(attr), known_expr]
            if other:
                args.append(f"other={json.dumps(other)}")
            if fallback:
                args.append(f"fallback={json.dumps(fallback)}")
            expr = f"Annotated[{body}, Discriminator(tag_discriminator({', '.join(args)}))]"
        self.add(AliasSpec(name, doc_text(schema.get("description")), expr, deps=deps))

    _pending_tag_fields: dict[str, list[FieldSpec]]

    def run(self) -> None:
        self._pending_tag_fields = {}
        self.build()
        for name, tag_fields in self._pending_tag_fields.items():
            decl = self.decls[name]
            assert isinstance(decl, ClassSpec)
            decl.fields.extend(tag_fields)

    # ---- ordering and emission -------------------------------------------------------------

    def ordered(self) -> list[Decl]:
        """Definitions in schema order, each after what it needs (depth-first, stable)."""
        done: set[str] = set()
        visiting: set[str] = set()
        out: list[Decl] = []

        def visit(name: str) -> None:
            if name in done:
                return
            if name in visiting:
                raise ValueError(f"reference cycle through {name}")
            visiting.add(name)
            decl = self.decls[name]
            deps = set(decl.deps)
            if isinstance(decl, ClassSpec) and decl.base != "WireModel":
                deps.add(decl.base)
            for dep in sorted(deps, key=self._position):
                visit(dep)
            visiting.discard(name)
            done.add(name)
            out.append(decl)

        for name in sorted(self.decls, key=self._position):
            visit(name)
        return out

    def _position(self, name: str) -> tuple[int, str]:
        keys = list(self.defs)
        return (keys.index(name) if name in keys else len(keys), name)

    def emit_models(self, *, lazy: bool = False) -> str:
        """The models module: eager class definitions (the `.pyi` stub, what type checkers
        read) or, with `lazy`, the runtime module, where each name is defined on first access."""
        v = self.target.protocol
        laziness = (
            [
                "",
                "Each name is defined on first access (PEP 562 `__getattr__`), together with the",
                "names it needs, so a process pays only for the models it uses. The eager",
                f"definitions, which type checkers read, are in `_generated_{v}.pyi`, with the",
                "fields' descriptions (left out here: they would cost every process memory).",
            ]
            if lazy
            else []
        )
        lines: list[str] = [
            *header(v),
            f'"""ACP {v} wire models (stable + unstable surface), generated from the official'
            " JSON Schema.",
            "",
            "One name per schema `$defs` entry, plus one class per variant of each tagged union",
            "(`TextContentBlock`, `AgentMessageChunkSessionUpdate`, ...). See docs/architecture.md.",
            *laziness,
            '"""',
            "",
            *(
                ["from collections.abc import Callable", "from threading import RLock"]
                if lazy
                else []
            ),
            "from typing import Annotated, Any, Literal, TypeAlias",
            "",
            "from pydantic import (",
            "    Discriminator,",
            "    Field,",
            "    Tag,",
            "    computed_field,",
            ")",
            "",
            "from ._base import (",
            "    SKIP_INVALID,",
            "    DefaultOnError,",
            "    NullAsDefault,",
            "    UnknownAs,",
            "    WireModel,",
            "    empty_dict,",
            "    empty_list,",
            "    is_none,",
            "    tag_discriminator,",
            ")",
            "",
        ]
        used: set[str] = set()
        body: list[str] = []
        ordered = self.ordered()
        for decl in ordered:
            body.append("")
            body.append("")
            if lazy:
                body.extend(self.emit_definer(decl))
            elif isinstance(decl, AliasSpec):
                body.append(f"{decl.name}: TypeAlias = {decl.expr}")
                if decl.doc:
                    body.append(docstring(decl.doc, ""))
            else:
                body.extend(self.emit_class(decl, stub=True))
        if lazy:
            body = ["", "", *LAZY_RUNTIME.splitlines(), *body]
        text = "\n".join(body)
        for name in (
            "SKIP_INVALID",
            "DefaultOnError",
            "NullAsDefault",
            "UnknownAs",
            "empty_dict",
            "empty_list",
            "is_none",
            "tag_discriminator",
            "Discriminator",
            "Tag",
        ):
            if re.search(rf"\b{name}\b", text):
                used.add(name)
        names = sorted(d.name for d in self.decls.values())
        all_block = (
            ["", "", "__all__: tuple[str, ...] = ("] + [f'    "{n}",' for n in names] + [")"]
        )
        out = "\n".join(lines) + text + "\n" + "\n".join(all_block) + "\n"
        # Drop unused helper imports (keeps pyright strict quiet for small schemas).
        for name in (
            "SKIP_INVALID",
            "DefaultOnError",
            "NullAsDefault",
            "UnknownAs",
            "empty_dict",
            "empty_list",
            "is_none",
            "tag_discriminator",
        ):
            if name not in used:
                out = out.replace(f"    {name},\n", "", 1)
        if "builtins." in text:
            out = out.replace("from typing import", "import builtins\nfrom typing import", 1)
        if "Discriminator" not in used and "Tag" not in used:
            out = out.replace("    Discriminator,\n", "", 1).replace("    Tag,\n", "", 1)
        return out

    def emit_definer(self, decl: Decl) -> list[str]:
        """`_define_<name>()`: defines the class or alias (after what it names) as a global."""
        if isinstance(decl, AliasSpec):
            inner = [f"{decl.name} = {decl.expr}"]
        else:
            # Field descriptions live in the stub only: at run time they cost every process
            # memory and serve no one (class docstrings stay, for help()).
            inner = self.emit_class(decl, descriptions=False)
        block = "\n".join(inner) + "\n"
        # The names the definition uses as code (not those its docstrings mention).
        words = {
            tok.string
            for tok in tokenize.generate_tokens(io.StringIO(block).readline)
            if tok.type == tokenize.NAME
        }
        needs = sorted(other for other in self.decls if other != decl.name and other in words)
        out = [
            f'@_defines("{decl.name}")',
            f"def _define_{decl.name}() -> None:",
            f"    global {decl.name}",
        ]
        if needs:
            out.append("    _require(" + ", ".join(f'"{n}"' for n in needs) + ")")
        out += [("    " + line) if line else "" for line in inner]
        return out

    def emit_class(
        self, decl: ClassSpec, *, descriptions: bool = True, stub: bool = False
    ) -> list[str]:
        out = [f"class {decl.name}({decl.base}):"]
        if decl.doc:
            out.append(docstring(decl.doc, "    "))
        # The tag of a variant is always on the wire, even when defaulted (exclude_unset
        # would drop the field): the field is read on input but not dumped, and a computed
        # field of constant value puts the tag on the wire. Construction stays plain, and
        # dumping needs no Python serializer around the model.
        tag_attrs = {attr for attr, _, _ in decl.tags}
        shadow = {f.name for f in decl.fields} & {"list", "dict", "str", "int", "float", "bool"}
        for f in decl.fields:
            annotation = f.annotation
            for b in sorted(shadow):
                annotation = re.sub(rf"(?<![\w.]){b}\b", f"builtins.{b}", annotation)
            args: list[str] = []
            if f.default is not None:
                args.append(f"default={f.default}")
            elif f.default_factory in ("list", "dict"):
                args.append(f"default_factory=empty_{f.default_factory}")
            elif f.default_factory is not None:
                args.append(f"default_factory={f.default_factory}")
            if f.wire != f.name:
                args.append(f"validation_alias={json.dumps(f.wire)}")
                args.append(f"serialization_alias={json.dumps(f.wire)}")
            if f.exclude_none:
                args.append("exclude_if=is_none")
            if f.name in tag_attrs:
                args.append("exclude=True")
            if f.description and descriptions:
                args.append(f"description={json.dumps(f.description)}")
            if args:
                out.append(f"    {f.name}: {annotation} = Field({', '.join(args)})")
            else:
                out.append(f"    {f.name}: {annotation}")
        field_names = {f.name for f in decl.fields}
        for attr, wire, value in decl.tags:
            tag_name = f"{attr}_tag"
            assert tag_name not in field_names, (decl.name, tag_name)
            out.append("")
            out.append(f"    @computed_field(alias={json.dumps(wire)}, repr=False)")
            out.append("    @property")
            out.append(f"    def {tag_name}(self) -> Literal[{json.dumps(value)}]:")
            out.append(f'        """The tag on the wire (`{wire}`): always sent."""')
            out.append("        ..." if stub else f"        return {json.dumps(value)}")
        if len(out) == 1:
            out.append("    pass")
        return out

    # ---- method tables --------------------------------------------------------------------

    def methods(self) -> list[dict[str, Any]]:
        stable = {
            (d["x-method"], n.endswith("Notification"))
            for n, d in self.stable_defs.items()
            if "x-method" in d
        }
        by_method: dict[tuple[str, str], dict[str, Any]] = {}
        for name, schema in self.defs.items():
            method = schema.get("x-method")
            side = schema.get("x-side")
            if method is None or side not in TABLE_SIDES:
                continue
            if name.endswith("Response"):
                key = (method, "request")
                by_method.setdefault(key, {})["result"] = name
                continue
            kind = "notification" if name.endswith("Notification") else "request"
            assert name.endswith(("Request", "Notification")), name
            key = (method, kind)
            entry = by_method.setdefault(key, {})
            entry.update(
                method=method,
                side=side,
                kind=kind,
                params=name,
                handler=HANDLER_OVERRIDES.get(name)
                or snake(re.sub(r"(Request|Notification)$", "", name)),
                capability=CAPABILITIES.get(method),
                unstable=(method, kind == "notification") not in stable,
            )
        rows = [e for e in by_method.values() if "params" in e]
        for e in by_method.values():
            assert "params" in e, f"response without request: {e}"
            if e["kind"] == "request":
                assert "result" in e, f"request without response: {e}"
                assert self.def_kind[e["result"]] in ("class", "merged", "subclass"), e
            assert self.def_kind[e["params"]] in ("class", "merged", "subclass"), e
        known = {e["method"] for e in rows}
        for method in CAPABILITIES:
            if method not in known:
                print(
                    f"note: capability entry {method!r} has no method in this schema",
                    file=sys.stderr,
                )
        for side in TABLE_SIDES:
            handlers = [e["handler"] for e in rows if e["side"] == side]
            assert len(handlers) == len(set(handlers)), (side, handlers)
        return rows

    def emit_methods(self) -> str:
        v = self.target.protocol
        rows = self.methods()
        types = sorted({e["params"] for e in rows} | {e["result"] for e in rows if "result" in e})
        del types  # named, not imported: the models are defined on first use
        lines = [
            *header(v),
            f'"""ACP {v} method tables, from the schema\'s `x-method` / `x-side` annotations.',
            "",
            "Each `MethodSpec` names its params and result models; they are defined when first",
            "used (`MethodSpec.params_type`), so importing the tables defines none.",
            '"""',
            "",
            "from ._base import MethodSpec",
            "",
            f'_MODELS = "accord.schema._generated_{v}"',
            "",
        ]
        for side, table in TABLE_SIDES.items():
            lines.append("")
            lines.append(f"{table}: dict[str, MethodSpec] = {{")
            for e in sorted(
                (e for e in rows if e["side"] == side), key=lambda e: (e["method"], e["kind"])
            ):
                cap = "None" if e["capability"] is None else repr(tuple(e["capability"]))
                lines.append(
                    f"    {json.dumps(e['method'])}: MethodSpec("
                    f"method={json.dumps(e['method'])}, handler={json.dumps(e['handler'])}, "
                    f"side={json.dumps(side)}, kind={json.dumps(e['kind'])}, "
                    f"params_name={json.dumps(e['params'])}, "
                    f"result_name={json.dumps(e['result']) if 'result' in e else 'None'}, "
                    f"capability={cap}, unstable={e['unstable']}, models=_MODELS),"
                )
            lines.append("}")
        lines += [
            "",
            "",
            "__all__ = (" + ", ".join(f'"{t}"' for t in sorted(TABLE_SIDES.values())) + ",)",
            "",
        ]
        return "\n".join(lines)


LAZY_RUNTIME = """\
#: The definer of each name not defined yet; a definer is dropped once it has run.
_DEFINERS: dict[str, Callable[[], None]] = {}
#: Held while defining, so that two threads never define the same name twice.
_DEFINING = RLock()


def _defines(name: str) -> Callable[[Callable[[], None]], None]:
    def register(define: Callable[[], None]) -> None:
        _DEFINERS[name] = define

    return register


def _require(*names: str) -> None:
    \"\"\"Define the named globals that are not defined yet.\"\"\"
    defined = globals()
    with _DEFINING:
        for name in names:
            if name not in defined:
                _DEFINERS.pop(name)()


def __getattr__(name: str) -> Any:
    \"\"\"Define a model or alias on first access.\"\"\"
    defined = globals()
    with _DEFINING:
        if name not in defined:
            define = _DEFINERS.pop(name, None)
            if define is None:
                raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
            define()
    return defined[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
"""


def header(protocol: str) -> list[str]:
    extra = [
        f"# and {SDK_PACKAGE} {s.version} (schema/{s.path}: {', '.join(s.methods)})"
        for s in SUPPLEMENTS
        if s.protocol == protocol
    ]
    return [
        f"# generated by scripts/generate_schema.py from {SDK_PACKAGE} {SDK_VERSION}",
        f"# (schema/{protocol}/schema.unstable.json){'' if extra else '; do not edit'}",
        *extra[:-1],
        *(f"{line}; do not edit" for line in extra[-1:]),
    ]


def docstring(text: str, indent: str) -> str:
    prefix = ""
    if "\\" in text and '"""' not in text and not text.endswith("\\"):
        prefix = "r"  # markdown escapes such as `\[1\]` read better raw
    else:
        text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text += " "
    body = "\n".join((indent + line) if line.strip() else "" for line in text.splitlines())
    if "\n" in text:
        return f'{indent}{prefix}"""{body.lstrip()}\n{indent}"""'
    return f'{indent}{prefix}"""{text}"""'


def ruff_format(text: str, path: Path) -> str:
    """Sort imports and `__all__` the way ruff wants them, then `ruff format` (via stdin, with
    the project's config for `path`)."""
    local = Path(sys.executable).parent / "ruff"
    ruff = str(local) if local.exists() else "ruff"
    name = ["--stdin-filename", str(path)]
    # The generated models are excluded from ruff's lint config; without --force-exclude a
    # file named on the command line is still checked.
    fix = [ruff, "check", "--quiet", "--no-cache", "--fix-only", "--select", "I001,RUF022"]
    for cmd in (
        [*fix, "--exit-zero", *name, "-"],
        [ruff, "format", "--quiet", "--no-cache", *name, "-"],
    ):
        text = subprocess.run(
            cmd, input=text, capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout
    return text


INIT_PATH = ROOT / "src" / "accord" / "schema" / "__init__.py"
INIT_BEGIN = "# --- begin generated re-exports (scripts/generate_schema.py) ---"
INIT_END = "# --- end generated re-exports ---"
INIT_EXTRA = ("AGENT_METHODS", "CLIENT_METHODS", "PROTOCOL_METHODS", "MethodSpec", "WireModel")


def init_block(target: Target, names: list[str]) -> str:
    """The re-export block of `accord.schema.__init__` (explicit `import X as X`, sorted __all__)."""
    module = f"._generated_{target.protocol}"
    lines = [
        INIT_BEGIN,
        "from ._base import MethodSpec as MethodSpec",
        "from ._base import WireModel as WireModel",
    ]
    lines += [f"from .methods import {n} as {n}" for n in INIT_EXTRA if n.endswith("_METHODS")]
    # The models are defined on first access (see `__getattr__` below the block); type
    # checkers read them from here.
    lines += ["", "if TYPE_CHECKING:"]
    lines += [f"    from {module} import {n} as {n}" for n in sorted(names)]
    lines += ["", "__all__: tuple[str, ...] = ("]
    lines += [f'    "{n}",' for n in sorted({*names, *INIT_EXTRA})]
    lines += [")", INIT_END]
    return "\n".join(lines)


def with_init_block(text: str, block: str) -> str:
    start = text.index(INIT_BEGIN)
    end = text.index(INIT_END) + len(INIT_END)
    return text[:start] + block + text[end:]


def generate(target: Target) -> dict[Path, str]:
    """The generated files' formatted contents, by path."""
    try:
        schema = load_schema(target.protocol)
        stable = load_schema(target.protocol, stable=True)
    except SchemaSourceError as error:
        raise SystemExit(str(error)) from None
    gen = Generator(schema, stable, target)
    gen.run()
    files = {
        target.models_path: gen.emit_models(lazy=True),
        target.stub_path: gen.emit_models(),
        target.methods_path: gen.emit_methods(),
    }
    if target.protocol == "v1":  # accord.schema re-exports the v1 models
        init = INIT_PATH.read_text(encoding="utf-8")
        files[INIT_PATH] = with_init_block(init, init_block(target, sorted(gen.decls)))
    return {path: ruff_format(text, path) for path, text in files.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--protocol", default="v1", help="protocol version directory (v1)")
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed files are out of date"
    )
    args = parser.parse_args()
    stale: list[Path] = []
    for path, text in generate(Target(args.protocol)).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if args.check and stale:
        names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
        raise SystemExit(f"out of date: {names}; run scripts/generate_schema.py")


if __name__ == "__main__":
    main()

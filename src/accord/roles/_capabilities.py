"""Capabilities as a contract: derived from what an implementation provides, then enforced.

An ACP side advertises what it supports in ``initialize``; the peer must not call anything
else. accord never hand-writes that list: :func:`implemented_methods` looks at which handlers a
role object overrides, and the ``derive_*`` functions turn that into the advertised capability
objects. :func:`is_advertised` answers, for an outgoing call, whether the peer advertised the
capability that gates it (walking the method table's capability path through the peer's
capabilities as they were sent on the wire).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from ..schema.methods import MethodSpec

__all__ = (
    "BOOLEAN_CAPABILITIES",
    "capability_tree",
    "implemented_methods",
    "is_advertised",
)

#: Capability leaves that are booleans on the wire; every other leaf is an object marker
#: (``{}`` = supported, absent or ``null`` = not).
BOOLEAN_CAPABILITIES: frozenset[tuple[str, ...]] = frozenset(
    {("loadSession",), ("fs", "readTextFile"), ("fs", "writeTextFile"), ("terminal",)}
)


def implemented_methods(impl: object, base: type, handler_names: Mapping[str, str]) -> set[str]:
    """Return the wire methods whose handler ``impl`` overrides relative to ``base``."""
    cls = type(impl)
    found: set[str] = set()
    for method, handler in handler_names.items():
        mine = getattr(cls, handler, None)
        if mine is not None and mine is not getattr(base, handler, None):
            found.add(method)
    return found


def capability_tree(specs: Iterable[MethodSpec]) -> dict[str, Any]:
    """Build the wire capability object that advertises every gated method in ``specs``."""
    tree: dict[str, Any] = {}
    for spec in specs:
        path = spec.capability
        if not path:
            continue
        node: dict[str, Any] = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = True if path in BOOLEAN_CAPABILITIES else {}
    return tree


def is_advertised(capabilities: Mapping[str, Any] | None, path: tuple[str, ...]) -> bool:
    """Whether the capability at ``path`` is present, non-null and not ``false``."""
    node: Any = capabilities
    for key in path:
        if not isinstance(node, Mapping):
            return False
        node = cast(Mapping[str, Any], node).get(key)
    return node is not None and node is not False

"""Capabilities as a contract: derived from what an implementation provides, then enforced.

An ACP side advertises what it supports in ``initialize``; the peer must not call anything
else. accord never hand-writes that list: :func:`implemented_methods` looks at which handlers a
role object overrides, and the ``derive_*`` functions turn that into the advertised capability
objects. :func:`is_advertised` answers, for an outgoing call, whether the peer advertised the
capability that gates it (walking the method table's capability path through the peer's
capabilities as they were sent on the wire).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, cast

from ..schema.methods import MethodSpec

__all__ = (
    "BOOLEAN_CAPABILITIES",
    "CAPABILITY_VALUES",
    "GATED_BY_FIELD",
    "capability_tree",
    "implemented_methods",
    "is_advertised",
    "negotiate_position_encoding",
    "required_capability",
)

POSITION_ENCODINGS: Final = ("utf-16", "utf-32", "utf-8")
"""The position encodings of ACP (NES positions): ``utf-16`` is the default every side speaks."""

#: Capability leaves that are booleans on the wire; every other leaf is an object marker
#: (``{}`` = supported, absent or ``null`` = not).
BOOLEAN_CAPABILITIES: frozenset[tuple[str, ...]] = frozenset(
    {("loadSession",), ("fs", "readTextFile"), ("fs", "writeTextFile"), ("terminal",)}
)


#: Capability leaves whose marker object must name what is supported: ``elicitation: {}``
#: advertises no mode at all, so a client that handles ``elicitation/create`` advertises
#: both modes (its handler sees every request and may decline one it cannot serve; override
#: ``Client.client_capabilities`` to advertise fewer). ``document/didChange`` says how the agent
#: wants changes: ``incremental`` (:attr:`accord.roles.Agent.document_sync` chooses). A marker
#: is merged into what is already at its place, so ``nes: {}`` (from ``nes/start``) and
#: ``nes.events.document.didOpen`` (from ``document/didOpen``) make one tree in any order.
CAPABILITY_VALUES: dict[tuple[str, ...], dict[str, Any]] = {
    ("elicitation",): {"form": {}, "url": {}},
    ("nes", "events", "document", "didChange"): {"syncKind": "incremental"},
}

#: Methods gated per request: the request attribute whose value ends the capability path
#: (``elicitation/create`` with ``mode: "url"`` needs ``elicitation.url``).
GATED_BY_FIELD: dict[str, str] = {"elicitation/create": "mode"}


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
        if path in BOOLEAN_CAPABILITIES:
            node[path[-1]] = True
        else:
            marker = node.setdefault(path[-1], {})
            for key, value in CAPABILITY_VALUES.get(path, {}).items():
                marker.setdefault(key, copy.deepcopy(value))
    return tree


def required_capability(spec: MethodSpec, request: object) -> tuple[str, ...] | None:
    """The capability path the peer must advertise before ``request`` may be sent."""
    path = spec.capability
    field = GATED_BY_FIELD.get(spec.method)
    if path is None or field is None:
        return path
    return (*path, str(getattr(request, field)))


def is_advertised(capabilities: Mapping[str, Any] | None, path: tuple[str, ...]) -> bool:
    """Whether the capability at ``path`` is present, non-null and not ``false``."""
    node: Any = capabilities
    for key in path:
        if not isinstance(node, Mapping):
            return False
        node = cast(Mapping[str, Any], node).get(key)
    return node is not None and node is not False


def negotiate_position_encoding(offered: Sequence[str] | None, supported: Sequence[str]) -> str:
    """The position encoding an agent that speaks ``supported`` picks from a client's list.

    The client lists what it speaks in order of preference (``positionEncodings``); the first
    one the agent also speaks wins. With no list, or nothing in common, it is ``utf-16``, which
    every side must speak.
    """
    for encoding in offered or ():
        if encoding in supported:
            return encoding
    return "utf-16"

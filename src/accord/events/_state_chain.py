"""Stored engine state that grows by appending: the compact ``state_appended`` form.

An engine yields ``StateSnapshot(state=whole_history)`` at the end of every turn. Stored as is,
a conversation of *n* turns would keep *n* copies of its history, growing with the square
of its length. So when the runtime stores a snapshot that only appends to the state it stored
last, it stores just the new part, under the stored kind ``state_appended``::

    {"kind": "state_appended", "path": ["engine"], "base": 40, "items": [...]}

``path`` leads (through JSON objects, by key) from the state's root to a list; every other
part of the state is unchanged, the list had ``base`` items and now has those followed by
``items``. The runtime finds the form with :func:`appended_part` (lists that start with all
items of the previous one, at the root or under one key of objects whose other keys are
unchanged, as the coder's ``{"systemPrompt": ..., "engine": [history]}``); anything else
(the first snapshot, a history that was rewritten, a changed key) is stored in full as
before. Restoring folds the chain: :func:`apply_appended` rebuilds the state from the one
before, and refuses (:class:`StateChainError`) when it does not fit, rather than restore a
wrong history. Engines never see the form; clients never see it either (state events have
no ``session/update``; the ``_accord/event`` header names it ``state_snapshot``).

Below: nothing but pydantic's ``JsonValue``. Above: :mod:`._envelope` (stamping, decoding) and
the agent runtime's restore.
"""

from __future__ import annotations

from typing import Any, Final, cast

from pydantic import JsonValue

__all__ = ("STATE_APPENDED", "StateChainError", "appended_part", "apply_appended")

STATE_APPENDED: Final = "state_appended"
"""The stored kind of a snapshot kept as the items it appends."""


class StateChainError(ValueError):
    """A stored ``state_appended`` event does not fit the state before it."""


def appended_part(previous: JsonValue, state: JsonValue) -> dict[str, Any] | None:
    """The compact form of ``state`` after ``previous`` (without ``kind``), or ``None`` when
    ``state`` is not ``previous`` with items appended to one list (store it whole)."""
    path: list[str] = []
    while isinstance(previous, dict) and isinstance(state, dict):
        if list(previous) != list(state):
            return None
        changed = [key for key in state if state[key] != previous[key]]
        if len(changed) > 1:
            return None
        key = changed[0] if changed else next(reversed(state), None)
        if key is None:
            return None
        path.append(key)
        previous, state = previous[key], state[key]
    if not isinstance(previous, list) or not isinstance(state, list):
        return None
    base = len(previous)
    if len(state) < base or state[:base] != previous:
        return None
    return {"path": path, "base": base, "items": state[base:]}


def apply_appended(previous: JsonValue, part: object) -> JsonValue:
    """The state a stored ``state_appended`` ``part`` (its JSON object) makes of ``previous``.

    Raises:
        StateChainError: ``part`` is malformed, or ``previous`` has no list at its ``path``
            with ``base`` items (the chain is not the one the event was stored after).
    """
    if not isinstance(part, dict):
        raise StateChainError("a state_appended event must be a JSON object")
    fields = cast(dict[str, Any], part)
    path, base, items = fields.get("path"), fields.get("base"), fields.get("items")
    if (
        not isinstance(path, list)
        or not all(isinstance(key, str) for key in cast(list[Any], path))
        or not isinstance(base, int)
        or isinstance(base, bool)
        or not isinstance(items, list)
    ):
        raise StateChainError(
            "a state_appended event needs path (a list of keys), base (an integer) and "
            "items (a list)"
        )
    keys = cast(list[str], path)
    root: JsonValue = _copy_along(previous, keys)
    node: Any = root
    for key in keys:
        node = node[key]
    if not isinstance(node, list) or len(cast(list[Any], node)) != base:
        found = len(cast(list[Any], node)) if isinstance(node, list) else type(node).__name__
        raise StateChainError(
            f"a state_appended event extends a list of {base} items at {keys!r}, but the "
            f"stored state before it has {found} there: the stored chain is inconsistent"
        )
    cast(list[JsonValue], node).extend(cast(list[JsonValue], items))
    return root


def _copy_along(state: JsonValue, keys: list[str]) -> JsonValue:
    """A copy of ``state`` new along ``keys`` (and in the list at their end), sharing the rest."""
    if not keys:
        return list(cast(list[JsonValue], state)) if isinstance(state, list) else state
    if not isinstance(state, dict) or keys[0] not in state:
        raise StateChainError(
            f"a state_appended event extends the state under {keys!r}, which the stored "
            "state before it does not have: the stored chain is inconsistent"
        )
    copy = dict(state)
    copy[keys[0]] = _copy_along(state[keys[0]], keys[1:])
    return copy

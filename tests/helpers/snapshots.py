"""Fold an engine's ``StateSnapshot`` outputs into the state the runtime would store.

An engine yields its state whole or, once the runtime holds it, as the items a turn appended
(``StateSnapshot.appended``); tests that drive an engine session directly fold them here.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import JsonValue

from accord.engines import StateSnapshot
from accord.events import apply_appended


def fold_snapshots(snapshots: Iterable[StateSnapshot], state: JsonValue = None) -> JsonValue:
    """The state after ``snapshots`` in order, starting from ``state``."""
    for snapshot in snapshots:
        if snapshot.items is None:
            state = snapshot.state
        else:
            part = {
                "path": list(snapshot.path),
                "base": snapshot.base,
                "items": list(snapshot.items),
            }
            state = apply_appended(state, part)
    return state

"""The ``_accord/event`` extension: every stamped event's header, for clients that opt in.

A client opts in with ``{"accord": {"events": true}}`` in ``_meta`` of its ``initialize``
request (params or ``clientCapabilities``); the agent runtime advertises the extension in
``agentCapabilities._meta`` (``{"accord": {"events": {"method": "_accord/event",
"layers": [...]}}}``). An opted-in client gets, for every event of its sessions, in ``seq``
order and only once the event is durable::

    {"jsonrpc": "2.0", "method": "_accord/event",
     "params": {"sessionId": "...", "seq": 12, "epoch": 0, "turnId": "...", "agentId": "root",
                "layer": "render", "kind": "text_chunk"}}

For an event that has a ``session/update`` the notification comes immediately before it. The
observe layer (model calls, compaction, sub-agents, errors) reaches clients only here; events
of sub-agents are not sent as ``session/update`` (standard clients see the delegating tool
call instead), so for them the notification carries the update as ``params.update``.

This module sits on envelopes; the agent runtime's delivery pipeline sends the notifications.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._envelope import Envelope

__all__ = (
    "EXTENSION_META_KEY",
    "EXT_EVENT_METHOD",
    "ext_event_params",
    "extension_capability",
    "wants_extended_events",
)

EXT_EVENT_METHOD: Final = "_accord/event"
"""Method name of the extension notification that carries an envelope header."""

EXTENSION_META_KEY: Final = "accord"
"""Key in ``initialize`` ``_meta`` under which a client opts in: ``{"events": true}``."""


def wants_extended_events(meta: Mapping[str, Any] | None) -> bool:
    """Return whether an ``initialize`` ``_meta`` object opts in to extended events."""
    if not meta:
        return False
    entry = meta.get(EXTENSION_META_KEY)
    return isinstance(entry, Mapping) and entry.get("events") is True  # pyright: ignore[reportUnknownMemberType]


def extension_capability() -> dict[str, Any]:
    """What an agent puts into ``agentCapabilities._meta`` to advertise the extension."""
    return {
        EXTENSION_META_KEY: {
            "events": {"method": EXT_EVENT_METHOD, "layers": ["render", "state", "observe"]}
        }
    }


def ext_event_params(envelope: Envelope, update: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return the ``_accord/event`` params for ``envelope`` (``update``, wire form, if given)."""
    params: dict[str, Any] = {
        "sessionId": envelope.session_id,
        "seq": envelope.seq,
        "epoch": envelope.epoch,
        "turnId": envelope.turn_id,
        "agentId": envelope.agent_id,
        "layer": envelope.layer,
        # The compact stored form of a snapshot is the store's business.
        "kind": envelope.event.kind,
    }
    if update is not None:
        params["update"] = update
    return params

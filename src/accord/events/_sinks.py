"""Sinks: how published envelopes reach one client.

A sink has two entry points, matching the two delivery classes of the layers:

* ``await sink.deliver(envelope)`` for render and state envelopes, called in ``seq`` order and
  awaited, so a client receives a turn's text before its completion and before the next turn's
  text (backpressure from the client's connection slows the turn, by design);
* ``sink.offer(envelope)`` for observe envelopes; it never blocks (the observe layer must never
  slow a turn), so a sink that forwards them queues them in a lossy channel.

:class:`StandardSink` sends plain ``session/update`` notifications: every client gets one.
:class:`ExtendedSink` is for clients that opt in (:func:`wants_extended_events`); it also sends
every envelope's header as the extension notification ``_accord/event``::

    {"jsonrpc": "2.0", "method": "_accord/event",
     "params": {"sessionId": "...", "seq": 12, "epoch": 0, "turnId": "...", "agentId": "root",
                "layer": "render", "kind": "text_chunk"}}

For a render or state envelope the ``_accord/event`` notification comes immediately before the
``session/update`` of the same envelope (when it has one). Observe envelopes are sent from a
lossy channel drained by :meth:`ExtendedSink.run`, so they may arrive out of step with the
ordered stream (``seq`` tells their place) and may be skipped (counted in ``statistics()``).
Events of sub-agents are not sent as ``session/update`` (standard clients see the delegating tool
call instead); for them the extended notification carries the update as ``params.update``.

Opting in: the client puts ``{"accord": {"events": true}}`` into ``_meta`` of its
``initialize`` request (params or ``clientCapabilities``).

This module sits on envelopes, the mapping and the channels; the agent runtime builds one sink
per client connection with senders bound to that connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, TypeAlias

from ..schema import SessionNotification, SessionUpdate
from ._channels import DEFAULT_OBSERVER_BUFFER, ObserverChannel, ObserverStatistics
from ._envelope import Envelope
from ._events import ROOT_AGENT_ID
from ._mapping import SessionUpdateMapper

__all__ = (
    "EXTENSION_META_KEY",
    "EXT_EVENT_METHOD",
    "ExtendedSink",
    "SendExtNotification",
    "SendUpdate",
    "Sink",
    "StandardSink",
    "ext_event_params",
    "wants_extended_events",
)

EXT_EVENT_METHOD: Final = "_accord/event"
"""Method name of the extension notification that carries an envelope header."""

EXTENSION_META_KEY: Final = "accord"
"""Key in ``initialize`` ``_meta`` under which a client opts in: ``{"events": true}``."""

SendUpdate: TypeAlias = Callable[[SessionNotification], Awaitable[None]]
"""Sends one ``session/update`` notification to the client (given by the runtime)."""

SendExtNotification: TypeAlias = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Sends one extension notification ``(method, params)`` to the client."""


def wants_extended_events(meta: Mapping[str, Any] | None) -> bool:
    """Return whether an ``initialize`` ``_meta`` object opts in to extended events."""
    if not meta:
        return False
    entry = meta.get(EXTENSION_META_KEY)
    return isinstance(entry, Mapping) and entry.get("events") is True  # pyright: ignore[reportUnknownMemberType]


def ext_event_params(envelope: Envelope, update: SessionUpdate | None = None) -> dict[str, Any]:
    """Return the ``_accord/event`` params for ``envelope`` (``update`` added when given)."""
    params: dict[str, Any] = {
        "sessionId": envelope.session_id,
        "seq": envelope.session_seq,
        "epoch": envelope.session_epoch,
        "turnId": envelope.turn_id,
        "agentId": envelope.agent_id,
        "layer": envelope.layer,
        "kind": envelope.event.kind,
    }
    if update is not None:
        params["update"] = update.to_wire()
    return params


class Sink(Protocol):
    """Where the event bus delivers envelopes for one consumer."""

    async def deliver(self, envelope: Envelope) -> None:
        """Take a render or state envelope; called in ``seq`` order, awaited (backpressure)."""
        ...

    def offer(self, envelope: Envelope) -> None:
        """Take an observe envelope; must not block (drop it rather than wait)."""
        ...


class StandardSink:
    """Sends ``session/update`` for every root-agent envelope that maps to one.

    Args:
        send_update: Sends a ``session/update`` notification to the client.
        mapper: The event mapping (default: :class:`SessionUpdateMapper`).
        root_agent_id: The agent whose events are shown; others are sub-agents.
    """

    def __init__(
        self,
        send_update: SendUpdate,
        *,
        mapper: SessionUpdateMapper | None = None,
        root_agent_id: str = ROOT_AGENT_ID,
    ) -> None:
        """Create a sink; see the class docstring for the arguments."""
        self._send_update = send_update
        self.mapper = mapper if mapper is not None else SessionUpdateMapper()
        self.root_agent_id = root_agent_id

    def update_for(self, envelope: Envelope) -> SessionUpdate | None:
        """Return the ``session/update`` a standard client gets for ``envelope``, if any."""
        if envelope.agent_id != self.root_agent_id:
            return None
        return self.mapper.map(envelope.event)

    async def deliver(self, envelope: Envelope) -> None:
        """Send the envelope's ``session/update``, if it has one."""
        update = self.update_for(envelope)
        if update is not None:
            await self._send_update(
                SessionNotification(session_id=envelope.session_id, update=update)
            )

    def offer(self, envelope: Envelope) -> None:
        """Ignore observe envelopes: standard clients do not get telemetry."""


class ExtendedSink(StandardSink):
    """A :class:`StandardSink` that also sends every envelope as ``_accord/event``.

    Run :meth:`run` in a task group for as long as the sink is attached: it forwards the
    observe layer. :meth:`close` ends it.

    Args:
        send_update: Sends a ``session/update`` notification to the client.
        send_ext: Sends an extension notification ``(method, params)`` to the client.
        mapper: The event mapping (default: :class:`SessionUpdateMapper`).
        root_agent_id: The agent whose events become ``session/update``.
        max_buffer: How many observe envelopes may wait before new ones are skipped.
    """

    def __init__(
        self,
        send_update: SendUpdate,
        send_ext: SendExtNotification,
        *,
        mapper: SessionUpdateMapper | None = None,
        root_agent_id: str = ROOT_AGENT_ID,
        max_buffer: int = DEFAULT_OBSERVER_BUFFER,
    ) -> None:
        """Create a sink; see the class docstring for the arguments."""
        super().__init__(send_update, mapper=mapper, root_agent_id=root_agent_id)
        self._send_ext = send_ext
        self._observed = ObserverChannel(max_buffer)

    async def deliver(self, envelope: Envelope) -> None:
        """Send ``_accord/event`` and then the ``session/update``, if any."""
        update = self.update_for(envelope)
        nested = None
        if update is None and envelope.agent_id != self.root_agent_id:
            nested = self.mapper.map(envelope.event)
        await self._send_ext(EXT_EVENT_METHOD, ext_event_params(envelope, nested))
        if update is not None:
            await self._send_update(
                SessionNotification(session_id=envelope.session_id, update=update)
            )

    def offer(self, envelope: Envelope) -> None:
        """Queue an observe envelope for :meth:`run`; skipped (and counted) when full."""
        self._observed.offer(envelope)

    async def run(self) -> None:
        """Forward queued observe envelopes as ``_accord/event`` until :meth:`close`."""
        async for envelope in self._observed:
            await self._send_ext(EXT_EVENT_METHOD, ext_event_params(envelope))

    def close(self) -> None:
        """Stop taking observe envelopes; :meth:`run` returns once the queue is drained."""
        self._observed.close()

    def statistics(self) -> ObserverStatistics:
        """Return the counts of the observe queue (offered, skipped, buffered)."""
        return self._observed.statistics()

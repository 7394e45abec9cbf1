"""The canonical event chain: what happens in a session, in one typed stream.

An engine (or the runtime) produces *events*: frozen dataclasses with a ``kind`` literal, in
one closed union :data:`Event`. The runtime publishes each through a per-session
:class:`EventBus`, which stamps it into an :class:`Envelope` (session, ``session_seq``,
``session_epoch``, turn, agent) and fans it out:

* render and state envelopes go, in order and awaited, to each client's :class:`Sink`
  (:class:`StandardSink` for plain ``session/update``; :class:`ExtendedSink` for clients that
  opted in, which also get ``_accord/event`` notifications);
* every envelope is offered to lossy :class:`ObserverChannel` s that never block a turn.

Around that: :class:`SessionUpdateMapper` / :func:`to_session_update` (the exhaustive mapping to
ACP), :func:`compact_for_replay` (a short chain for ``session/load``), :class:`ToolCallTracker`
(the tool-call lifecycle table), :func:`to_activity` (a privacy-safe record for dashboards),
and the store's JSON codec (:func:`envelope_to_json`, :func:`event_to_json`).

Below: :mod:`accord.schema` (payload types) and :mod:`accord.errors`. Above: the session store
(persists envelopes) and the agent runtime (drives engines and owns the buses).
"""

from ._activity import ACTIVITY_SCHEMA_VERSION as ACTIVITY_SCHEMA_VERSION
from ._activity import LABEL_LIMIT_BYTES as LABEL_LIMIT_BYTES
from ._activity import ActivityRecord as ActivityRecord
from ._activity import activity_to_json as activity_to_json
from ._activity import correlation_id as correlation_id
from ._activity import to_activity as to_activity
from ._bus import BusStatistics as BusStatistics
from ._bus import EventBus as EventBus
from ._channels import DEFAULT_OBSERVER_BUFFER as DEFAULT_OBSERVER_BUFFER
from ._channels import ObserverChannel as ObserverChannel
from ._channels import ObserverStatistics as ObserverStatistics
from ._envelope import ENVELOPE_FORMAT as ENVELOPE_FORMAT
from ._envelope import Envelope as Envelope
from ._envelope import SubAgentEvent as SubAgentEvent
from ._envelope import envelope_from_json as envelope_from_json
from ._envelope import envelope_to_json as envelope_to_json
from ._envelope import event_from_json as event_from_json
from ._envelope import event_to_json as event_to_json
from ._events import ROOT_AGENT_ID as ROOT_AGENT_ID
from ._events import BudgetResource as BudgetResource
from ._events import BudgetWarning as BudgetWarning
from ._events import CommandsChanged as CommandsChanged
from ._events import ConfigChanged as ConfigChanged
from ._events import Event as Event
from ._events import EventKind as EventKind
from ._events import Layer as Layer
from ._events import MessagesCompacted as MessagesCompacted
from ._events import ModeChanged as ModeChanged
from ._events import ModelCallEnded as ModelCallEnded
from ._events import ModelCallStarted as ModelCallStarted
from ._events import PermissionPending as PermissionPending
from ._events import PlanUpdated as PlanUpdated
from ._events import StateSnapshot as StateSnapshot
from ._events import SubAgentStarted as SubAgentStarted
from ._events import SubAgentStopped as SubAgentStopped
from ._events import TextChunk as TextChunk
from ._events import ThinkingChunk as ThinkingChunk
from ._events import TitleChanged as TitleChanged
from ._events import ToolCallEnded as ToolCallEnded
from ._events import ToolCallProgress as ToolCallProgress
from ._events import ToolCallStarted as ToolCallStarted
from ._events import TurnCompleted as TurnCompleted
from ._events import TurnError as TurnError
from ._events import UsageReported as UsageReported
from ._events import UserMessageChunk as UserMessageChunk
from ._events import new_id as new_id
from ._mapping import SessionUpdateMapper as SessionUpdateMapper
from ._mapping import to_session_update as to_session_update
from ._replay import compact_for_replay as compact_for_replay
from ._sinks import EXT_EVENT_METHOD as EXT_EVENT_METHOD
from ._sinks import EXTENSION_META_KEY as EXTENSION_META_KEY
from ._sinks import ExtendedSink as ExtendedSink
from ._sinks import SendExtNotification as SendExtNotification
from ._sinks import SendUpdate as SendUpdate
from ._sinks import Sink as Sink
from ._sinks import StandardSink as StandardSink
from ._sinks import ext_event_params as ext_event_params
from ._sinks import wants_extended_events as wants_extended_events
from ._tool_state import TRANSITIONS as TRANSITIONS
from ._tool_state import ToolCallEvent as ToolCallEvent
from ._tool_state import ToolCallState as ToolCallState
from ._tool_state import ToolCallTracker as ToolCallTracker
from ._tool_state import ToolCallTrigger as ToolCallTrigger
from ._tool_state import tool_call_trigger as tool_call_trigger
from ._tool_state import transition_diagram as transition_diagram

__all__ = (
    "ACTIVITY_SCHEMA_VERSION",
    "DEFAULT_OBSERVER_BUFFER",
    "ENVELOPE_FORMAT",
    "EXTENSION_META_KEY",
    "EXT_EVENT_METHOD",
    "LABEL_LIMIT_BYTES",
    "ROOT_AGENT_ID",
    "TRANSITIONS",
    "ActivityRecord",
    "BudgetResource",
    "BudgetWarning",
    "BusStatistics",
    "CommandsChanged",
    "ConfigChanged",
    "Envelope",
    "Event",
    "EventBus",
    "EventKind",
    "ExtendedSink",
    "Layer",
    "MessagesCompacted",
    "ModeChanged",
    "ModelCallEnded",
    "ModelCallStarted",
    "ObserverChannel",
    "ObserverStatistics",
    "PermissionPending",
    "PlanUpdated",
    "SendExtNotification",
    "SendUpdate",
    "SessionUpdateMapper",
    "Sink",
    "StandardSink",
    "StateSnapshot",
    "SubAgentEvent",
    "SubAgentStarted",
    "SubAgentStopped",
    "TextChunk",
    "ThinkingChunk",
    "TitleChanged",
    "ToolCallEnded",
    "ToolCallEvent",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolCallState",
    "ToolCallTracker",
    "ToolCallTrigger",
    "TurnCompleted",
    "TurnError",
    "UsageReported",
    "UserMessageChunk",
    "activity_to_json",
    "compact_for_replay",
    "correlation_id",
    "envelope_from_json",
    "envelope_to_json",
    "event_from_json",
    "event_to_json",
    "ext_event_params",
    "new_id",
    "to_activity",
    "to_session_update",
    "tool_call_trigger",
    "transition_diagram",
    "wants_extended_events",
)

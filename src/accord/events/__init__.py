"""The canonical event chain: what happens in a session, in one typed stream.

An engine (or the runtime) produces *events*: frozen dataclasses with a ``kind`` literal, in
one closed union :data:`~accord.engines.Event` (their one home is :mod:`accord.engines`, the
contract engines are written against). The agent runtime's delivery pipeline stamps each into an
:class:`Envelope` (:func:`stamp`: session, ``seq``, ``epoch``, turn, agent, and the JSON
payload, serialized once), which *is* the store's record of it
(:class:`~accord.store.StoredEvent`), stores it and then fans it out to the clients.

Around that: :class:`SessionUpdateMapper` / :func:`to_session_update` (the one exhaustive
mapping to ACP; :meth:`SessionUpdateMapper.update_wire` is what the runtime sends),
:func:`compact_for_replay` (a short chain for ``session/load``), :func:`to_activity` (a
privacy-safe record for dashboards), the ``_accord/event`` extension
(:func:`ext_event_params`) and the payload codec (:func:`event_to_json`,
:func:`event_from_json`, :func:`envelope_from_stored`; a snapshot that appends to the one
before is stored as ``state_appended``, found by :func:`appended_part` and folded by
:func:`apply_appended`). The tool-call lifecycle table is the engines'
(:class:`~accord.engines.ToolCallTracker`).

Below: :mod:`accord.schema`, :mod:`accord.errors` and the store's record type. Above: the
agent runtime (drives engines, owns the pipelines) and the engines.
"""

from ._activity import ACTIVITY_SCHEMA_VERSION as ACTIVITY_SCHEMA_VERSION
from ._activity import LABEL_LIMIT_BYTES as LABEL_LIMIT_BYTES
from ._activity import ActivityRecord as ActivityRecord
from ._activity import activity_to_json as activity_to_json
from ._activity import correlation_id as correlation_id
from ._activity import to_activity as to_activity
from ._envelope import Envelope as Envelope
from ._envelope import envelope_from_stored as envelope_from_stored
from ._envelope import event_from_json as event_from_json
from ._envelope import event_to_json as event_to_json
from ._envelope import restamp as restamp
from ._envelope import stamp as stamp
from ._extension import EXT_EVENT_METHOD as EXT_EVENT_METHOD
from ._extension import EXTENSION_META_KEY as EXTENSION_META_KEY
from ._extension import ext_event_params as ext_event_params
from ._extension import extension_capability as extension_capability
from ._extension import wants_extended_events as wants_extended_events
from ._mapping import CANCELLED_META as CANCELLED_META
from ._mapping import CHUNK_UPDATE_TAGS as CHUNK_UPDATE_TAGS
from ._mapping import COMPACTED_MARKER as COMPACTED_MARKER
from ._mapping import COMPACTION_FAILED_MARKER as COMPACTION_FAILED_MARKER
from ._mapping import SessionUpdateMapper as SessionUpdateMapper
from ._mapping import chunk_update as chunk_update
from ._mapping import compaction_marker as compaction_marker
from ._mapping import to_session_update as to_session_update
from ._replay import compact_for_replay as compact_for_replay
from ._state_chain import STATE_APPENDED as STATE_APPENDED
from ._state_chain import StateChainError as StateChainError
from ._state_chain import appended_part as appended_part
from ._state_chain import apply_appended as apply_appended

__all__ = (
    "ACTIVITY_SCHEMA_VERSION",
    "CANCELLED_META",
    "CHUNK_UPDATE_TAGS",
    "COMPACTED_MARKER",
    "COMPACTION_FAILED_MARKER",
    "EXTENSION_META_KEY",
    "EXT_EVENT_METHOD",
    "LABEL_LIMIT_BYTES",
    "STATE_APPENDED",
    "ActivityRecord",
    "Envelope",
    "SessionUpdateMapper",
    "StateChainError",
    "activity_to_json",
    "appended_part",
    "apply_appended",
    "chunk_update",
    "compact_for_replay",
    "compaction_marker",
    "correlation_id",
    "envelope_from_stored",
    "event_from_json",
    "event_to_json",
    "ext_event_params",
    "extension_capability",
    "restamp",
    "stamp",
    "to_activity",
    "to_session_update",
    "wants_extended_events",
)

"""The engine contract, and the adapters that turn agent frameworks into engines.

An *engine* produces the work of a session: a model loop, a framework adapter, a scripted test
double. The agent runtime (:mod:`accord.agent`, above) serves an engine over ACP; this package
is everything the two agree on, and nothing of the runtime's machinery:

* the protocol: :class:`Engine`, :class:`EngineSession`, :class:`EngineCapabilities`,
  :class:`SessionContext`, :class:`TurnContext` (permissions: :class:`PermissionAnswer`;
  questions: :class:`ElicitationAnswer`; the client's files and terminals:
  :class:`TextFileReader`, :class:`TextFileWriter`, :class:`TerminalService`; the client's own
  MCP servers: :class:`McpOverAcp`);
* next edit suggestions (``EngineCapabilities.nes``): :class:`EditSuggester`, asked with an
  :class:`EditRequest` and answering :class:`SuggestedEdit` values (their edits
  :class:`accord.documents.TextEdit`), told the client's verdict with :class:`EditFeedback`;
* the model providers an engine routes through (unstable ``providers/*``):
  :class:`ProviderSettings`;
* the events a turn yields (:data:`Event`: :class:`TextChunk`, :class:`ToolCallStarted`,
  :class:`PlanChanged`, :class:`TurnCompleted`, ...; :class:`SubAgentEvent`);
* prompt content with bytes inside (:class:`TextPart`, :class:`ImagePart`, ...,
  :func:`part_from_block`, :func:`part_to_block`);
* tool calls: the one model of a call (:class:`ToolCallState`, a frozen snapshot), the one
  status table (:data:`TOOL_CALL_TRANSITIONS`) and its tracker (:class:`ToolCallTracker`),
  and ACP's one merge rule (:func:`merge_tool_call`; :func:`tool_call_changes` reads a wire
  update), used by the runtime, the replay and the client alike;
* :class:`StateTable`, the small state-machine helper every lifecycle table in accord is
  (tool calls, the runtime's sessions and turns, the client's sessions and turns).

Adapters are subpackages, imported by name so that importing this package never imports a
framework:

:mod:`accord.engines.pydantic_ai`
    Any ``pydantic_ai.Agent`` as an engine: streamed text and thinking, tool calls with their
    kind, locations and diffs, tool approval through ``session/request_permission``, usage,
    model switching, cancellation, and the model's message history persisted through the
    session store (needs the ``coder`` extra).

``accord.agent`` and ``accord.events`` re-export the contract's names they always offered (the
same objects). Below: :mod:`accord.schema`, :mod:`accord.errors`, :mod:`accord.roles` (the
trace context). Above: :mod:`accord.events`, :mod:`accord.agent`, the coder and the CLI.
"""

from ._content import BASELINE_BLOCK_TYPES as BASELINE_BLOCK_TYPES
from ._content import AudioPart as AudioPart
from ._content import BlobResourcePart as BlobResourcePart
from ._content import BlockType as BlockType
from ._content import ContentPart as ContentPart
from ._content import ImagePart as ImagePart
from ._content import ResourceLinkPart as ResourceLinkPart
from ._content import TextPart as TextPart
from ._content import TextResourcePart as TextResourcePart
from ._content import accepted_block_types as accepted_block_types
from ._content import check_prompt as check_prompt
from ._content import part_from_block as part_from_block
from ._content import part_to_block as part_to_block
from ._content import prompt_capabilities as prompt_capabilities
from ._content import prompt_parts as prompt_parts
from ._elicitation import Elicitation as Elicitation
from ._elicitation import ElicitationAction as ElicitationAction
from ._elicitation import ElicitationAnswer as ElicitationAnswer
from ._elicitation import ElicitationMode as ElicitationMode
from ._events import ROOT_AGENT_ID as ROOT_AGENT_ID
from ._events import BudgetResource as BudgetResource
from ._events import BudgetWarning as BudgetWarning
from ._events import CommandsChanged as CommandsChanged
from ._events import CompactionChanged as CompactionChanged
from ._events import CompactionPhase as CompactionPhase
from ._events import CompactionSummaryAdded as CompactionSummaryAdded
from ._events import ConfigChanged as ConfigChanged
from ._events import Event as Event
from ._events import EventKind as EventKind
from ._events import Layer as Layer
from ._events import MessagesCompacted as MessagesCompacted
from ._events import ModeChanged as ModeChanged
from ._events import ModelCallEnded as ModelCallEnded
from ._events import ModelCallStarted as ModelCallStarted
from ._events import PermissionPending as PermissionPending
from ._events import PlanChanged as PlanChanged
from ._events import StateSnapshot as StateSnapshot
from ._events import SubAgentEvent as SubAgentEvent
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
from ._nes import EditFeedback as EditFeedback
from ._nes import EditRequest as EditRequest
from ._nes import EditSuggester as EditSuggester
from ._nes import RecentEdit as RecentEdit
from ._nes import SuggestedEdit as SuggestedEdit
from ._protocol import MODEL_PURPOSE_HEADER as MODEL_PURPOSE_HEADER
from ._protocol import ConfigValue as ConfigValue
from ._protocol import Engine as Engine
from ._protocol import EngineCapabilities as EngineCapabilities
from ._protocol import EngineSession as EngineSession
from ._protocol import McpNotificationHandler as McpNotificationHandler
from ._protocol import McpOverAcp as McpOverAcp
from ._protocol import PermissionAnswer as PermissionAnswer
from ._protocol import PermissionOutcome as PermissionOutcome
from ._protocol import PermissionRequester as PermissionRequester
from ._protocol import SessionContext as SessionContext
from ._protocol import TerminalHandle as TerminalHandle
from ._protocol import TerminalService as TerminalService
from ._protocol import TextFileReader as TextFileReader
from ._protocol import TextFileWriter as TextFileWriter
from ._protocol import TurnContext as TurnContext
from ._protocol import TurnOutput as TurnOutput
from ._providers import ProviderSettings as ProviderSettings
from ._state_table import StateTable as StateTable
from ._tool_calls import TRANSITIONS as TOOL_CALL_TRANSITIONS
from ._tool_calls import ToolCallEvent as ToolCallEvent
from ._tool_calls import ToolCallPhase as ToolCallPhase
from ._tool_calls import ToolCallState as ToolCallState
from ._tool_calls import ToolCallTracker as ToolCallTracker
from ._tool_calls import ToolCallTrigger as ToolCallTrigger
from ._tool_calls import merge_tool_call as merge_tool_call
from ._tool_calls import tool_call_changes as tool_call_changes
from ._tool_calls import tool_call_trigger as tool_call_trigger
from ._tool_calls import transition_diagram as tool_call_transition_diagram

__all__ = (
    "BASELINE_BLOCK_TYPES",
    "MODEL_PURPOSE_HEADER",
    "ROOT_AGENT_ID",
    "TOOL_CALL_TRANSITIONS",
    "AudioPart",
    "BlobResourcePart",
    "BlockType",
    "BudgetResource",
    "BudgetWarning",
    "CommandsChanged",
    "CompactionChanged",
    "CompactionPhase",
    "CompactionSummaryAdded",
    "ConfigChanged",
    "ConfigValue",
    "ContentPart",
    "EditFeedback",
    "EditRequest",
    "EditSuggester",
    "Elicitation",
    "ElicitationAction",
    "ElicitationAnswer",
    "ElicitationMode",
    "Engine",
    "EngineCapabilities",
    "EngineSession",
    "Event",
    "EventKind",
    "ImagePart",
    "Layer",
    "McpNotificationHandler",
    "McpOverAcp",
    "MessagesCompacted",
    "ModeChanged",
    "ModelCallEnded",
    "ModelCallStarted",
    "PermissionAnswer",
    "PermissionOutcome",
    "PermissionPending",
    "PermissionRequester",
    "PlanChanged",
    "ProviderSettings",
    "RecentEdit",
    "ResourceLinkPart",
    "SessionContext",
    "StateSnapshot",
    "StateTable",
    "SubAgentEvent",
    "SubAgentStarted",
    "SubAgentStopped",
    "SuggestedEdit",
    "TerminalHandle",
    "TerminalService",
    "TextChunk",
    "TextFileReader",
    "TextFileWriter",
    "TextPart",
    "TextResourcePart",
    "ThinkingChunk",
    "TitleChanged",
    "ToolCallEnded",
    "ToolCallEvent",
    "ToolCallPhase",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolCallState",
    "ToolCallTracker",
    "ToolCallTrigger",
    "TurnCompleted",
    "TurnContext",
    "TurnError",
    "TurnOutput",
    "UsageReported",
    "UserMessageChunk",
    "accepted_block_types",
    "check_prompt",
    "merge_tool_call",
    "new_id",
    "part_from_block",
    "part_to_block",
    "prompt_capabilities",
    "prompt_parts",
    "tool_call_changes",
    "tool_call_transition_diagram",
    "tool_call_trigger",
)

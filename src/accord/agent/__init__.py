"""The agent runtime: serves any engine to ACP clients.

:class:`AgentRuntime` is an :class:`accord.roles.Agent` that does everything ACP asks of an
agent (sessions and their persistence, replay, controls, permissions, cancellation, the event
chain) around an *engine* that only produces events::

    from accord.agent import AgentRuntime
    from accord.roles import run_agent_stdio
    from accord.store import SqliteSessionStore

    run_agent_stdio(AgentRuntime(MyEngine(), store=SqliteSessionStore("sessions.db")))

The engine protocol (:class:`Engine`, :class:`EngineSession`, :class:`EngineCapabilities`,
:class:`SessionContext`, :class:`TurnContext`, :class:`PermissionDecision`) is what an engine
implements; the content parts (:class:`TextPart`, :class:`ImagePart`, ...) and
:func:`part_from_block` / :func:`part_to_block` convert prompt content with bytes inside.
``accord.testing.ScriptedEngine`` is a scripted engine for tests and examples.

Below: :mod:`accord.roles`, :mod:`accord.events`, :mod:`accord.store`. Above:
:mod:`accord.engines` (adapters), the coding agent and the CLI.
"""

from ._activity_log import ActivityLog as ActivityLog
from ._client_services import ClientFiles as ClientFiles
from ._client_services import ClientTerminal as ClientTerminal
from ._client_services import ClientTerminals as ClientTerminals
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
from ._content import prompt_parts as prompt_parts
from ._controls import Controls as Controls
from ._elicitation import ClientElicitation as ClientElicitation
from ._elicitation import Elicitation as Elicitation
from ._elicitation import ElicitationAction as ElicitationAction
from ._elicitation import ElicitationAnswer as ElicitationAnswer
from ._elicitation import ElicitationMode as ElicitationMode
from ._engine import ConfigValue as ConfigValue
from ._engine import Engine as Engine
from ._engine import EngineCapabilities as EngineCapabilities
from ._engine import EngineSession as EngineSession
from ._engine import PermissionDecision as PermissionDecision
from ._engine import PermissionOutcome as PermissionOutcome
from ._engine import PermissionRequester as PermissionRequester
from ._engine import SessionContext as SessionContext
from ._engine import Terminal as Terminal
from ._engine import TerminalHost as TerminalHost
from ._engine import TextFileReader as TextFileReader
from ._engine import TextFileWriter as TextFileWriter
from ._engine import TurnContext as TurnContext
from ._engine import TurnOutput as TurnOutput
from ._errors import PromptInProgress as PromptInProgress
from ._errors import SessionNotActive as SessionNotActive
from ._lifecycle import TRANSITIONS as SESSION_TRANSITIONS
from ._lifecycle import SessionLifecycle as SessionLifecycle
from ._lifecycle import SessionState as SessionState
from ._lifecycle import SessionTrigger as SessionTrigger
from ._lifecycle import transition_diagram as session_transition_diagram
from ._ownership import DEFAULT_TURN_LEASE_SECONDS as DEFAULT_TURN_LEASE_SECONDS
from ._ownership import SessionChangedElsewhere as SessionChangedElsewhere
from ._ownership import SessionOwnedElsewhere as SessionOwnedElsewhere
from ._permissions import DEFAULT_PERMISSION_OPTIONS as DEFAULT_PERMISSION_OPTIONS
from ._permissions import permission_key as permission_key
from ._pipeline import DEFAULT_ATTACHMENT_QUEUE as DEFAULT_ATTACHMENT_QUEUE
from ._pipeline import MAX_HELD_OBSERVE as MAX_HELD_OBSERVE
from ._pipeline import Attachment as Attachment
from ._pipeline import AttachmentStatistics as AttachmentStatistics
from ._pipeline import ClientChannel as ClientChannel
from ._pipeline import DeliveryPipeline as DeliveryPipeline
from ._pipeline import PipelineStatistics as PipelineStatistics
from ._pipeline import Recipient as Recipient
from ._pipeline import Tap as Tap
from ._runtime import AgentRuntime as AgentRuntime
from ._runtime import RuntimeStatistics as RuntimeStatistics
from ._turn import CANCEL_GRACE_SECONDS as CANCEL_GRACE_SECONDS

__all__ = (
    "BASELINE_BLOCK_TYPES",
    "CANCEL_GRACE_SECONDS",
    "DEFAULT_ATTACHMENT_QUEUE",
    "DEFAULT_PERMISSION_OPTIONS",
    "DEFAULT_TURN_LEASE_SECONDS",
    "MAX_HELD_OBSERVE",
    "SESSION_TRANSITIONS",
    "ActivityLog",
    "AgentRuntime",
    "Attachment",
    "AttachmentStatistics",
    "AudioPart",
    "BlobResourcePart",
    "BlockType",
    "ClientChannel",
    "ClientElicitation",
    "ClientFiles",
    "ClientTerminal",
    "ClientTerminals",
    "ConfigValue",
    "ContentPart",
    "Controls",
    "DeliveryPipeline",
    "Elicitation",
    "ElicitationAction",
    "ElicitationAnswer",
    "ElicitationMode",
    "Engine",
    "EngineCapabilities",
    "EngineSession",
    "ImagePart",
    "PermissionDecision",
    "PermissionOutcome",
    "PermissionRequester",
    "PipelineStatistics",
    "PromptInProgress",
    "Recipient",
    "ResourceLinkPart",
    "RuntimeStatistics",
    "SessionChangedElsewhere",
    "SessionContext",
    "SessionLifecycle",
    "SessionNotActive",
    "SessionOwnedElsewhere",
    "SessionState",
    "SessionTrigger",
    "Tap",
    "Terminal",
    "TerminalHost",
    "TextFileReader",
    "TextFileWriter",
    "TextPart",
    "TextResourcePart",
    "TurnContext",
    "TurnOutput",
    "accepted_block_types",
    "check_prompt",
    "part_from_block",
    "part_to_block",
    "permission_key",
    "prompt_parts",
    "session_transition_diagram",
)

"""The agent runtime: serves any engine to ACP clients.

:class:`AgentRuntime` is an :class:`accord.roles.Agent` that does everything ACP asks of an
agent (sessions and their persistence, replay, controls, permissions, cancellation, the event
chain) around an *engine* that only produces events::

    from accord.agent import AgentRuntime
    from accord.roles import run_agent_stdio
    from accord.store import SqliteSessionStore

    run_agent_stdio(AgentRuntime(MyEngine(), store=SqliteSessionStore("sessions.db")))

The engine protocol (:class:`Engine`, :class:`EngineSession`, :class:`EngineCapabilities`,
:class:`SessionContext`, :class:`TurnContext`, :class:`PermissionAnswer`) is what an engine
implements; the content parts (:class:`TextPart`, :class:`ImagePart`, ...) and
:func:`part_from_block` / :func:`part_to_block` convert prompt content with bytes inside.
``accord.testing.ScriptedEngine`` is a scripted engine for tests and examples.

Below: :mod:`accord.engines` (the contract), :mod:`accord.roles`, :mod:`accord.events`,
:mod:`accord.store`. Above: the coding agent and the CLI.
"""

from ._activity_log import ActivityLog as ActivityLog
from ._attachment import ATTACHMENT_TRANSITIONS as ATTACHMENT_TRANSITIONS
from ._attachment import DEFAULT_ATTACHMENT_QUEUE as DEFAULT_ATTACHMENT_QUEUE
from ._attachment import Attachment as Attachment
from ._attachment import AttachmentPhase as AttachmentPhase
from ._attachment import AttachmentStatistics as AttachmentStatistics
from ._attachment import ClientChannel as ClientChannel
from ._attachment import Recipient as Recipient
from ._client_services import ClientFiles as ClientFiles
from ._client_services import ClientTerminal as ClientTerminal
from ._client_services import ClientTerminals as ClientTerminals
from ._controls import Controls as Controls
from ._elicitation import ClientElicitation as ClientElicitation
from ._errors import PromptInProgress as PromptInProgress
from ._errors import SessionNotActive as SessionNotActive
from ._lifecycle import TRANSITIONS as SESSION_TRANSITIONS
from ._lifecycle import LifecycleState as LifecycleState
from ._lifecycle import LifecycleTrigger as LifecycleTrigger
from ._lifecycle import SessionLifecycle as SessionLifecycle
from ._lifecycle import transition_diagram as session_transition_diagram
from ._ownership import DEFAULT_TURN_LEASE_SECONDS as DEFAULT_TURN_LEASE_SECONDS
from ._ownership import SessionChangedElsewhere as SessionChangedElsewhere
from ._ownership import SessionOwnedElsewhere as SessionOwnedElsewhere
from ._permissions import DEFAULT_PERMISSION_OPTIONS as DEFAULT_PERMISSION_OPTIONS
from ._permissions import permission_key as permission_key
from ._pipeline import MAX_HELD_OBSERVE as MAX_HELD_OBSERVE
from ._pipeline import DeliveryPipeline as DeliveryPipeline
from ._pipeline import PipelineStatistics as PipelineStatistics
from ._pipeline import Tap as Tap
from ._runtime import CURSOR_CAPABILITY as CURSOR_CAPABILITY
from ._runtime import DEFAULT_REMOTE_GRACE_SECONDS as DEFAULT_REMOTE_GRACE_SECONDS
from ._runtime import AgentRuntime as AgentRuntime
from ._runtime import RuntimeStatistics as RuntimeStatistics
from ._turn import CANCEL_GRACE_SECONDS as CANCEL_GRACE_SECONDS

__all__ = (
    "ATTACHMENT_TRANSITIONS",
    "CANCEL_GRACE_SECONDS",
    "CURSOR_CAPABILITY",
    "DEFAULT_ATTACHMENT_QUEUE",
    "DEFAULT_PERMISSION_OPTIONS",
    "DEFAULT_REMOTE_GRACE_SECONDS",
    "DEFAULT_TURN_LEASE_SECONDS",
    "MAX_HELD_OBSERVE",
    "SESSION_TRANSITIONS",
    "ActivityLog",
    "AgentRuntime",
    "Attachment",
    "AttachmentPhase",
    "AttachmentStatistics",
    "ClientChannel",
    "ClientElicitation",
    "ClientFiles",
    "ClientTerminal",
    "ClientTerminals",
    "Controls",
    "DeliveryPipeline",
    "LifecycleState",
    "LifecycleTrigger",
    "PipelineStatistics",
    "PromptInProgress",
    "Recipient",
    "RuntimeStatistics",
    "SessionChangedElsewhere",
    "SessionLifecycle",
    "SessionNotActive",
    "SessionOwnedElsewhere",
    "Tap",
    "permission_key",
    "session_transition_diagram",
)

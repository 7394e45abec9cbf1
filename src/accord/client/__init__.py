"""The client side of ACP as a library: drive any ACP agent from a Python program.

``async with connect(agent) as conn:`` spawns an agent (or takes a transport, or serves an
in-process :class:`accord.roles.Agent`), initializes it, and yields an
:class:`ConnectedAgent` with typed calls for every agent method. A :class:`ClientSession`
prompts (``await session.prompt("...")``) or streams a turn (``async for event in
session.stream("...")``: a closed union of :data:`TurnEvent` dataclasses ending with
:class:`TurnFinished`), and folds everything the agent reports into its :class:`SessionView`.
The host services (files, terminals) are advertised only when enabled and confined to each
session's directories; permission requests go to a :class:`PermissionPolicy`, questions
(``elicitation/create``) to an :class:`ElicitationPolicy`. Next edit suggestions:
:meth:`ConnectedAgent.start_nes` gives a :class:`NesSession` that keeps documents in sync
with the agent and asks for :class:`Suggestion` values (:mod:`accord.client._nes`).

Above: programs, ``accord run`` / ``accord sessions``, a terminal UI. Below:
:mod:`accord.roles` (typed calls, capability enforcement), :mod:`accord.transports`.
"""

from ._connect import INITIALIZE_TIMEOUT as INITIALIZE_TIMEOUT
from ._connect import AgentSpec as AgentSpec
from ._connect import accord_client_info as accord_client_info
from ._connect import connect as connect
from ._connection import ConnectedAgent as ConnectedAgent
from ._connection import ConnectedAgentStatistics as ConnectedAgentStatistics
from ._elicitation import Accept as Accept
from ._elicitation import AcceptDefaults as AcceptDefaults
from ._elicitation import CompletionListener as CompletionListener
from ._elicitation import Decline as Decline
from ._elicitation import DeclineAll as DeclineAll
from ._elicitation import ElicitationCallback as ElicitationCallback
from ._elicitation import ElicitationContext as ElicitationContext
from ._elicitation import ElicitationDecision as ElicitationDecision
from ._elicitation import ElicitationModeName as ElicitationModeName
from ._elicitation import ElicitationPolicy as ElicitationPolicy
from ._events import CommandsUpdated as CommandsUpdated
from ._events import CompactionSummaryDelta as CompactionSummaryDelta
from ._events import CompactionUpdated as CompactionUpdated
from ._events import ConfigUpdated as ConfigUpdated
from ._events import ModeUpdated as ModeUpdated
from ._events import OtherUpdate as OtherUpdate
from ._events import PermissionRequested as PermissionRequested
from ._events import PermissionResolved as PermissionResolved
from ._events import PlanUpdated as PlanUpdated
from ._events import TextDelta as TextDelta
from ._events import ThoughtDelta as ThoughtDelta
from ._events import TitleUpdated as TitleUpdated
from ._events import ToolCallAdded as ToolCallAdded
from ._events import ToolCallUpdated as ToolCallUpdated
from ._events import TurnEvent as TurnEvent
from ._events import TurnFinished as TurnFinished
from ._events import UsageUpdated as UsageUpdated
from ._events import UserMessageDelta as UserMessageDelta
from ._fs import FileSystemHost as FileSystemHost
from ._handlers import MAX_EARLY_UPDATE_BYTES as MAX_EARLY_UPDATE_BYTES
from ._handlers import MAX_EARLY_UPDATES as MAX_EARLY_UPDATES
from ._handlers import UpdateListener as UpdateListener
from ._nes import NesSession as NesSession
from ._nes import Suggestion as Suggestion
from ._neutralise import neutralise as neutralise
from ._permissions import AllowAll as AllowAll
from ._permissions import AskCallback as AskCallback
from ._permissions import Cancel as Cancel
from ._permissions import DenyAll as DenyAll
from ._permissions import PermissionContext as PermissionContext
from ._permissions import PermissionDecision as PermissionDecision
from ._permissions import PermissionPolicy as PermissionPolicy
from ._permissions import Rule as Rule
from ._permissions import RuleAction as RuleAction
from ._permissions import Rules as Rules
from ._permissions import Select as Select
from ._reconnect import RECONNECT_DEADLINE as RECONNECT_DEADLINE
from ._reconnect import Backoff as Backoff
from ._render import TurnRenderer as TurnRenderer
from ._render import render_event as render_event
from ._session import ClientSession as ClientSession
from ._session import PromptContent as PromptContent
from ._state import CompactionState as CompactionState
from ._state import Message as Message
from ._state import MessageRole as MessageRole
from ._state import ToolCallState as ToolCallState
from ._state import ToolCallStatusView as ToolCallStatusView
from ._terminal_auth import TerminalAuthFailed as TerminalAuthFailed
from ._terminal_auth import run_terminal_auth as run_terminal_auth
from ._terminal_auth import terminal_auth_methods as terminal_auth_methods
from ._terminals import TerminalHost as TerminalHost
from ._turn import TURN_EVENT_BUFFER as TURN_EVENT_BUFFER
from ._turn import SessionState as SessionState
from ._turn import TurnResult as TurnResult
from ._turn import TurnStream as TurnStream
from ._view import SessionView as SessionView

__all__ = (
    "INITIALIZE_TIMEOUT",
    "MAX_EARLY_UPDATES",
    "MAX_EARLY_UPDATE_BYTES",
    "RECONNECT_DEADLINE",
    "TURN_EVENT_BUFFER",
    "Accept",
    "AcceptDefaults",
    "AgentSpec",
    "AllowAll",
    "AskCallback",
    "Backoff",
    "Cancel",
    "ClientSession",
    "CommandsUpdated",
    "CompactionState",
    "CompactionSummaryDelta",
    "CompactionUpdated",
    "CompletionListener",
    "ConfigUpdated",
    "ConnectedAgent",
    "ConnectedAgentStatistics",
    "Decline",
    "DeclineAll",
    "DenyAll",
    "ElicitationCallback",
    "ElicitationContext",
    "ElicitationDecision",
    "ElicitationModeName",
    "ElicitationPolicy",
    "FileSystemHost",
    "Message",
    "MessageRole",
    "ModeUpdated",
    "NesSession",
    "OtherUpdate",
    "PermissionContext",
    "PermissionDecision",
    "PermissionPolicy",
    "PermissionRequested",
    "PermissionResolved",
    "PlanUpdated",
    "PromptContent",
    "Rule",
    "RuleAction",
    "Rules",
    "Select",
    "SessionState",
    "SessionView",
    "Suggestion",
    "TerminalAuthFailed",
    "TerminalHost",
    "TextDelta",
    "ThoughtDelta",
    "TitleUpdated",
    "ToolCallAdded",
    "ToolCallState",
    "ToolCallStatusView",
    "ToolCallUpdated",
    "TurnEvent",
    "TurnFinished",
    "TurnRenderer",
    "TurnResult",
    "TurnStream",
    "UpdateListener",
    "UsageUpdated",
    "UserMessageDelta",
    "accord_client_info",
    "connect",
    "neutralise",
    "render_event",
    "run_terminal_auth",
    "terminal_auth_methods",
)

"""Typed ACP roles: the agent and client interfaces and the connections that serve them.

Above the untyped JSON-RPC layer (``accord.jsonrpc``), this package speaks ACP v1: one typed
request in and one typed response out per method, dispatched through tables generated from the
official schema; version negotiation; capabilities derived from what an implementation
provides and enforced on outgoing calls. The agent and client librarys (``accord.agent``,
``accord.client``) build on it.
"""

from ._agent import Agent as Agent
from ._agent import AgentSideConnection as AgentSideConnection
from ._agent import ChunkKind as ChunkKind
from ._agent import run_agent_stdio as run_agent_stdio
from ._agent import serve_agent as serve_agent
from ._base import RoleConnection as RoleConnection
from ._capabilities import is_advertised as is_advertised
from ._client import Client as Client
from ._client import ClientSideConnection as ClientSideConnection
from ._elicitation import choices_of as choices_of
from ._elicitation import content_problems as content_problems
from ._elicitation import default_content as default_content
from ._elicitation import value_problem as value_problem
from ._mcp import mcp_refusal as mcp_refusal
from ._mcp import mcp_transport as mcp_transport
from ._mcp import supported_mcp_transports as supported_mcp_transports
from ._mcp import unadvertised_mcp_servers as unadvertised_mcp_servers
from ._trace import TraceContext as TraceContext
from ._trace import current_trace as current_trace
from ._trace import use_trace as use_trace
from ._version import LATEST_PROTOCOL_VERSION as LATEST_PROTOCOL_VERSION
from ._version import SUPPORTED_PROTOCOL_VERSIONS as SUPPORTED_PROTOCOL_VERSIONS
from ._version import negotiate_version as negotiate_version

__all__ = (
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Agent",
    "AgentSideConnection",
    "ChunkKind",
    "Client",
    "ClientSideConnection",
    "RoleConnection",
    "TraceContext",
    "choices_of",
    "content_problems",
    "current_trace",
    "default_content",
    "is_advertised",
    "mcp_refusal",
    "mcp_transport",
    "negotiate_version",
    "run_agent_stdio",
    "serve_agent",
    "supported_mcp_transports",
    "unadvertised_mcp_servers",
    "use_trace",
    "value_problem",
)

"""The agent role: a typed base class and the connection that serves it.

Subclass :class:`Agent` and override the handlers you support; each takes one typed request
and returns one typed response. Methods you do not override answer ``-32601``, and the
capabilities advertised in ``initialize`` are derived from what you override, so the two never
disagree. :class:`AgentSideConnection` serves an agent over a transport and offers typed calls
to the client (permission requests, files, terminals, ``session/update``); it refuses to send a
request the client did not advertise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, cast, get_args

import anyio

from ..errors import InvalidRequest, LocalProtocolError, MethodNotFound
from ..schema import (
    AgentCapabilities,
    AuthMethod,
    ClientCapabilities,
    ContentBlock,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    McpCapabilities,
    PromptCapabilities,
    WireModel,
)
from ..schema.methods import AGENT_METHODS, CLIENT_METHODS
from ._base import RoleConnection
from ._capabilities import (
    POSITION_ENCODINGS,
    capability_tree,
    implemented_methods,
    negotiate_position_encoding,
)
from ._generated_roles import (
    AGENT_HANDLER_NAMES,
    AGENT_NOTIFICATION_HANDLERS,
    AGENT_REQUEST_HANDLERS,
    AgentHandlers,
    ClientCalls,
)
from ._version import negotiate_version

if TYPE_CHECKING:
    from ..transports import Transport

__all__ = ("Agent", "AgentSideConnection", "ChunkKind", "run_agent_stdio", "serve_agent")

ChunkKind = Literal["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]
"""The ``sessionUpdate`` of a message chunk: the agent's reply, its reasoning, a user message."""

_CHUNK_KINDS: Final = frozenset(get_args(ChunkKind))


class Agent(AgentHandlers):
    """Base class of an ACP agent.

    Override the handlers you support (``new_session``, ``prompt``, ``cancel`` at the least;
    ``load_session``, ``list_sessions``, ... when you offer them). ``initialize`` is answered
    for you: the protocol version is negotiated and the capabilities are derived from the
    handlers you override plus :meth:`prompt_capabilities`, :meth:`mcp_capabilities` and
    :attr:`additional_directories`. Override :meth:`agent_capabilities` to add more.
    """

    #: Sent as ``agentInfo`` in ``initialize``.
    agent_info: Implementation | None = None
    #: Sent as ``authMethods`` in ``initialize``.
    auth_methods: Sequence[AuthMethod] = ()
    #: Whether sessions accept ``additionalDirectories`` (advertised when true).
    additional_directories: bool = False
    #: How ``document/didChange`` should carry changes, when the agent handles it:
    #: ``incremental`` (ranges) or ``full`` (the whole text each time).
    document_sync: Literal["full", "incremental"] = "incremental"
    #: The position encodings NES positions may use with this agent (``utf-16`` always; the
    #: first of the client's ``positionEncodings`` found here is advertised as
    #: ``positionEncoding`` when the agent offers NES).
    position_encodings: tuple[str, ...] = ("utf-16",)

    _client: AgentSideConnection | None = None

    @property
    def client(self) -> AgentSideConnection:
        """The connection to the client, for calls such as ``session_update``.

        Raises:
            LocalProtocolError: the agent is not being served yet.
        """
        if self._client is None:
            raise LocalProtocolError("the agent is not connected to a client")
        return self._client

    def on_connect(self, client: AgentSideConnection) -> None:
        """Called when a connection starts serving this agent; stores it as :attr:`client`."""
        self._client = client

    def prompt_capabilities(self) -> PromptCapabilities | None:
        """Content types accepted in prompts beyond text and resource links (default: none)."""
        return None

    def mcp_capabilities(self) -> McpCapabilities | None:
        """MCP transports supported beyond stdio (default: none)."""
        return None

    def offered_methods(self) -> set[str]:
        """The wire methods this agent answers: those whose handler it overrides.

        ``initialize`` is answered in any case. Override to withhold methods whose handler is
        overridden but cannot serve now (a runtime whose engine lacks a feature): they are
        then neither advertised nor dispatched (-32601).
        """
        return implemented_methods(self, Agent, AGENT_HANDLER_NAMES)

    def agent_capabilities(self) -> AgentCapabilities:
        """The capabilities advertised in ``initialize``, derived from this implementation."""
        offered = self.offered_methods()
        tree = capability_tree(AGENT_METHODS[m] for m in sorted(offered))
        change = tree.get("nes", {}).get("events", {}).get("document", {}).get("didChange")
        if change is not None:
            change["syncKind"] = self.document_sync
        if self.additional_directories:
            tree.setdefault("sessionCapabilities", {})["additionalDirectories"] = {}
        prompt = self.prompt_capabilities()
        if prompt is not None:
            tree["promptCapabilities"] = prompt.to_wire()
        mcp = self.mcp_capabilities()
        if mcp is not None:
            tree["mcpCapabilities"] = mcp.to_wire()
        return AgentCapabilities.model_validate(tree)

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        """Negotiate the protocol version and advertise the derived capabilities.

        An agent offering NES also picks the position encoding from the client's
        ``positionEncodings`` (:attr:`position_encodings`; ``utf-16`` when none fits).
        """
        capabilities = self.agent_capabilities()
        if capabilities.nes is not None and capabilities.position_encoding is None:
            offered = request.client_capabilities.position_encodings
            encoding = negotiate_position_encoding(offered, self.position_encodings)
            capabilities = capabilities.model_copy(update={"position_encoding": encoding})
        return InitializeResponse(
            protocol_version=negotiate_version(request.protocol_version),
            agent_capabilities=capabilities,
            auth_methods=list(self.auth_methods),
            agent_info=self.agent_info,
        )

    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        """Answer an extension request (``_``-prefixed); default: -32601."""
        raise MethodNotFound(f"Method not found: {method}", {"method": method})

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Handle an extension notification (``_``-prefixed); default: ignore it."""


class AgentSideConnection(RoleConnection, ClientCalls):
    """Serves an :class:`Agent` over a transport; typed calls go to the client.

    Use as an async context manager; the agent's :meth:`Agent.on_connect` is called on entry.
    """

    _local_methods = AGENT_METHODS
    _peer_methods = CLIENT_METHODS
    _request_handlers = AGENT_REQUEST_HANDLERS
    _notification_handlers = AGENT_NOTIFICATION_HANDLERS
    _local_side = "agent"

    def __init__(self, agent: Agent, transport: Transport, **connection_options: Any) -> None:
        super().__init__(agent, transport, **connection_options)
        unknown = set(agent.position_encodings) - set(POSITION_ENCODINGS)
        if "utf-16" not in agent.position_encodings or unknown:
            raise ValueError(
                f"position_encodings must include utf-16 and only {', '.join(POSITION_ENCODINGS)}"
                f": {agent.position_encodings!r}"
            )
        self._implemented = agent.offered_methods()
        self._implemented.add("initialize")
        self.client_capabilities: ClientCapabilities | None = None
        self.client_info: Implementation | None = None
        self.protocol_version: int | None = None
        self.position_encoding: str = "utf-16"
        # Set when an initialize starts (cleared again if it fails): a second one, even while
        # the first is being answered, is refused.
        self._initializing = False
        agent.on_connect(self)

    async def send_chunk(
        self,
        session_id: str,
        content: ContentBlock | str,
        *,
        message_id: str | None = None,
        kind: ChunkKind = "agent_message_chunk",
    ) -> None:
        """Stream one message chunk to the client: the fast path of ``session_update``.

        Sends what ``session_update(SessionNotification(session_id=..., update=
        AgentMessageChunkSessionUpdate(content=..., message_id=...)))`` sends, without building
        those models: a third of the cost, for the bulk of a streamed turn. A ``str`` is sent as
        a text block.

        Raises:
            ValueError: ``kind`` is not a chunk kind.
            TypeError: ``content`` is neither a string nor a content block model.
            ConnectionClosed: the client is gone.
        """
        if kind not in _CHUNK_KINDS:
            raise ValueError(f"not a message chunk kind: {kind!r}")
        given = cast(object, content)  # checked at run time too: callers may be untyped
        if isinstance(given, str):
            wire_content: dict[str, Any] = {"type": "text", "text": given}
        elif isinstance(given, WireModel):
            wire_content = given.to_wire()
        else:
            raise TypeError(
                f"a chunk's content is a str or a content block model, not {type(content).__name__}"
            )
        update: dict[str, Any] = {"sessionUpdate": kind, "content": wire_content}
        if message_id is not None:
            update["messageId"] = message_id
        await self._connection.notify("session/update", {"sessionId": session_id, "update": update})

    async def _on_request(self, method: str, params: Any) -> Any:
        """Serve ``initialize`` once, first; refuse every other request until it is answered.

        Both refusals are -32600 (Invalid Request: the request is well formed, its place in
        the conversation is not), never -32000, which ACP reserves for "authenticate first".
        """
        if method != "initialize":
            if self.protocol_version is None:
                raise InvalidRequest(
                    f"{method} before initialize: the client must send initialize first and "
                    "wait for its answer",
                    {"method": method, "expected": "initialize"},
                )
            return await super()._on_request(method, params)
        if self._initializing:
            raise InvalidRequest(
                "initialize was already sent on this connection: it is negotiated once "
                "(open a new connection to negotiate again)",
                {"method": method},
            )
        self._initializing = True
        try:
            return await super()._on_request(method, params)
        except BaseException:
            self._initializing = False  # refused (e.g. invalid params): it may be sent again
            raise

    def _after_request(self, method: str, request: Any, response: Any) -> None:
        if method == "initialize":
            assert isinstance(request, InitializeRequest)
            assert isinstance(response, InitializeResponse)
            self.client_capabilities = request.client_capabilities
            self.client_info = request.client_info
            self.protocol_version = response.protocol_version
            self.position_encoding = response.agent_capabilities.position_encoding or "utf-16"
            self._peer_capabilities = request.client_capabilities.to_wire()


async def serve_agent(agent: Agent, transport: Transport, **connection_options: Any) -> None:
    """Serve ``agent`` over ``transport`` until the client closes the connection."""
    async with AgentSideConnection(agent, transport, **connection_options) as connection:
        await connection.wait_closed()


def run_agent_stdio(agent: Agent, *, backend: str = "asyncio") -> None:
    """Serve ``agent`` over this process's stdin and stdout (what editors launch)."""
    from ..transports import stdio_transport

    async def main() -> None:
        await serve_agent(agent, stdio_transport())

    anyio.run(main, backend=backend)

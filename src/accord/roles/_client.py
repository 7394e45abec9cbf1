"""The client role: a typed base class and the connection that drives an agent.

Subclass :class:`Client` and override the handlers you support (``session_update`` and
``request_permission`` at the least; file-system and terminal methods when you host them).
The capabilities sent in ``initialize`` are derived from what you override.
:class:`ClientSideConnection` offers typed calls to the agent and refuses to send a request
the agent did not advertise (``session/load`` without ``loadSession``, for example).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import MethodNotFound, RemoteProtocolError
from ..jsonrpc import AnswerHook
from ..schema import (
    ClientCapabilities,
    ClientNesCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
)
from ..schema.methods import AGENT_METHODS, CLIENT_METHODS
from ._base import RoleConnection
from ._capabilities import capability_tree, implemented_methods
from ._generated_roles import (
    CLIENT_HANDLER_NAMES,
    CLIENT_NOTIFICATION_HANDLERS,
    CLIENT_REQUEST_HANDLERS,
    AgentCalls,
    ClientHandlers,
)
from ._version import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from ..transports import Transport

__all__ = ("Client", "ClientSideConnection")

_TERMINAL_METHODS = frozenset(
    {
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    }
)


class Client(ClientHandlers):
    """Base class of an ACP client (the editor side).

    Override ``session_update`` (notification) and ``request_permission`` at the least. File
    system access is advertised when ``read_text_file`` / ``write_text_file`` are overridden,
    terminals when all five ``terminal/*`` handlers are.
    """

    #: Sent as ``clientInfo`` in ``initialize``.
    client_info: Implementation | None = None
    #: Advertise boolean config options (``session.configOptions.boolean``).
    boolean_config_options: bool = True
    #: Advertise the unstable ``session.compaction`` capability: this client folds the
    #: ``compaction_update`` / ``compaction_summary_chunk`` session updates (default: no; an
    #: agent then shows a compaction as an ordinary message).
    session_compaction: bool = False
    #: The position encodings this client speaks for NES positions, in order of preference
    #: (sent as ``positionEncodings`` when not empty; ``utf-16`` is assumed either way).
    position_encodings: tuple[str, ...] = ()

    def nes_capabilities(self) -> ClientNesCapabilities | None:
        """The NES suggestion kinds this client takes beyond ``edit`` (default: none asked)."""
        return None

    def client_capabilities(self) -> ClientCapabilities:
        """The capabilities sent in ``initialize``, derived from this implementation."""
        implemented = implemented_methods(self, Client, CLIENT_HANDLER_NAMES)
        if not implemented >= _TERMINAL_METHODS:
            implemented -= _TERMINAL_METHODS
        tree = capability_tree(CLIENT_METHODS[m] for m in sorted(implemented))
        if self.boolean_config_options:
            tree["session"] = {"configOptions": {"boolean": {}}}
        if self.session_compaction:
            tree.setdefault("session", {})["compaction"] = {}
        nes = self.nes_capabilities()
        if nes is not None:
            tree["nes"] = nes.to_wire()
        if self.position_encodings:
            tree["positionEncodings"] = list(self.position_encodings)
        return ClientCapabilities.model_validate(tree)

    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        """Answer an extension request (``_``-prefixed); default: -32601."""
        raise MethodNotFound(f"Method not found: {method}", {"method": method})

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Handle an extension notification (``_``-prefixed); default: ignore it."""


class ClientSideConnection(RoleConnection, AgentCalls):
    """Drives an agent over a transport on behalf of a :class:`Client`.

    Call :meth:`initialize` first; the agent's capabilities it returns decide which calls
    are allowed afterwards.
    """

    _local_methods = CLIENT_METHODS
    _peer_methods = AGENT_METHODS
    _request_handlers = CLIENT_REQUEST_HANDLERS
    _notification_handlers = CLIENT_NOTIFICATION_HANDLERS
    _local_side = "client"

    def __init__(self, client: Client, transport: Transport, **connection_options: Any) -> None:
        super().__init__(client, transport, **connection_options)
        self._implemented = implemented_methods(client, Client, CLIENT_HANDLER_NAMES)
        if not self._implemented >= _TERMINAL_METHODS:
            self._implemented -= _TERMINAL_METHODS
        self._client = client
        self.agent_info: Implementation | None = None
        self.initialize_response: InitializeResponse | None = None
        self.position_encoding: str = "utf-16"

    async def initialize(
        self, request: InitializeRequest | None = None, *, on_answer: AnswerHook | None = None
    ) -> InitializeResponse:
        """Send ``initialize`` (by default with the client's derived capabilities).

        Args:
            request: the request; by default the client's derived capabilities and info.
            on_answer: run in notification order as the answer arrives.

        Raises:
            RemoteProtocolError: the agent answered a protocol version accord cannot speak.
        """
        if request is None:
            request = InitializeRequest(
                protocol_version=LATEST_PROTOCOL_VERSION,
                client_capabilities=self._client.client_capabilities(),
                client_info=self._client.client_info,
            )
        response: InitializeResponse = await self._call(
            AGENT_METHODS["initialize"], request, on_answer
        )
        if response.protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise RemoteProtocolError(
                f"the agent speaks ACP version {response.protocol_version}; accord supports "
                f"{', '.join(map(str, SUPPORTED_PROTOCOL_VERSIONS))}"
            )
        self.initialize_response = response
        self.agent_info = response.agent_info
        self._peer_capabilities = response.agent_capabilities.to_wire()
        self.position_encoding = response.agent_capabilities.position_encoding or "utf-16"
        return response

    @property
    def agent_capabilities(self) -> dict[str, Any] | None:
        """The agent's capabilities as sent on the wire, once initialized."""
        return self._peer_capabilities

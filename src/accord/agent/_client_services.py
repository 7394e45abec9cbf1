"""The client's file system and terminals, as the engine protocol's small interfaces.

An engine reaches the editor through :class:`SessionContext`: ``file_reader``,
``file_writer`` and ``terminals``. The runtime fills them with the adapters here, bound to one
session, and only when the client advertised the capability (``fs.readTextFile``,
``fs.writeTextFile``, ``terminal``); otherwise they stay ``None`` and the engine falls back to
its own tools. Every call is one typed request on the connection.

When several clients are attached to one session, a :class:`ConnectionPicker` chooses the
client per call: the one whose prompt runs the current turn when it advertised the capability
the call needs, else the earliest attached client that did; a client that did not advertise a
capability is never sent its requests (with nobody able to serve it, the call fails with
-32601). A terminal's later calls (output, wait, kill, release) go to the client that
created it.

Below: :mod:`accord.roles` (the connection) and :mod:`accord.schema`. Above: the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from ..engines import TerminalHandle, TerminalService, TextFileReader, TextFileWriter
from ..errors import MethodNotFound
from ..schema import (
    ClientCapabilities,
    CreateTerminalRequest,
    EnvVariable,
    KillTerminalRequest,
    ReadTextFileRequest,
    ReleaseTerminalRequest,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
)

if TYPE_CHECKING:
    from ..roles import AgentSideConnection

__all__ = (
    "ClientFiles",
    "ClientTerminal",
    "ClientTerminals",
    "ConnectionPicker",
    "Need",
    "client_services",
)

Need = Literal["fs.readTextFile", "fs.writeTextFile", "terminal"]
"""The client capability a call needs."""


def advertises(capabilities: ClientCapabilities | None, need: Need) -> bool:
    """Whether ``capabilities`` include ``need``."""
    if capabilities is None:
        return False
    if need == "fs.readTextFile":
        return bool(capabilities.fs.read_text_file)
    if need == "fs.writeTextFile":
        return bool(capabilities.fs.write_text_file)
    return bool(capabilities.terminal)


class ConnectionPicker:
    """Chooses the client connection that serves a call (see the module docstring).

    Args:
        candidates: Returns the connections in order of preference (the prompting client
            first, then the attached ones in the order they attached).
    """

    __slots__ = ("_candidates",)

    def __init__(self, candidates: Callable[[], Iterable[AgentSideConnection]]) -> None:
        """Create the picker; see the class docstring for the arguments."""
        self._candidates = candidates

    def pick(self, need: Need, method: str) -> AgentSideConnection:
        """The connection to send ``method`` on.

        Raises:
            MethodNotFound: no attached client advertised ``need``.
        """
        for connection in self._candidates():
            if not connection.closed and advertises(connection.client_capabilities, need):
                return connection
        raise MethodNotFound(
            f"no attached client can serve {method} (none advertised {need})", {"method": method}
        )


def _resolve(
    target: AgentSideConnection | ConnectionPicker, need: Need, method: str
) -> AgentSideConnection:
    if isinstance(target, ConnectionPicker):
        return target.pick(need, method)
    return target


class ClientFiles:
    """Reads and writes files through the client (``fs/*``), for one session."""

    __slots__ = ("_connection", "_session_id")

    def __init__(self, connection: AgentSideConnection | ConnectionPicker, session_id: str) -> None:
        """Bind to ``session_id`` on ``connection`` (or on the client a picker chooses)."""
        self._connection = connection
        self._session_id = session_id

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        """Return the file's text (unsaved edits included) from ``line`` for ``limit`` lines.

        Raises:
            RequestError: the client refused or failed.
        """
        request = ReadTextFileRequest(session_id=self._session_id, path=path)
        if line is not None:
            request.line = line
        if limit is not None:
            request.limit = limit
        connection = _resolve(self._connection, "fs.readTextFile", "fs/read_text_file")
        response = await connection.read_text_file(request)
        return response.content

    async def write_text_file(self, path: str, content: str) -> None:
        """Create or overwrite the file at absolute ``path``.

        Raises:
            RequestError: the client refused or failed.
        """
        connection = _resolve(self._connection, "fs.writeTextFile", "fs/write_text_file")
        await connection.write_text_file(
            WriteTextFileRequest(session_id=self._session_id, path=path, content=content)
        )


class ClientTerminal:
    """A command running in one of the client's terminals."""

    __slots__ = ("_connection", "_session_id", "_terminal_id")

    def __init__(self, connection: AgentSideConnection, session_id: str, terminal_id: str) -> None:
        """Wrap terminal ``terminal_id`` of ``session_id``."""
        self._connection = connection
        self._session_id = session_id
        self._terminal_id = terminal_id

    @property
    def terminal_id(self) -> str:
        """The id to embed as tool-call content."""
        return self._terminal_id

    async def output(self) -> TerminalOutputResponse:
        """The output so far and, once the command exited, its exit status."""
        return await self._connection.terminal_output(
            TerminalOutputRequest(session_id=self._session_id, terminal_id=self._terminal_id)
        )

    async def wait_for_exit(self) -> WaitForTerminalExitResponse:
        """Wait for the command to exit."""
        return await self._connection.wait_for_terminal_exit(
            WaitForTerminalExitRequest(session_id=self._session_id, terminal_id=self._terminal_id)
        )

    async def kill(self) -> None:
        """Kill the command (the terminal stays readable)."""
        await self._connection.kill_terminal(
            KillTerminalRequest(session_id=self._session_id, terminal_id=self._terminal_id)
        )

    async def release(self) -> None:
        """Kill the command if it runs and free the terminal."""
        await self._connection.release_terminal(
            ReleaseTerminalRequest(session_id=self._session_id, terminal_id=self._terminal_id)
        )


class ClientTerminals:
    """Starts commands in the client's terminals (``terminal/create``), for one session."""

    __slots__ = ("_connection", "_session_id")

    def __init__(self, connection: AgentSideConnection | ConnectionPicker, session_id: str) -> None:
        """Bind to ``session_id`` on ``connection`` (or on the client a picker chooses)."""
        self._connection = connection
        self._session_id = session_id

    async def create_terminal(
        self,
        command: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> TerminalHandle:
        """Start ``command``; returns at once.

        Raises:
            RequestError: the client refused or failed.
        """
        connection = _resolve(self._connection, "terminal", "terminal/create")
        response = await connection.create_terminal(
            CreateTerminalRequest(
                session_id=self._session_id,
                command=command,
                args=list(args),
                env=[EnvVariable(name=k, value=v) for k, v in (env or {}).items()],
                cwd=cwd,
                output_byte_limit=output_byte_limit,
            )
        )
        return ClientTerminal(connection, self._session_id, response.terminal_id)


def client_services(
    connection: AgentSideConnection,
    session_id: str,
    picker: ConnectionPicker | None = None,
) -> tuple[TextFileReader | None, TextFileWriter | None, TerminalService | None]:
    """The reader, writer and terminal host ``connection``'s client advertised, for
    ``session_id``; with ``picker``, each call goes to the client it chooses."""
    capabilities = connection.client_capabilities
    if capabilities is None:
        return None, None, None
    target: AgentSideConnection | ConnectionPicker = picker if picker is not None else connection
    files = ClientFiles(target, session_id)
    return (
        files if capabilities.fs.read_text_file else None,
        files if capabilities.fs.write_text_file else None,
        ClientTerminals(target, session_id) if capabilities.terminal else None,
    )

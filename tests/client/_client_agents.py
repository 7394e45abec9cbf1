"""In-process agents for the client library tests, and small builders of updates.

``ScriptedAgent`` runs each prompt turn through a test-supplied async function, which sends
updates with the helpers (:meth:`ScriptedAgent.say`, :meth:`ScriptedAgent.send`, ...) and
returns the stop reason. Subclasses add capabilities (the roles layer derives them from the
handlers a class overrides).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from helpers.timeouts import TIMEOUT

from accord.roles import Agent
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    CloseSessionRequest,
    CloseSessionResponse,
    ContentToolCallContent,
    DeleteSessionRequest,
    DeleteSessionResponse,
    ForkSessionRequest,
    ForkSessionResponse,
    Implementation,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionInfo,
    SessionMode,
    SessionModeState,
    SessionNotification,
    SessionUpdate,
    SetSessionModeRequest,
    SetSessionModeResponse,
    StopReason,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    ToolCallUpdateSessionUpdate,
    ToolKind,
    UserMessageChunkSessionUpdate,
)

TurnScript = Callable[["ScriptedAgent", PromptRequest], Awaitable[StopReason]]

PERMISSION_OPTIONS = [
    PermissionOption(option_id="yes-1", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="yes-always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="no-1", name="Reject", kind="reject_once"),
]


def text_of(request: PromptRequest) -> str:
    """The text blocks of a prompt, joined."""
    return "".join(b.text for b in request.prompt if isinstance(b, TextContentBlock))


async def echo(agent: ScriptedAgent, request: PromptRequest) -> StopReason:
    """The default turn: echo the prompt's text as one agent message."""
    await agent.say(request.session_id, text_of(request))
    return "end_turn"


def chunk(text: str, message_id: str | None = None) -> AgentMessageChunkSessionUpdate:
    """An agent message chunk."""
    return AgentMessageChunkSessionUpdate(
        content=TextContentBlock(text=text), message_id=message_id
    )


def thought(text: str, message_id: str | None = None) -> AgentThoughtChunkSessionUpdate:
    """A thought chunk."""
    return AgentThoughtChunkSessionUpdate(
        content=TextContentBlock(text=text), message_id=message_id
    )


def user_chunk(text: str, message_id: str | None = None) -> UserMessageChunkSessionUpdate:
    """A user message chunk (as replayed by session/load)."""
    return UserMessageChunkSessionUpdate(content=TextContentBlock(text=text), message_id=message_id)


def tool_call(
    tool_call_id: str, title: str, kind: ToolKind = "read", **fields: Any
) -> ToolCallSessionUpdate:
    """A ``tool_call`` update."""
    return ToolCallSessionUpdate(tool_call_id=tool_call_id, title=title, kind=kind, **fields)


def tool_update(tool_call_id: str, **fields: Any) -> ToolCallUpdateSessionUpdate:
    """A ``tool_call_update`` update."""
    return ToolCallUpdateSessionUpdate(tool_call_id=tool_call_id, **fields)


def text_content(text: str) -> ContentToolCallContent:
    """Tool-call content made of one text block."""
    return ContentToolCallContent(content=TextContentBlock(text=text))


class ScriptedAgent(Agent):
    """A baseline agent (new session, prompt, cancel) whose turns run a script."""

    agent_info = Implementation(name="scripted-agent", version="1.0")

    def __init__(
        self,
        script: TurnScript = echo,
        *,
        modes: SessionModeState | None = None,
        on_new_session: Callable[[ScriptedAgent, str], Awaitable[None]] | None = None,
    ) -> None:
        self.script = script
        self.modes = modes
        self.on_new_session = on_new_session
        self.new_session_requests: list[NewSessionRequest] = []
        self.prompts: list[PromptRequest] = []
        self.cancels: list[str] = []
        self.cancelled = anyio.Event()
        self.permission_answers: list[RequestPermissionResponse] = []

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        self.new_session_requests.append(request)
        session_id = f"session-{len(self.new_session_requests)}"
        if self.on_new_session is not None:
            await self.on_new_session(self, session_id)
        return NewSessionResponse(session_id=session_id, modes=self.modes)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        self.prompts.append(request)
        return PromptResponse(stop_reason=await self.script(self, request))

    async def cancel(self, notification: Any) -> None:
        self.cancels.append(notification.session_id)
        self.cancelled.set()

    # ------------------------------------------------------------------ script helpers

    async def send(self, session_id: str, *updates: SessionUpdate) -> None:
        """Send updates, in order."""
        for update in updates:
            await self.client.session_update(
                SessionNotification(session_id=session_id, update=update)
            )

    async def say(self, session_id: str, text: str, message_id: str | None = None) -> None:
        """Send one agent message chunk."""
        await self.send(session_id, chunk(text, message_id))

    async def ask(
        self,
        session_id: str,
        tool_call_id: str,
        options: Sequence[PermissionOption] = PERMISSION_OPTIONS,
        **fields: Any,
    ) -> RequestPermissionResponse:
        """Ask the client's permission for a tool call; record and return the answer."""
        answer = await self.client.request_permission(
            RequestPermissionRequest(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id=tool_call_id, **fields),
                options=list(options),
            )
        )
        self.permission_answers.append(answer)
        return answer


class ModesAgent(ScriptedAgent):
    """Offers modes and ``session/set_mode``."""

    def __init__(self, script: TurnScript = echo) -> None:
        modes = SessionModeState(
            current_mode_id="ask",
            available_modes=[
                SessionMode(id="ask", name="Ask"),
                SessionMode(id="code", name="Code"),
            ],
        )
        super().__init__(script, modes=modes)
        self.mode_requests: list[SetSessionModeRequest] = []

    async def set_session_mode(self, request: SetSessionModeRequest) -> SetSessionModeResponse:
        self.mode_requests.append(request)
        return SetSessionModeResponse()


class FullAgent(ScriptedAgent):
    """Offers load (replaying ``history``), resume, fork, list, close and delete."""

    additional_directories = True

    def __init__(self, script: TurnScript = echo, history: Sequence[SessionUpdate] = ()) -> None:
        super().__init__(script)
        self.history = list(history)
        self.closed: list[str] = []
        self.deleted: list[str] = []
        self.loads: list[LoadSessionRequest] = []

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        self.loads.append(request)
        await self.send(request.session_id, *self.history)
        return LoadSessionResponse(modes=self.modes)

    async def resume_session(self, request: ResumeSessionRequest) -> ResumeSessionResponse:
        return ResumeSessionResponse()

    async def fork_session(self, request: ForkSessionRequest) -> ForkSessionResponse:
        forked = f"{request.session_id}-fork"
        await self.say(forked, "early word from the fork")
        return ForkSessionResponse(session_id=forked)

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        pages = {
            None: (["a", "b"], "page-2"),
            "page-2": (["c"], None),
        }
        ids, next_cursor = pages[request.cursor]
        return ListSessionsResponse(
            sessions=[SessionInfo(session_id=i, cwd=request.cwd or "/work") for i in ids],
            next_cursor=next_cursor,
        )

    async def close_session(self, request: CloseSessionRequest) -> CloseSessionResponse:
        self.closed.append(request.session_id)
        return CloseSessionResponse()

    async def delete_session(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        self.deleted.append(request.session_id)
        return DeleteSessionResponse()


class WireAgent:
    """Plays an agent at the JSON-RPC message level, for behaviour no sane agent shows.

    The test script receives the client's messages and sends raw dicts, so it decides the
    exact order of responses and notifications on the wire.
    """

    def __init__(self, transport: Any, client_end: Any) -> None:
        self.transport = transport
        #: The other end: hand it to ``connect``.
        self.client_end = client_end

    @asynccontextmanager
    async def playing(
        self, script: Callable[[], Coroutine[Any, Any, None]]
    ) -> AsyncGenerator[None]:
        """Run the agent's side of the test (``script``) in the background of the block."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(script)
            yield

    async def receive(self) -> dict[str, Any]:
        """The client's next message."""
        with anyio.fail_after(TIMEOUT):
            message: dict[str, Any] = await self.transport.receive()
        return message

    async def expect(self, method: str) -> dict[str, Any]:
        """The client's next message, which must be a ``method`` request or notification."""
        message = await self.receive()
        assert message.get("method") == method, message
        return message

    async def send(self, message: dict[str, Any]) -> None:
        """Send a raw message (``jsonrpc`` is added)."""
        await self.transport.send({"jsonrpc": "2.0", **message})

    async def reply(self, request: dict[str, Any], result: Any) -> None:
        """Answer a request with a result."""
        await self.send({"id": request["id"], "result": result})

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        """Send a ``session/update`` (wire form)."""
        await self.send(
            {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
        )

    async def handshake(self, session_id: str = "s1", **capabilities: Any) -> None:
        """Answer ``initialize`` and then ``session/new``."""
        initialize = await self.expect("initialize")
        await self.reply(
            initialize, {"protocolVersion": 1, "agentCapabilities": capabilities, "authMethods": []}
        )
        new = await self.expect("session/new")
        await self.reply(new, {"sessionId": session_id})


def agent_text(text: str, message_id: str | None = None) -> dict[str, Any]:
    """An ``agent_message_chunk`` update in wire form."""
    update: dict[str, Any] = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
    }
    if message_id is not None:
        update["messageId"] = message_id
    return update

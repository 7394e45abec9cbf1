"""Elicitation end to end: an engine asks through its turn, accord's client answers by policy.

The agent runtime is served in process and driven by the real client library over the memory
pair; a wire tap records every message, so the tests assert what crosses the wire and in
which order (the suite-wide observer checks each one against the schema).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.client import (
    Accept,
    Cancel,
    Decline,
    DeclineAll,
    ElicitationCallback,
    ElicitationContext,
    ElicitationDecision,
    ElicitationModeName,
    ElicitationPolicy,
    connect,
)
from accord.engines import (
    ElicitationAnswer,
    EngineCapabilities,
    EngineSession,
    SessionContext,
    TextChunk,
    ToolCallEnded,
    ToolCallStarted,
    TurnContext,
    TurnOutput,
    new_id,
)
from accord.errors import LocalProtocolError, RemoteProtocolError, RequestError
from accord.jsonrpc import set_wire_observer
from accord.roles import Client, ClientSideConnection
from accord.schema import (
    CancelNotification,
    ContentBlock,
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationSchema,
    InitializeRequest,
    NewSessionRequest,
    PromptRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    TextContentBlock,
)
from accord.store import MemorySessionStore
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio


FORM = ElicitationSchema.model_validate(
    {
        "type": "object",
        "title": "Who are you?",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 1},
            "age": {"type": "integer", "minimum": 0},
            "colour": {"type": "string", "enum": ["red", "green"], "default": "red"},
        },
        "required": ["name"],
    }
)

Ask = Callable[[TurnContext], Awaitable[ElicitationAnswer]]


class AskingEngine:
    """Each turn runs ``ask`` with the turn's context and says what came back."""

    capabilities = EngineCapabilities()

    def __init__(self, ask: Ask, *, tool_call_id: str | None = None) -> None:
        self.ask = ask
        self.tool_call_id = tool_call_id
        self.answers: list[ElicitationAnswer] = []
        self.errors: list[Exception] = []

    async def open_session(self, context: SessionContext) -> EngineSession:
        return _AskingSession(self)


class _AskingSession(EngineSession):
    def __init__(self, engine: AskingEngine) -> None:
        self.engine = engine

    async def run_turn(
        self, prompt: Sequence[ContentBlock], turn: TurnContext
    ) -> AsyncIterator[TurnOutput]:
        engine = self.engine
        if engine.tool_call_id is not None:
            yield ToolCallStarted(
                tool_call_id=engine.tool_call_id, title="Deploy", status="pending"
            )
        try:
            answer = await engine.ask(turn)
        except Exception as exc:
            engine.errors.append(exc)
            text = f"failed: {type(exc).__name__}"
        else:
            engine.answers.append(answer)
            text = f"answer: {answer.action}"
        if engine.tool_call_id is not None:
            yield ToolCallEnded(tool_call_id=engine.tool_call_id, status="completed")
        yield TextChunk(message_id=new_id(), content=TextContentBlock(text=text))


def ask_form(turn: TurnContext) -> Awaitable[ElicitationAnswer]:
    return turn.elicit_form("Tell me about you", FORM)


@contextmanager
def wire_tap() -> Generator[list[tuple[str, dict[str, Any]]]]:
    """Record every message sent or received in this process, as ``(direction, message)``."""
    tapped: list[tuple[str, dict[str, Any]]] = []

    def tap(direction: str, message: dict[str, Any]) -> None:
        tapped.append((direction, message))
        if previous is not None:
            previous(direction, message)  # type: ignore[arg-type]

    previous = set_wire_observer(tap)  # type: ignore[arg-type]
    try:
        yield tapped
    finally:
        set_wire_observer(previous)


async def run_turn(
    engine: AskingEngine,
    policy: ElicitationPolicy | None,
    *,
    modes: Sequence[ElicitationModeName] = ("form", "url"),
) -> str:
    """One session, one prompt; return the stop reason."""
    runtime = AgentRuntime(engine, store=MemorySessionStore())
    options: dict[str, Any] = {}
    if policy is not None:
        options = {"elicitation_policy": policy, "elicitation_modes": modes}
    with anyio.fail_after(TIMEOUT):
        async with connect(runtime, **options) as conn:
            session = await conn.new_session()
            result = await session.prompt("hello")
    return result.stop_reason


async def test_a_form_is_asked_and_the_accepted_content_reaches_the_engine() -> None:
    seen: list[ElicitationContext] = []

    async def answer(context: ElicitationContext) -> ElicitationDecision:
        seen.append(context)
        return Accept({"name": "Ada", "age": 36})

    engine = AskingEngine(ask_form)
    with wire_tap() as tapped:
        assert await run_turn(engine, ElicitationCallback(answer)) == "end_turn"
    [got] = engine.answers
    assert got.accepted and dict(got.content) == {"name": "Ada", "age": 36}
    [context] = seen
    assert context.mode == "form" and context.message == "Tell me about you"
    assert context.schema == FORM
    requests = [m for d, m in tapped if d == "sent" and m.get("method") == "elicitation/create"]
    [request] = requests
    assert request["params"]["mode"] == "form"
    assert request["params"]["sessionId"]
    assert request["params"]["requestedSchema"] == FORM.to_wire()
    replies = [m["result"] for d, m in tapped if d == "sent" and "action" in m.get("result", {})]
    assert replies == [{"action": "accept", "content": {"name": "Ada", "age": 36}}]


async def test_the_question_follows_what_the_turn_published_before_it() -> None:
    engine = AskingEngine(
        lambda turn: turn.elicit_form("Deploy where?", FORM, tool_call_id="t1"), tool_call_id="t1"
    )
    seen: list[ElicitationContext] = []

    async def answer(context: ElicitationContext) -> ElicitationDecision:
        seen.append(context)
        return Decline()

    with wire_tap() as tapped:
        await run_turn(engine, ElicitationCallback(answer))
    order = [
        m.get("method") + ":" + str(m["params"].get("update", {}).get("sessionUpdate", ""))
        for d, m in tapped
        if d == "sent" and m.get("method") in ("session/update", "elicitation/create")
    ]
    asked = order.index("elicitation/create:")
    # the tool call the question is about reached the client before the question (its own
    # prompt is not echoed back to it)
    assert order[asked - 1] == "session/update:tool_call"
    assert "session/update:user_message_chunk" not in order
    # the client's policy sees the tool call it is about
    [context] = seen
    assert context.tool_call is not None and context.tool_call.title == "Deploy"
    assert context.request.tool_call_id == "t1"


@pytest.mark.parametrize(
    ("policy", "action"),
    [(DeclineAll(), "decline"), (ElicitationCallback(lambda c: _const(Cancel())), "cancel")],
)
async def test_decline_and_cancel_reach_the_engine_without_content(
    policy: ElicitationPolicy, action: str
) -> None:
    engine = AskingEngine(ask_form)
    with wire_tap() as tapped:
        assert await run_turn(engine, policy) == "end_turn"
    [got] = engine.answers
    assert got.action == action and not got.accepted and dict(got.content) == {}
    replies = [
        m["result"] for d, m in tapped if d == "received" and "action" in m.get("result", {})
    ]
    assert replies == [{"action": action}]


async def _const(decision: ElicitationDecision) -> ElicitationDecision:
    return decision


async def test_without_advertised_elicitation_the_engine_is_refused_locally() -> None:
    engine = AskingEngine(ask_form)
    with wire_tap() as tapped:
        assert await run_turn(engine, None) == "end_turn"
    [error] = engine.errors
    assert isinstance(error, LocalProtocolError)
    assert "did not advertise elicitation.form" in str(error) or "advertised no" in str(error)
    assert not [m for _, m in tapped if m.get("method") == "elicitation/create"]


async def test_a_mode_the_client_did_not_advertise_is_refused_before_sending() -> None:
    engine = AskingEngine(lambda turn: turn.elicit_url("Sign in", "https://example.test/login"))
    modes: list[frozenset[str]] = []

    async def ask(turn: TurnContext) -> ElicitationAnswer:
        modes.append(turn.elicitation_modes)
        return await turn.elicit_url("Sign in", "https://example.test/login")

    engine.ask = ask
    with wire_tap() as tapped:
        await run_turn(engine, DeclineAll(), modes=("form",))
    assert modes == [frozenset({"form"})]
    [error] = engine.errors
    assert isinstance(error, LocalProtocolError)
    assert "elicitation.url" in str(error) and "modes advertised: form" in str(error)
    assert not [m for _, m in tapped if m.get("method") == "elicitation/create"]


async def test_a_url_question_then_its_completion_reach_the_client_policy() -> None:
    class UrlPolicy:
        def __init__(self) -> None:
            self.asked: list[ElicitationContext] = []
            self.completed_ids: list[str] = []

        async def decide(self, context: ElicitationContext) -> ElicitationDecision:
            self.asked.append(context)
            return Accept()

        async def completed(self, elicitation_id: str) -> None:
            self.completed_ids.append(elicitation_id)

    async def ask(turn: TurnContext) -> ElicitationAnswer:
        answer = await turn.elicit_url("Sign in to continue", "https://example.test/login")
        assert answer.elicitation_id is not None
        await turn.complete_elicitation(answer.elicitation_id)
        await turn.complete_elicitation(answer.elicitation_id)  # a second time: ignored
        await turn.complete_elicitation("never-asked")  # unknown: ignored
        return answer

    policy = UrlPolicy()
    engine = AskingEngine(ask)
    with wire_tap() as tapped:
        await run_turn(engine, policy, modes=("url",))
    [got] = engine.answers
    assert got.accepted and got.elicitation_id
    [context] = policy.asked
    assert context.mode == "url" and context.url == "https://example.test/login"
    assert context.request.elicitation_id == got.elicitation_id
    # completion reaches the policy once, for the id it accepted, and nothing else
    with anyio.fail_after(TIMEOUT):
        while not policy.completed_ids:
            await anyio.lowlevel.checkpoint()
    assert policy.completed_ids == [got.elicitation_id]
    completes = [m for d, m in tapped if d == "sent" and m.get("method") == "elicitation/complete"]
    assert len(completes) == 3


async def test_a_policy_answer_that_does_not_match_the_form_is_an_error_not_an_answer() -> None:
    engine = AskingEngine(ask_form)
    policy = ElicitationCallback(lambda c: _const(Accept({"age": "old"})))
    await run_turn(engine, policy)
    [error] = engine.errors
    assert isinstance(error, RequestError) and error.code == -32603
    assert error.data == {"problems": ["'name' is required", "'age' must be an integer"]}


class _RawClient(Client):
    """A client at the role level: answers elicitation as told, or holds it until cancelled."""

    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer
        self.held = anyio.Event()
        self.released = anyio.Event()

    async def session_update(self, notification: SessionNotification) -> None:
        return None

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        raise AssertionError("not asked")

    async def create_elicitation(
        self, request: CreateElicitationRequest
    ) -> CreateElicitationResponse:
        if self.answer is not None:
            return CreateElicitationResponse.model_validate(self.answer)
        self.held.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.released.set()
        raise AssertionError("unreachable")


@asynccontextmanager
async def _raw_session(
    engine: AskingEngine, client: _RawClient
) -> AsyncIterator[tuple[ClientSideConnection, str]]:
    runtime = AgentRuntime(engine, store=MemorySessionStore())
    agent_end, client_end = memory_transport_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(runtime.serve, agent_end)
        async with ClientSideConnection(client, client_end) as conn:
            await conn.initialize(
                InitializeRequest(
                    protocol_version=1, client_capabilities=client.client_capabilities()
                )
            )
            new = await conn.new_session(NewSessionRequest(cwd="/tmp", mcp_servers=[]))
            yield conn, new.session_id
        tg.cancel_scope.cancel()


async def test_content_from_the_client_that_does_not_match_is_refused_to_the_engine() -> None:
    engine = AskingEngine(ask_form)
    client = _RawClient({"action": "accept", "content": {"name": "", "colour": "blue"}})
    with anyio.fail_after(TIMEOUT):
        async with _raw_session(engine, client) as (conn, session_id):
            await conn.prompt(PromptRequest(session_id=session_id, prompt=[_text("go")]))
    [error] = engine.errors
    assert isinstance(error, RemoteProtocolError)
    assert "'name' must be at least 1 characters long" in str(error)
    assert "'colour' must be one of 'red', 'green'" in str(error)


@pytest.mark.parametrize("answer", [{"action": "_later_action"}, {"action": "accept"}])
async def test_unknown_actions_read_as_cancel_and_an_empty_accept_needs_no_required(
    answer: dict[str, Any],
) -> None:
    optional = ElicitationSchema.model_validate(
        {"properties": {"note": {"type": "string"}}, "type": "object"}
    )
    engine = AskingEngine(lambda turn: turn.elicit_form("Anything?", optional))
    client = _RawClient(answer)
    with anyio.fail_after(TIMEOUT):
        async with _raw_session(engine, client) as (conn, session_id):
            await conn.prompt(PromptRequest(session_id=session_id, prompt=[_text("go")]))
    [got] = engine.answers
    assert got.action == ("cancel" if answer["action"] != "accept" else "accept")


async def test_a_cancelled_turn_withdraws_the_open_question_and_the_engine_sees_cancel() -> None:
    engine = AskingEngine(ask_form)
    client = _RawClient(None)  # never answers
    with wire_tap() as tapped, anyio.fail_after(TIMEOUT):
        async with _raw_session(engine, client) as (conn, session_id):
            async with anyio.create_task_group() as tg:
                stops: list[str] = []

                async def prompt() -> None:
                    response = await conn.prompt(
                        PromptRequest(session_id=session_id, prompt=[_text("go")])
                    )
                    stops.append(response.stop_reason)

                tg.start_soon(prompt)
                await client.held.wait()
                await conn.cancel(CancelNotification(session_id=session_id))
            await client.released.wait()
    assert stops == ["cancelled"]
    assert [a.action for a in engine.answers] == ["cancel"]
    [create] = [m for d, m in tapped if d == "sent" and m.get("method") == "elicitation/create"]
    cancels = [
        m
        for d, m in tapped
        if d == "sent"
        and m.get("method") == "$/cancel_request"
        and m["params"]["requestId"] == create["id"]
    ]
    assert cancels, "the runtime withdraws its question with $/cancel_request"
    [reply] = [
        m
        for d, m in tapped
        if d == "sent" and m.get("id") == create["id"] and _answers_elicitation(m)
    ]
    assert reply["error"]["code"] == -32800


async def test_cancelling_on_the_client_answers_the_open_question_cancel() -> None:
    asked = anyio.Event()

    async def hold(context: ElicitationContext) -> ElicitationDecision:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    engine = AskingEngine(ask_form)
    runtime = AgentRuntime(engine, store=MemorySessionStore())
    with wire_tap() as tapped, anyio.fail_after(TIMEOUT):
        async with connect(runtime, elicitation_policy=ElicitationCallback(hold)) as conn:
            session = await conn.new_session()
            async with anyio.create_task_group() as tg:
                results: list[str] = []

                async def prompt() -> None:
                    results.append((await session.prompt("go")).stop_reason)

                tg.start_soon(prompt)
                await asked.wait()
                await session.cancel()
    assert results == ["cancelled"]
    assert [a.action for a in engine.answers] == ["cancel"]
    [create] = [m for d, m in tapped if d == "sent" and m.get("method") == "elicitation/create"]
    [reply] = [
        m
        for d, m in tapped
        if d == "sent" and m.get("id") == create["id"] and _answers_elicitation(m)
    ]
    # the client answers "cancel" itself, unless the agent's $/cancel_request was first
    assert reply.get("result") == {"action": "cancel"} or reply["error"]["code"] == -32800


def _answers_elicitation(message: dict[str, Any]) -> bool:
    """Whether a message is an answer to an elicitation (ids of both sides overlap)."""
    return "error" in message or "action" in message.get("result", {})


def _text(value: str) -> ContentBlock:
    return TextContentBlock(text=value)

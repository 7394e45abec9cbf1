"""Request-scoped elicitation: an engine asks the user while a session opens.

``SessionContext.elicitation`` is tied to the client's ``session/new`` (or load, resume,
fork) request: ``elicitation/create`` carries that request's id as ``requestId`` and no
``sessionId`` (the client does not know the session yet), the answer reaches the engine
before the response, and once the session is open the object refuses to ask. A client that
advertised no elicitation gets none. Over the memory pair, accord's client answering.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT

import accord.jsonrpc
from accord.agent import AgentRuntime
from accord.client import AcceptDefaults, connect
from accord.engines import ElicitationAnswer, EngineSession, SessionContext
from accord.errors import LocalProtocolError
from accord.schema import ElicitationSchema
from accord.store import MemorySessionStore
from accord.testing import ScriptedEngine

pytestmark = pytest.mark.anyio

SCHEMA = ElicitationSchema.model_validate(
    {
        "type": "object",
        "properties": {"plan": {"type": "string", "enum": ["small", "large"], "default": "small"}},
        "required": ["plan"],
    }
)


class AskingEngine(ScriptedEngine):
    """Asks which plan while each session opens; remembers the contexts and answers."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[ElicitationAnswer | None] = []
        self.contexts: list[SessionContext] = []

    async def open_session(self, context: SessionContext) -> EngineSession:
        self.contexts.append(context)
        answer = None
        if context.elicitation is not None:
            answer = await context.elicitation.form("Which plan?", SCHEMA)
        self.answers.append(answer)
        return await super().open_session(context)


async def test_an_engine_asks_tied_to_the_session_new_request() -> None:
    engine = AskingEngine()
    seen: list[tuple[str, dict[str, Any]]] = []
    previous: accord.jsonrpc.WireObserver | None = None

    def observe(direction: Any, message: Any) -> None:
        if previous is not None:
            previous(direction, message)  # the suite's schema check goes on
        if isinstance(message, dict) and message.get("method") in (
            "session/new",
            "elicitation/create",
        ):
            seen.append((direction, message))

    previous = accord.jsonrpc.set_wire_observer(observe)
    try:
        runtime = AgentRuntime(engine, store=MemorySessionStore())
        with anyio.fail_after(TIMEOUT):
            async with connect(runtime, elicitation_policy=AcceptDefaults()) as conn:
                session = await conn.new_session("/")
    finally:
        accord.jsonrpc.set_wire_observer(previous)

    (answer,) = engine.answers
    assert answer is not None and answer.action == "accept"
    assert dict(answer.content) == {"plan": "small"}
    sent_new = next(m for d, m in seen if d == "sent" and m["method"] == "session/new")
    asked = next(m for d, m in seen if d == "sent" and m["method"] == "elicitation/create")
    assert asked["params"]["requestId"] == sent_new["id"]
    assert "sessionId" not in asked["params"]
    assert asked["params"]["message"] == "Which plan?"
    # Once the session is open, the request is answered: no more questions tied to it.
    (context,) = engine.contexts
    assert context.elicitation is not None and session.session_id == context.session_id
    with pytest.raises(LocalProtocolError, match="has been answered"):
        await context.elicitation.form("Again?", SCHEMA)


async def test_without_elicitation_the_engine_gets_none() -> None:
    engine = AskingEngine()
    runtime = AgentRuntime(engine, store=MemorySessionStore())
    with anyio.fail_after(TIMEOUT):
        async with connect(runtime) as conn:
            await conn.new_session("/")
    assert engine.answers == [None]
    assert engine.contexts[0].elicitation is None

"""The client's side of elicitation on the wire: advertising, refusals, scopes, policies.

A wire-level agent sends exactly the messages each test needs (including ones accord's own
agent would refuse to send), and the tests assert the client's answers message by message.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _client_agents import WireAgent
from helpers.timeouts import TIMEOUT

from accord.client import (
    Accept,
    AcceptDefaults,
    Decline,
    DeclineAll,
    ElicitationCallback,
    ElicitationContext,
    ElicitationDecision,
    connect,
)
from accord.schema import CreateElicitationRequest, ElicitationSchema

pytestmark = pytest.mark.anyio

FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "enum": ["eu", "us"], "default": "eu"},
        "replicas": {"type": "integer", "minimum": 1, "default": 2},
    },
    "required": ["region"],
}


def form_request(request_id: int, **scope: Any) -> dict[str, Any]:
    params = {"message": "Where to?", "mode": "form", "requestedSchema": FORM, **scope}
    return {"id": request_id, "method": "elicitation/create", "params": params}


async def test_capabilities_are_advertised_only_with_a_policy_and_only_its_modes(
    wire: WireAgent,
) -> None:
    seen: list[dict[str, Any]] = []

    async def agent_side() -> None:
        initialize = await wire.expect("initialize")
        seen.append(initialize["params"]["clientCapabilities"])
        await wire.reply(initialize, {"protocolVersion": 1})

    async with wire.playing(agent_side), connect(wire.client_end):
        pass
    assert "elicitation" not in seen[0]


@pytest.mark.parametrize(
    ("modes", "advertised"),
    [(("form", "url"), {"form": {}, "url": {}}), (("url",), {"url": {}})],
)
async def test_the_given_modes_are_advertised(
    wire: WireAgent, modes: tuple[str, ...], advertised: dict[str, Any]
) -> None:
    seen: list[dict[str, Any]] = []

    async def agent_side() -> None:
        initialize = await wire.expect("initialize")
        seen.append(initialize["params"]["clientCapabilities"])
        await wire.reply(initialize, {"protocolVersion": 1})

    async with (
        wire.playing(agent_side),
        connect(wire.client_end, elicitation_policy=DeclineAll(), elicitation_modes=modes),  # type: ignore[arg-type]
    ):
        pass
    assert seen[0]["elicitation"] == advertised


async def test_bad_modes_are_refused_before_connecting() -> None:
    with pytest.raises(ValueError, match="at least one mode"):
        async with connect(["/nonexistent"], elicitation_policy=DeclineAll(), elicitation_modes=()):
            pass
    with pytest.raises(ValueError, match="unknown elicitation modes: sms"):
        async with connect(
            ["/nonexistent"],
            elicitation_policy=DeclineAll(),
            elicitation_modes=("form", "sms"),  # type: ignore[arg-type]
        ):
            pass


@pytest.mark.wire_unchecked("sends elicitation requests the schema does not allow")
async def test_requests_the_client_cannot_serve_are_refused_with_clear_errors(
    wire: WireAgent,
) -> None:
    answers: list[dict[str, Any]] = []
    done = anyio.Event()
    bad: list[dict[str, Any]] = [
        # a mode this client did not advertise
        {
            "id": 101,
            "method": "elicitation/create",
            "params": {
                "message": "Open",
                "mode": "url",
                "url": "https://example.test",
                "elicitationId": "e1",
                "sessionId": "s1",
            },
        },
        # no scope at all
        form_request(102),
        # a session this client does not know
        form_request(103, sessionId="nope"),
        # form mode without its schema
        {
            "id": 104,
            "method": "elicitation/create",
            "params": {"message": "?", "mode": "form", "sessionId": "s1"},
        },
    ]

    async def agent_side() -> None:
        await wire.handshake("s1")
        for message in bad:
            await wire.send(message)
            answers.append(await wire.receive())
        done.set()

    async with (
        wire.playing(agent_side),
        connect(
            wire.client_end, elicitation_policy=DeclineAll(), elicitation_modes=("form",)
        ) as conn,
    ):
        await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            await done.wait()
    codes = [(a["id"], a["error"]["code"]) for a in answers]
    assert codes == [(101, -32602), (102, -32602), (103, -32002), (104, -32602)]
    assert "mode 'url' is not supported by this client" in answers[0]["error"]["message"]
    assert "sessionId or a requestId" in answers[1]["error"]["message"]
    assert "requestedSchema" in answers[3]["error"]["message"]


async def test_a_request_scoped_question_is_answered_without_a_session(wire: WireAgent) -> None:
    answers: list[dict[str, Any]] = []
    seen: list[ElicitationContext] = []

    async def answer(context: ElicitationContext) -> ElicitationDecision:
        seen.append(context)
        return await AcceptDefaults().decide(context)

    async def agent_side() -> None:
        initialize = await wire.expect("initialize")
        # the agent asks while initialize is still open, scoped to that request
        await wire.send(form_request(7, requestId=initialize["id"]))
        answers.append(await wire.receive())
        await wire.reply(initialize, {"protocolVersion": 1})

    async with (
        wire.playing(agent_side),
        connect(wire.client_end, elicitation_policy=ElicitationCallback(answer)),
    ):
        pass
    assert answers == [
        {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {"action": "accept", "content": {"region": "eu", "replicas": 2}},
        }
    ]
    [context] = seen
    assert context.session_id is None and context.request_id == 0


async def test_accept_defaults_declines_when_a_required_field_has_no_default() -> None:
    form = ElicitationSchema.model_validate(
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    )
    context = ElicitationContext(
        request=CreateElicitationRequest(
            message="?", mode="form", requested_schema=form, session_id="s"
        )
    )
    assert await AcceptDefaults().decide(context) == Decline()
    url = ElicitationContext(
        request=CreateElicitationRequest(
            message="?", mode="url", url="https://x.test", elicitation_id="e", session_id="s"
        )
    )
    assert await AcceptDefaults().decide(url) == Decline()
    assert await DeclineAll().decide(url) == Decline()
    assert Accept().content is None

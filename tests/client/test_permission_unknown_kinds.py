"""Permission options whose ``kind`` is missing, null or not one the protocol defines.

Agents bend the schema here; the client still asks: such an option keeps its id and name, reads
``kind == "unknown"``, can be chosen by a person (the agent gets its id back) and is never picked
by a kind-based policy. Options broken in other ways (no id, a name that is not a string,
repeated ids) are still refused with -32602.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _client_agents import WireAgent
from helpers.timeouts import TIMEOUT

from accord.client import (
    AllowAll,
    AskCallback,
    DenyAll,
    PermissionContext,
    PermissionDecision,
    PermissionPolicy,
    Rule,
    Rules,
    Select,
    connect,
)

pytestmark = pytest.mark.anyio

#: One option of each odd shape, then a well-formed refusal.
ODD_OPTIONS: list[dict[str, Any]] = [
    {"optionId": "no-kind", "name": "Missing kind"},
    {"optionId": "null-kind", "name": "Null kind", "kind": None},
    {"optionId": "sometimes", "name": "Allow sometimes", "kind": "allow_sometimes"},
    {"optionId": "number-kind", "name": "Numbered kind", "kind": 7},
]
REFUSE = {"optionId": "no", "name": "No", "kind": "reject_once"}


async def ask_once(
    wire: WireAgent, options: list[dict[str, Any]], policy: PermissionPolicy
) -> dict[str, Any]:
    """Send one ``session/request_permission`` during a turn; the client's answer to it."""
    answers: list[dict[str, Any]] = []

    async def agent_side() -> None:
        await wire.handshake("s1")
        prompt = await wire.expect("session/prompt")
        await wire.send(
            {
                "id": 7,
                "method": "session/request_permission",
                "params": {
                    "sessionId": "s1",
                    "toolCall": {"toolCallId": "t1", "title": "Run it", "kind": "execute"},
                    "options": options,
                },
            }
        )
        answers.append(await wire.receive())
        await wire.reply(prompt, {"stopReason": "end_turn"})

    async with wire.playing(agent_side), connect(wire.client_end, permission_policy=policy) as conn:
        session = await conn.new_session()
        with anyio.fail_after(TIMEOUT):
            await session.prompt("go")
    [answer] = answers
    assert answer["id"] == 7
    return answer


@pytest.mark.wire_unchecked("the agent sends permission options without a valid kind")
@pytest.mark.parametrize("chosen", ["no-kind", "null-kind", "sometimes", "number-kind"])
async def test_an_option_of_unknown_kind_is_offered_and_its_id_sent_back(
    wire: WireAgent, chosen: str
) -> None:
    seen: list[list[tuple[str, str, str]]] = []

    async def ask(context: PermissionContext) -> PermissionDecision:
        seen.append([(o.option_id, o.name, o.kind) for o in context.options])
        return Select(chosen)

    answer = await ask_once(wire, [*ODD_OPTIONS, REFUSE], AskCallback(ask))
    assert seen == [
        [
            ("no-kind", "Missing kind", "unknown"),
            ("null-kind", "Null kind", "unknown"),
            ("sometimes", "Allow sometimes", "unknown"),
            ("number-kind", "Numbered kind", "unknown"),
            ("no", "No", "reject_once"),
        ]
    ]
    assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": chosen}}


@pytest.mark.wire_unchecked("the agent sends permission options without a valid kind")
async def test_kind_policies_never_pick_an_unknown_kind(wire: WireAgent) -> None:
    answer = await ask_once(wire, ODD_OPTIONS, AllowAll())
    assert answer["result"] == {"outcome": {"outcome": "cancelled"}}


@pytest.mark.wire_unchecked("the agent sends permission options without a valid kind")
async def test_deny_picks_the_known_refusal_among_unknown_kinds(wire: WireAgent) -> None:
    answer = await ask_once(wire, [*ODD_OPTIONS, REFUSE], DenyAll(always=True))
    assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "no"}}


@pytest.mark.wire_unchecked("the agent sends permission options without a valid kind")
async def test_a_rule_that_allows_by_kind_cancels_when_only_unknown_kinds_are_offered(
    wire: WireAgent,
) -> None:
    rules = Rules([Rule("allow", kind="execute")], fallback=AllowAll())
    answer = await ask_once(wire, ODD_OPTIONS, rules)
    assert answer["result"] == {"outcome": {"outcome": "cancelled"}}


@pytest.mark.wire_unchecked("the agent sends malformed permission options")
@pytest.mark.parametrize(
    ("options", "field"),
    [
        ([{"name": "No id", "kind": "allow_once"}], "options.0.optionId"),
        ([{"optionId": "a", "name": 3, "kind": "allow_once"}], "options.0.name"),
        ([{"optionId": "a", "kind": "allow_once"}], "options.0.name"),
        (["allow"], "options.0"),
    ],
)
async def test_otherwise_malformed_options_are_still_refused(
    wire: WireAgent, options: list[Any], field: str
) -> None:
    answer = await ask_once(wire, options, AllowAll())
    error = answer["error"]
    assert error["code"] == -32602
    assert field in error["message"]


@pytest.mark.wire_unchecked("the agent sends permission options without a valid kind")
async def test_repeated_ids_are_refused_even_with_unknown_kinds(wire: WireAgent) -> None:
    options = [{"optionId": "x", "name": "One"}, {"optionId": "x", "name": "Two", "kind": "?"}]
    answer = await ask_once(wire, options, AllowAll())
    assert answer["error"]["code"] == -32602
    assert "repeated: 'x'" in answer["error"]["message"]

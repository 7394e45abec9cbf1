"""accord's client runtime against every attack of accord.testing's hostile agent, over pipes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from accord.client import AllowAll, connect
from accord.testing import HOSTILE_ATTACKS, HostileReport, pipe_transport_pair, run_hostile_agent

pytestmark = [pytest.mark.anyio, pytest.mark.wire_unchecked("a hostile agent on purpose")]


async def _play(attack: str, root: Path) -> HostileReport:
    client_end, agent_end = pipe_transport_pair()
    reports: list[HostileReport] = []
    done = anyio.Event()

    async def agent() -> None:
        reports.append(await run_hostile_agent(agent_end, attack))
        done.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent)
            async with connect(
                client_end, fs=True, terminals=True, permission_policy=AllowAll()
            ) as conn:
                session = await conn.new_session(root)
                result = await session.prompt("go")
                assert result.stop_reason == "end_turn"
                await done.wait()
    await agent_end.aclose()
    return reports[0]


@pytest.mark.parametrize("attack", sorted(HOSTILE_ATTACKS))
async def test_the_client_survives_the_attack(attack: str, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    report = await _play(attack, root)
    assert report.alive
    for exchange in report.exchanges:
        assert exchange.answer is not None, f"unanswered: {exchange.request}"
        if exchange.request["method"] in ("fs/read_text_file", "fs/write_text_file"):
            assert "error" in exchange.answer, exchange
        if exchange.request["method"] == "terminal/create":
            assert exchange.answer["error"]["code"] == -32602, exchange
    assert not (tmp_path / "hostile-escape.txt").exists()
    if attack == "ambiguous-permission":
        first = report.exchanges[0].answer
        assert first is not None and first["error"]["code"] == -32602

"""accord's client library against every attack of accord.testing's hostile agent, over pipes.

Twice: the kit played in this process over a pair of OS pipes, and the kit's agent command
(``python -m accord.testing.hostile_agent``) spawned as a real subprocess over its stdio, the
way a user points a client at it. The line limit is lowered on both ends (1 MiB) so the
byte-level attacks (a line over the limit, a line that never ends) stay quick.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.client import AllowAll, connect
from accord.testing import (
    HOSTILE_ATTACKS,
    HostileExchange,
    HostileOptions,
    HostileReport,
    pipe_transport_pair,
    run_hostile_agent,
)
from accord.transports import spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.wire_unchecked("a hostile agent on purpose")]

LIMIT = 1024 * 1024
OPTIONS = HostileOptions(max_message_bytes=LIMIT, flood=5_000)


def _command(*args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "accord.testing.hostile_agent",
        f"--max-message-bytes={LIMIT}",
        f"--flood={OPTIONS.flood}",
        *args,
    ]


async def _play(attack: str, root: Path) -> tuple[HostileReport, str]:
    client_end, agent_end = pipe_transport_pair(max_message_bytes=LIMIT)
    reports: list[HostileReport] = []
    done = anyio.Event()

    async def agent() -> None:
        reports.append(await run_hostile_agent(agent_end, attack, OPTIONS))
        done.set()

    with anyio.fail_after(TIMEOUT):
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
    return reports[0], result.text


def _judge(report: HostileReport, text: str, tmp_path: Path) -> None:
    """What every attack must leave: a live client, every request answered, nothing escaped."""
    attack = report.attack
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
    if attack == "huge-message":  # answered by id, as too large, not left waiting
        [exchange] = report.exchanges
        assert exchange.answer is not None and exchange.answer["error"]["code"] == -32600
    if attack == "slow-message":  # pieced together: the chunk shown, the request answered
        assert "trickled" in text
        [exchange] = report.exchanges
        assert exchange.answer is not None and exchange.answer["error"]["code"] == -32601
    if attack == "notification-flood":  # every one, in order
        assert text == "".join(f"{index} " for index in range(OPTIONS.flood))


@pytest.mark.parametrize("attack", sorted(HOSTILE_ATTACKS))
async def test_the_client_survives_the_attack(attack: str, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    report, text = await _play(attack, root)
    _judge(report, text, tmp_path)


@pytest.mark.parametrize("attack", sorted(HOSTILE_ATTACKS))
async def test_the_client_survives_the_agent_command_over_stdio(
    attack: str, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    written = tmp_path / "report.json"
    command = _command("--attack", attack, f"--report={written}")
    with anyio.fail_after(SCENARIO_TIMEOUT):  # floods of megabytes through real pipes
        async with (
            spawn_agent(command, max_message_bytes=LIMIT) as transport,
            connect(transport, fs=True, terminals=True, permission_policy=AllowAll()) as conn,
        ):
            session = await conn.new_session(root)
            result = await session.prompt("go")
            assert result.stop_reason == "end_turn"
            await transport.process.wait()  # the client answers its ping, then the agent ends
    [data] = json.loads(written.read_text())
    report = HostileReport(data["attack"], data["sessionId"], alive=data["alive"])
    report.exchanges.extend(HostileExchange(e["request"], e["answer"]) for e in data["exchanges"])
    _judge(report, result.text, tmp_path)


async def test_without_an_attack_the_command_plays_every_attack_one_per_prompt(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    written = tmp_path / "report.json"
    with anyio.fail_after(2 * SCENARIO_TIMEOUT):  # every attack in turn, one prompt each
        async with (
            # A smaller flood: the attacks one by one are tested above; this is the sequence.
            spawn_agent(
                _command(f"--report={written}", "--flood=200"), max_message_bytes=LIMIT
            ) as transport,
            connect(transport, fs=True, terminals=True, permission_policy=AllowAll()) as conn,
        ):
            session = await conn.new_session(root)
            for _ in HOSTILE_ATTACKS:
                assert (await session.prompt("go")).stop_reason == "end_turn"
            await transport.process.wait()
        assert transport.process.returncode == 0  # alive after every attack
    reports = json.loads(written.read_text())
    assert [report["attack"] for report in reports] == list(HOSTILE_ATTACKS)
    assert all(report["alive"] for report in reports)


async def test_the_command_refuses_an_unknown_attack(tmp_path: Path) -> None:
    result = await anyio.run_process(_command("--attack", "no-such"), check=False)
    assert result.returncode == 2
    assert b"invalid choice: 'no-such'" in result.stderr
    listed = await anyio.run_process(_command("--list"))
    assert listed.stdout.decode().split() == sorted(HOSTILE_ATTACKS)


def _written_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar")


def _resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_line_that_never_ends_neither_fills_memory_nor_stops_a_clean_close(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    before = _resident_bytes()
    command = _command("--attack", "endless-line", "--never-end")
    with anyio.fail_after(SCENARIO_TIMEOUT):  # floods of megabytes through real pipes
        async with (
            spawn_agent(command, max_message_bytes=LIMIT) as transport,
            connect(transport) as conn,
        ):
            session = await conn.new_session(root)
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.prompt, "go")
                # The agent writes only as fast as the client reads (a pipe holds 64 KiB):
                # the client keeps reading the line, far past its limit, without holding it.
                # Another process's progress can only be polled.
                while _written_bytes(transport.process.pid) < 64 * LIMIT:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
                assert _resident_bytes() - before < 32 * LIMIT
                tg.cancel_scope.cancel()
        # Leaving both closed the pipes: the agent's endless write failed and it ended.
        assert transport.process.returncode is not None

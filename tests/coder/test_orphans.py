"""Commands the coder started die with it, even when it is killed with SIGKILL.

A real ``accord serve`` runs a command (locally: the client offers no terminal) that starts
children, one of them ignoring SIGTERM; the agent is then killed with SIGKILL mid-command, and
the command's whole process group must be gone within a bound.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from helpers.timeouts import TIMEOUT

from accord.client import AllowAll, connect
from accord.errors import AcpError
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.subprocess,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc"),
]


def live_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are not zombies (a dead child its parent left)."""
    members: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            members.append(int(entry))
    return members


async def test_a_killed_agent_takes_its_commands_with_it(project: Path, tmp_path: Path) -> None:
    report = tmp_path / "ids"
    os.mkfifo(report)
    command = f"sh -c 'trap \"\" TERM; sleep 300' & sleep 300 & echo $$ $PPID > {report}; wait"
    run = {"command": command, "timeout_seconds": 600}
    script = [ScriptedReply(tool_calls=[ScriptedToolCall(name="run_command", arguments=run)])]
    with FakeOpenAIServer(script) as server:
        agent = [
            sys.executable,
            "-m",
            "accord.cli",
            "serve",
            "--store",
            str(tmp_path / "sessions.sqlite3"),
            "--model",
            "openai:fake-model",
            "--base-url",
            server.base_url,
        ]
        env = {"OPENAI_API_KEY": "test", "ACCORD_MODEL": "", "ACCORD_BASE_URL": ""}
        with anyio.fail_after(TIMEOUT):
            async with connect(agent, cwd=project, env=env, permission_policy=AllowAll()) as conn:
                session = await conn.new_session(project)
                turn = session.stream("run it")
                ids = await anyio.to_thread.run_sync(report.read_text)
                pgid, agent_pid = (int(n) for n in ids.split())
                assert len(live_members(pgid)) >= 3  # the shell and its two children
                os.kill(agent_pid, signal.SIGKILL)
                with pytest.raises(AcpError):
                    async for _ in turn:
                        pass
    try:
        with anyio.fail_after(TIMEOUT):  # the watchdog's grace is 2 s
            while live_members(pgid):  # noqa: ASYNC110 (not our children: nothing to wait on)
                await anyio.sleep(0.1)
    finally:
        try:
            os.killpg(pgid, signal.SIGKILL)  # never leave them running, even when failing
        except ProcessLookupError:
            pass

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from helpers.processes import gone
from helpers.timeouts import TIMEOUT

from accord.coder._process import (
    DEFAULT_TIMEOUT_SECONDS,
    GATE,
    MAX_TIMEOUT_SECONDS,
    CommandResult,
    clamp_timeout,
    run_local,
    shell_argv,
)
from accord.transports import TailBuffer

pytestmark = pytest.mark.subprocess


# No model code here: both backends, over the asyncio-only default of tests/coder.
both_backends = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])


@pytest.mark.anyio
@both_backends
async def test_output_and_exit_code(tmp_path: Path) -> None:
    result = await run_local(
        "echo out; echo err >&2; pwd; exit 3", cwd=str(tmp_path), time_limit=10
    )
    assert result.exit_code == 3
    assert result.output.splitlines() == ["out", "err", str(tmp_path)]
    assert result.for_model(10).endswith("[exit code 3]")
    assert not result.timed_out


@pytest.mark.anyio
@both_backends
async def test_a_command_over_its_time_limit_is_killed(tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        result = await run_local(
            "echo started; sleep 30 & echo $! > pid; wait", cwd=str(tmp_path), time_limit=0.5
        )
    assert result.timed_out
    assert result.exit_code is None
    assert "timed out after 0.5 s" in result.for_model(0.5)
    pid = int((tmp_path / "pid").read_text())
    assert await anyio.to_thread.run_sync(gone, pid)  # the background child went too


@pytest.mark.anyio
@both_backends
async def test_cancelling_kills_the_process_group(tmp_path: Path) -> None:
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    run = functools.partial(run_local, "echo $$ > pid; sleep 30", cwd=str(tmp_path), time_limit=60)
    pid = 0
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            pid = int(await anyio.to_thread.run_sync(fifo.read_text))  # blocks until written
            group.cancel_scope.cancel()
    assert await anyio.to_thread.run_sync(gone, pid)


@pytest.mark.anyio
@both_backends
async def test_a_shell_whose_gate_closes_unopened_runs_nothing(tmp_path: Path) -> None:
    # What an agent killed before registering the group leaves: the gate's pipe at end of file.
    marker = tmp_path / "ran"
    with anyio.fail_after(TIMEOUT):
        process = await anyio.open_process(
            shell_argv(GATE + f"touch {marker}"),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        async with process:
            assert process.stdin is not None
            await process.stdin.aclose()
            assert await process.wait() == 125
    assert not marker.exists()


@pytest.mark.anyio
@both_backends
@pytest.mark.skipif(not Path("/proc/self/fd/0").exists(), reason="reads /proc")
async def test_the_command_reads_dev_null_past_the_gate(tmp_path: Path) -> None:
    result = await run_local(
        "readlink /proc/$$/fd/0; read -r line; echo read=$?", cwd=str(tmp_path), time_limit=10
    )
    assert result.output.splitlines() == ["/dev/null", "read=1"]
    assert result.exit_code == 0


@pytest.mark.anyio
@both_backends
async def test_output_keeps_the_newest_bytes(tmp_path: Path) -> None:
    result = await run_local(
        f"{sys.executable} -c \"print('x' * 1000); print('verdict')\"",
        cwd=str(tmp_path),
        time_limit=10,
        output_limit=100,
    )
    assert result.truncated
    assert result.output.endswith("verdict\n")
    assert len(result.output.encode()) <= 100
    assert result.for_model(10).startswith("[… 909 earlier bytes of output dropped]")


@pytest.mark.anyio
@both_backends
async def test_a_signal_is_reported(tmp_path: Path) -> None:
    result = await run_local("kill -TERM $$", cwd=str(tmp_path), time_limit=10)
    assert result.signal == signal.Signals.SIGTERM.name or result.exit_code == 143


def test_tail_buffer_cuts_at_a_character_boundary() -> None:
    buffer = TailBuffer(limit=5)
    buffer.write("aé€".encode())  # 1 + 2 + 3 bytes
    assert buffer.dropped == 1
    assert buffer.text() == "é€"
    buffer.write(b"z")
    assert buffer.text() == "€z"


def test_clamp_timeout() -> None:
    assert clamp_timeout(None) == DEFAULT_TIMEOUT_SECONDS
    assert clamp_timeout(0) == DEFAULT_TIMEOUT_SECONDS
    assert clamp_timeout(5) == 5
    assert clamp_timeout(10_000) == MAX_TIMEOUT_SECONDS


def test_results_for_the_model() -> None:
    assert CommandResult(command="c", output="").for_model(1) == "[no output]"
    killed = CommandResult(command="c", output="x\n", signal="SIGKILL")
    assert killed.for_model(1) == "x\n[killed by SIGKILL]"
    cut = CommandResult(command="c", output="y", truncated=True)
    assert cut.for_model(1) == "[… earlier bytes of output dropped]\ny"

"""Spawned agents: ``spawn_agent`` and ``stdio_transport`` with real child processes.

The children are the scripts in ``tests/helpers/``, run with this interpreter:
``echo_agent.py`` (stdlib only, no accord) and ``stdio_agent.py`` (an accord ``Connection``
over its own stdin and stdout). Children may sleep; the tests never do.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.timeouts import TIMEOUT

from accord.errors import AgentProcessExited, ConnectionClosed, MethodNotFound
from accord.jsonrpc import Connection
from accord.transports import spawn_agent
from accord.transports._subprocess import EXIT_WAIT_TIMEOUT, SHUTDOWN_GRACE

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

HELPERS = Path(__file__).resolve().parent.parent / "helpers"
ECHO_AGENT = [sys.executable, str(HELPERS / "echo_agent.py")]
#: The echo agent's last stderr line after a flood (``echo_agent.FLOOD_END``).
FLOOD_END = "END-OF-FLOOD"
#: The stdio agent's last stderr line when its stdin closes (``stdio_agent.GOODBYE``).
GOODBYE = "stdio agent: stdin closed, exiting"


def stdio_agent(backend: str) -> list[str]:
    return [sys.executable, str(HELPERS / "stdio_agent.py"), backend]


def open_pipes() -> set[str]:
    """The pipes this process holds open, by inode (``pipe:[N]``), whatever fd they sit on.

    Counting descriptors by number would also see files other tests' leftovers close or open
    in between (a collected object closing its socket); only a pipe the spawn made and kept
    would add an inode here.
    """
    pipes: set[str] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed between the listing and the read
            continue
        if target.startswith("pipe:"):
            pipes.add(target)
    return pipes


async def spawn_and_leave(command: list[str], **kwargs: Any) -> None:
    async with spawn_agent(command, **kwargs):
        pass


# ----------------------------------------------------------------- spawning


async def test_echo_agent_answers_concurrent_requests() -> None:
    results: dict[int, Any] = {}
    with anyio.fail_after(TIMEOUT):
        async with spawn_agent(ECHO_AGENT) as transport, Connection(transport) as conn:

            async def call(n: int) -> None:
                results[n] = await conn.request("echo", {"n": n, "text": "caf\u00e9 \u2028"})

            async with anyio.create_task_group() as tg:
                for n in range(20):
                    tg.start_soon(call, n)
            blob = "\u00e9" * 500_000
            assert await conn.request("echo", {"blob": blob}) == {"blob": blob}
            with pytest.raises(MethodNotFound):
                await conn.request("no/such/method")
            started = time.monotonic()
        stopped_in = time.monotonic() - started
    assert results == {n: {"n": n, "text": "caf\u00e9 \u2028"} for n in range(20)}
    assert transport.returncode == 0, "a well-behaved agent exits when its stdin closes"
    assert stopped_in < SHUTDOWN_GRACE, "no signal was needed"


async def test_env_and_cwd_are_honoured(tmp_path: Path) -> None:
    env = {"ACCORD_TEST_VALUE": "caf\u00e9-42"}
    with anyio.fail_after(TIMEOUT):
        async with (
            spawn_agent(ECHO_AGENT, cwd=tmp_path, env=env) as transport,
            Connection(transport) as conn,
        ):
            seen = await conn.request("env", {"name": "ACCORD_TEST_VALUE"})
            cwd = await conn.request("cwd")
    assert seen["value"] == "caf\u00e9-42"
    assert "PATH" not in os.environ or "PATH" in seen["keys"], "the environment is inherited"
    assert await anyio.Path(cwd).resolve() == await anyio.Path(tmp_path).resolve()


async def test_env_without_inheritance() -> None:
    with anyio.fail_after(TIMEOUT):
        async with (
            spawn_agent(ECHO_AGENT, env={"ONLY_THIS": "1"}, inherit_env=False) as transport,
            Connection(transport) as conn,
        ):
            seen = await conn.request("env", {"name": "ONLY_THIS"})
    assert seen["value"] == "1"
    # Python itself may set LC_CTYPE (PEP 538 locale coercion); nothing else comes from us.
    assert set(seen["keys"]) - {"LC_CTYPE"} == {"ONLY_THIS"}


async def test_nonexistent_command_raises_file_not_found(tmp_path: Path) -> None:
    before = open_pipes()
    with pytest.raises(FileNotFoundError):
        await spawn_and_leave([str(tmp_path / "no-such-agent")])
    with pytest.raises(FileNotFoundError):
        await spawn_and_leave(ECHO_AGENT, cwd=tmp_path / "no-such-directory")
    assert open_pipes() <= before, "the pipes made for the child are closed again"


async def test_empty_command_is_rejected() -> None:
    with pytest.raises(ValueError, match="needs a command"):
        await spawn_and_leave([])


# ----------------------------------------------------------------- faults


async def test_stderr_flood_does_not_hang_and_the_tail_is_bounded() -> None:
    half = 2_500_000  # before the first request, and again while answering one: 5 MB in all
    tail_limit = 4096
    with anyio.fail_after(TIMEOUT):
        async with (
            spawn_agent(
                [*ECHO_AGENT, "--stderr-flood", str(half)], stderr_tail_bytes=tail_limit
            ) as transport,
            Connection(transport) as conn,
        ):
            assert await conn.request("flood", {"bytes": half}) == "flooded"
            assert await conn.request("echo", [1]) == [1]
            with pytest.raises(AgentProcessExited) as info:
                await conn.request("crash", {"code": 0, "message": "goodbye after the flood"})
    assert transport.stderr_bytes >= 2 * half
    tail = info.value.stderr_tail
    assert len(tail) <= tail_limit
    assert tail.endswith(f"{FLOOD_END}\ngoodbye after the flood")
    assert transport.stderr_tail() == tail


@pytest.mark.parametrize("size", [30_000, 1_000_000])
async def test_stderr_written_at_exit_is_read_to_the_end(size: int) -> None:
    with anyio.fail_after(TIMEOUT):
        async with spawn_agent([*ECHO_AGENT, "--stderr-at-exit", str(size)]) as transport:
            async with Connection(transport) as conn:
                assert await conn.request("echo", [1]) == [1]
            # The Connection closed the transport: the agent has exited, its stderr was read.
            assert transport.returncode == 0
            assert transport.stderr_bytes >= size
            assert transport.stderr_tail().endswith(FLOOD_END)


async def test_crash_mid_request_raises_exit_code_and_stderr(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="accord.agent.stderr"), anyio.fail_after(TIMEOUT):
        async with spawn_agent(ECHO_AGENT) as transport, Connection(transport) as conn:
            assert await conn.request("echo", "warm-up") == "warm-up"
            started = time.monotonic()
            with pytest.raises(AgentProcessExited) as info:
                await conn.request("crash", {"code": 3, "message": "fatal: the model went away"})
            failed_in = time.monotonic() - started
            assert conn.closed
            assert conn.close_reason is info.value
            with pytest.raises(ConnectionClosed):
                await conn.request("echo", "after the crash")
    error = info.value
    assert error.exit_code == 3
    assert "fatal: the model went away" in error.stderr_tail
    assert "code 3" in str(error)
    assert "fatal: the model went away" in str(error)
    assert failed_in < EXIT_WAIT_TIMEOUT, "the failure is prompt, not a timeout"
    assert "fatal: the model went away" in caplog.text, "stderr is also logged"


@pytest.mark.parametrize(
    ("flags", "expected_signal"),
    [
        (["--ignore-eof"], signal.SIGTERM),
        (["--ignore-eof", "--ignore-sigterm"], signal.SIGKILL),
    ],
    ids=["ignores-eof", "ignores-eof-and-sigterm"],
)
async def test_shutdown_ladder_ends_a_stubborn_agent(
    flags: list[str], expected_signal: signal.Signals
) -> None:
    grace, terminate, kill = 0.2, 0.5, 5.0
    with anyio.fail_after(TIMEOUT):
        async with spawn_agent(
            [*ECHO_AGENT, *flags],
            shutdown_grace=grace,
            terminate_timeout=terminate,
            kill_timeout=kill,
        ) as transport:
            async with Connection(transport) as conn:
                assert await conn.request("ready") == "ready"  # signal handlers are in place
                started = time.monotonic()
            stopped_in = time.monotonic() - started
    assert transport.returncode == -expected_signal
    with pytest.raises(ProcessLookupError):
        os.kill(transport.pid, 0)  # gone and reaped
    if expected_signal == signal.SIGTERM:
        assert grace <= stopped_in < grace + terminate
    else:
        assert grace + terminate <= stopped_in < grace + terminate + kill


# ----------------------------------------------------------------- stdio_transport in a child


async def test_stdio_agent_serves_a_connection_and_stray_output_goes_to_stderr(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    notes: list[int] = []

    async def on_note(method: str, params: Any) -> None:
        assert method == "test/note"
        notes.append(params["i"])

    forged = '{"jsonrpc": "2.0", "id": 0, "result": "forged by a stray print"}'
    with caplog.at_level(logging.WARNING, logger="accord.jsonrpc"), anyio.fail_after(TIMEOUT):
        async with (
            spawn_agent(stdio_agent(anyio_backend)) as transport,
            Connection(transport, on_notification=on_note) as conn,
        ):
            assert await conn.request("echo", {"text": "caf\u00e9 \u2028"}) == {
                "text": "caf\u00e9 \u2028"
            }
            assert await conn.request("print", {"text": forged}) == "printed"
            assert await conn.request("write_fd1", {"text": "raw write to fd 1"}) == "written"
            blob = "x" * 1_000_000
            assert await conn.request("echo", {"blob": blob}) == {"blob": blob}
            assert await conn.request("notify_back", {"count": 200}) == 200
            assert notes == list(range(200)), "notifications before the answer were handled"
            with pytest.raises(AgentProcessExited) as info:
                await conn.request("exit", {"code": 7, "message": "leaving"})
    assert not caplog.records, "nothing unexpected reached the protocol stream"
    assert info.value.exit_code == 7
    tail = info.value.stderr_tail
    assert forged in tail
    assert "raw write to fd 1" in tail
    assert tail.endswith("leaving")


async def test_stdio_agent_exits_cleanly_when_its_stdin_closes(anyio_backend: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with spawn_agent(stdio_agent(anyio_backend)) as transport:
            async with Connection(transport) as conn:
                assert await conn.request("echo", [1]) == [1]
                started = time.monotonic()
            stopped_in = time.monotonic() - started
    assert transport.returncode == 0
    assert stopped_in < SHUTDOWN_GRACE, "no signal was needed"
    assert transport.stderr_tail().endswith(GOODBYE), "stderr is drained to its end"

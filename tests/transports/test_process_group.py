"""Process groups (``spawn_group``, ``stop_group``, ``signal_group``) with real child processes,
and the UTF-8-safe ``TailBuffer`` they share with the terminal host and the coder.

The children are this interpreter running a few lines given on the command line; each says
"ready" (with the pids it wants the test to know) once its signal handlers are in place, so
no test sleeps or races the child's start-up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import anyio
import pytest
from anyio.abc import Process
from helpers.processes import gone
from helpers.timeouts import TIMEOUT

from accord.transports import TailBuffer, signal_group, spawn_group, stop_group

pytestmark = pytest.mark.subprocess


#: A child that ignores SIGTERM, then waits for ever.
IGNORES_TERM = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(600)
"""

#: A child that starts a grandchild (same group) ignoring SIGTERM, reports its pid, waits.
#: The child itself dies of SIGTERM (the default action).
WITH_GRANDCHILD = """
import subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
    " print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
grandchild.stdout.readline()
print(grandchild.pid, flush=True)
time.sleep(600)
"""


async def spawn_python(code: str) -> Process:
    return await spawn_group(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


async def first_line(process: Process) -> str:
    """The child's first line of output."""
    assert process.stdout is not None
    data = b""
    while not data.endswith(b"\n"):
        data += await process.stdout.receive(1)
    return data.decode().strip()


@pytest.mark.anyio
async def test_a_child_that_ignores_sigterm_is_killed() -> None:
    with anyio.fail_after(TIMEOUT):
        async with await spawn_python(IGNORES_TERM) as process:
            assert await first_line(process) == "ready"
            assert os.getpgid(process.pid) == process.pid  # it leads its own group
            assert await stop_group(process, terminate_timeout=0.2, kill_timeout=TIMEOUT)
            assert process.returncode == -signal.SIGKILL


@pytest.mark.anyio
async def test_a_grandchild_in_the_group_is_stopped_with_it() -> None:
    with anyio.fail_after(TIMEOUT):
        async with await spawn_python(WITH_GRANDCHILD) as process:
            grandchild = int(await first_line(process))
            assert os.getpgid(grandchild) == process.pid
            # The child goes at SIGTERM; without the sweep, the grandchild ignoring it would
            # outlive it. With it, the group gets SIGKILL too.
            assert await stop_group(process, terminate_timeout=5, sweep=True)
            assert process.returncode == -signal.SIGTERM
            assert await anyio.to_thread.run_sync(gone, grandchild)


@pytest.mark.anyio
async def test_the_ladder_finishes_when_the_caller_is_cancelled() -> None:
    with anyio.fail_after(TIMEOUT):
        async with await spawn_python(IGNORES_TERM) as process:
            assert await first_line(process) == "ready"
            with anyio.CancelScope() as scope:
                scope.cancel()  # already cancelled when the ladder starts: it is shielded
                await stop_group(process, terminate_timeout=0.2, kill_timeout=TIMEOUT)
            assert process.returncode == -signal.SIGKILL


@pytest.mark.anyio
async def test_a_child_that_died_early_is_not_signalled() -> None:
    with anyio.fail_after(TIMEOUT):
        async with await spawn_python("import sys; sys.exit(3)") as process:
            assert await process.wait() == 3
            assert not signal_group(process.pid, signal.SIGTERM)  # nobody left in the group
            assert await stop_group(process, terminate_timeout=0.1, kill_timeout=0.1)
            assert process.returncode == 3


@pytest.mark.anyio
async def test_a_missing_program_is_an_os_error() -> None:
    with pytest.raises(FileNotFoundError):
        await spawn_group(
            ["/nonexistent/accord-test-program"], stdin=None, stdout=None, stderr=None
        )


@pytest.mark.anyio
async def test_the_tail_of_real_output_is_kept_whole() -> None:
    """A child prints multi-byte characters past the limit: the tail starts on a character."""
    code = "import sys; sys.stdout.write('\u20ac' * 1000 + 'end'); sys.stdout.flush()"
    buffer = TailBuffer(100)
    with anyio.fail_after(TIMEOUT):
        async with await spawn_python(code) as process:
            assert process.stdout is not None
            async for chunk in process.stdout:
                buffer.write(chunk)
            await process.wait()
    assert buffer.text() == "\u20ac" * 32 + "end"  # 96 + 3 bytes; the 33rd was cut in half
    assert buffer.dropped == 3003 - len(buffer)
    assert buffer.truncated


@pytest.mark.parametrize(
    ("chunks", "limit", "expected", "dropped"),
    [
        ([b"abc", b"def"], 10, "abcdef", 0),
        ([b"abcdef"], 4, "cdef", 2),
        (["é€😀".encode()], 8, "€😀", 2),  # 2+3+4 bytes: cut after é
        (["é€😀".encode()], 6, "😀", 5),  # cut lands inside €: drop all of it
        (["😀".encode()], 3, "", 4),  # one character bigger than the limit
        ([b"\xe2\x82", b"\xac!"], 10, "€!", 0),  # a character split across writes
        ([b"\x80\x80\x80\x80\x80x"], 5, "\ufffdx", 4),  # binary: at most 3 extra dropped
    ],
)
def test_tail_buffer_cuts_at_a_character_boundary(
    chunks: list[bytes], limit: int, expected: str, dropped: int
) -> None:
    buffer = TailBuffer(limit)
    for chunk in chunks:
        buffer.write(chunk)
    assert buffer.text() == expected
    assert buffer.dropped == dropped
    assert buffer.truncated is (dropped > 0)
    assert len(buffer) <= limit


def test_tail_buffer_holds_back_a_partial_character_until_final() -> None:
    buffer = TailBuffer(100)
    buffer.write(b"ok \xe2\x82")
    assert buffer.text(final=False) == "ok "
    assert buffer.text() == "ok \ufffd"
    buffer.write(b"\xac")
    assert buffer.text(final=False) == "ok €"


def test_tail_buffer_of_limit_zero_keeps_nothing_and_counts() -> None:
    buffer = TailBuffer(0)
    buffer.write("é".encode())
    assert (buffer.text(), buffer.dropped, len(buffer)) == ("", 2, 0)


def test_tail_buffer_refuses_a_negative_limit() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        TailBuffer(-1)

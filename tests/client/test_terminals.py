"""TerminalHost with real processes: output, exit, signals, limits, kill, release, close.

Tests coordinate with the child through a FIFO "beacon" (the child writes a line when it is
ready, e.g. its pid) and wait for a process to die through a pidfd, so nothing sleeps to wait.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import anyio
import pytest
from helpers.processes import wait_gone
from helpers.timeouts import TIMEOUT

from accord.client import TerminalHost
from accord.errors import InvalidParams, ResourceNotFound
from accord.schema import (
    CreateTerminalRequest,
    EnvVariable,
    KillTerminalRequest,
    ReleaseTerminalRequest,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
)
from accord.transports import TailBuffer

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.subprocess,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and FIFOs"),
]

SESSION = "sess-1"
PYTHON = sys.executable


class Beacon:
    """A FIFO the child writes one line into: lets the test wait for the child without sleeping.

    The test keeps a write end open itself, so the read end never reports end-of-file and
    ``wait_readable`` wakes exactly when the child has written.
    """

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self._read_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._keep_fd = os.open(path, os.O_WRONLY)

    async def receive(self) -> str:
        data = b""
        with anyio.fail_after(TIMEOUT):
            while not data.endswith(b"\n"):
                await anyio.wait_readable(self._read_fd)
                data += os.read(self._read_fd, 4096)
        return data.decode().strip()

    def close(self) -> None:
        os.close(self._read_fd)
        os.close(self._keep_fd)


@pytest.fixture
def beacon(tmp_path: Path) -> Iterator[Beacon]:
    fifo = Beacon(tmp_path / "beacon")
    yield fifo
    fifo.close()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path.resolve() / "project"
    directory.mkdir()
    return directory


@pytest.fixture
async def host() -> AsyncIterator[TerminalHost]:
    async with TerminalHost(terminate_timeout=1.0) as terminal_host:
        yield terminal_host


async def create(
    host: TerminalHost,
    command: str,
    roots: Sequence[Path],
    *,
    args: list[str] | None = None,
    session: str = SESSION,
    **fields: object,
) -> str:
    request = CreateTerminalRequest.model_validate(
        {"sessionId": session, "command": command, "args": args or [], **fields}
    )
    return (await host.create_terminal(request, roots)).terminal_id


async def wait(
    host: TerminalHost, terminal_id: str, session: str = SESSION
) -> WaitForTerminalExitResponse:
    with anyio.fail_after(TIMEOUT):
        return await host.wait_for_terminal_exit(
            WaitForTerminalExitRequest(session_id=session, terminal_id=terminal_id)
        )


async def output(
    host: TerminalHost, terminal_id: str, session: str = SESSION
) -> TerminalOutputResponse:
    return await host.terminal_output(
        TerminalOutputRequest(session_id=session, terminal_id=terminal_id)
    )


async def kill(host: TerminalHost, terminal_id: str) -> None:
    with anyio.fail_after(TIMEOUT):
        await host.kill_terminal(KillTerminalRequest(session_id=SESSION, terminal_id=terminal_id))


async def release(host: TerminalHost, terminal_id: str, session: str = SESSION) -> None:
    with anyio.fail_after(TIMEOUT):
        await host.release_terminal(
            ReleaseTerminalRequest(session_id=session, terminal_id=terminal_id)
        )


def reaped(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# --- output and exit -----------------------------------------------------------------------


async def test_echo_output_and_exit_code(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(host, "echo hello; echo oops >&2; exit 3", [root])
    status = await wait(host, terminal_id)
    assert (status.exit_code, status.signal) == (3, None)
    result = await output(host, terminal_id)
    assert result.output == "hello\noops\n"  # stderr merged into the same output
    assert result.truncated is False
    assert result.exit_status is not None
    assert (result.exit_status.exit_code, result.exit_status.signal) == (3, None)
    await release(host, terminal_id)


async def test_args_are_shell_quoted(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(host, "printf '%s|'", [root], args=["a b", "$HOME", "it's"])
    await wait(host, terminal_id)
    assert (await output(host, terminal_id)).output == "a b|$HOME|it's|"


async def test_direct_exec_without_a_shell(root: Path) -> None:
    async with TerminalHost(use_shell=False) as host:
        terminal_id = await create(
            host, PYTHON, [root], args=["-c", "import sys; print(sys.argv[1:])", "a b", "$X"]
        )
        assert (await wait(host, terminal_id)).exit_code == 0
        assert (await output(host, terminal_id)).output == "['a b', '$X']\n"


async def test_output_before_exit_has_no_exit_status(
    host: TerminalHost, root: Path, beacon: Beacon
) -> None:
    terminal_id = await create(host, f"printf 'partial'; echo > {beacon.path}; sleep 30", [root])
    await beacon.receive()
    # "partial" was in the pipe before the beacon; let the reader task take it.
    await anyio.wait_all_tasks_blocked()
    result = await output(host, terminal_id)
    assert result.exit_status is None
    assert result.output == "partial"
    await release(host, terminal_id)


async def test_exit_status_is_reported_while_a_background_child_holds_the_output(
    host: TerminalHost, root: Path, beacon: Beacon
) -> None:
    terminal_id = await create(host, f"sleep 30 & echo $! > {beacon.path}; echo started", [root])
    background = int(await beacon.receive())
    assert (await wait(host, terminal_id)).exit_code == 0
    assert (await output(host, terminal_id)).output == "started\n"
    await release(host, terminal_id)  # kills the background child: it is in the group
    await wait_gone(background)


async def test_missing_command_exits_127_with_the_shell(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(host, "definitely-not-a-command-xyz --flag", [root])
    assert (await wait(host, terminal_id)).exit_code == 127
    assert "not found" in (await output(host, terminal_id)).output


async def test_missing_command_is_an_error_without_a_shell(root: Path) -> None:
    async with TerminalHost(use_shell=False) as host:
        with pytest.raises(InvalidParams, match="command not found"):
            await create(host, "definitely-not-a-command-xyz", [root])
        (root / "not-exec").write_text("data")
        with pytest.raises(InvalidParams, match="not executable"):
            await create(host, str(root / "not-exec"), [root])
        assert host.statistics().terminals == 0


async def test_empty_command_is_refused(host: TerminalHost, root: Path) -> None:
    with pytest.raises(InvalidParams, match="command is empty"):
        await create(host, "", [root])


async def test_invalid_utf8_output_is_replaced(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(host, r"printf 'ok \377\376 done'", [root])
    await wait(host, terminal_id)
    assert (await output(host, terminal_id)).output == "ok \ufffd\ufffd done"


# --- environment and working directory -----------------------------------------------------


async def test_env_is_laid_over_the_client_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCORD_BASE", "from-client")
    monkeypatch.setenv("ACCORD_OVERRIDDEN", "old")
    async with TerminalHost() as host:
        terminal_id = await create(
            host,
            'echo "$ACCORD_BASE $ACCORD_OVERRIDDEN $ACCORD_NEW"',
            [root],
            env=[
                {"name": "ACCORD_OVERRIDDEN", "value": "new"},
                {"name": "ACCORD_NEW", "value": "a b=c"},
            ],
        )
        await wait(host, terminal_id)
        assert (await output(host, terminal_id)).output == "from-client new a b=c\n"


async def test_explicit_base_environment(root: Path) -> None:
    async with TerminalHost(env={"PATH": os.environ["PATH"], "ONLY": "this"}) as host:
        terminal_id = await create(host, 'echo "$ONLY ${HOME:-unset}"', [root])
        await wait(host, terminal_id)
        assert (await output(host, terminal_id)).output == "this unset\n"


@pytest.mark.parametrize("name", ["", "A=B", "A\0B"])
async def test_malformed_env_name_is_refused(host: TerminalHost, root: Path, name: str) -> None:
    request = CreateTerminalRequest(
        session_id=SESSION, command="true", env=[EnvVariable(name=name, value="x")]
    )
    with pytest.raises(InvalidParams, match="invalid environment variable"):
        await host.create_terminal(request, [root])


async def test_cwd_defaults_to_the_session_cwd(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(host, "pwd", [root])
    await wait(host, terminal_id)
    assert (await output(host, terminal_id)).output == f"{root}\n"


async def test_cwd_is_honoured(host: TerminalHost, root: Path) -> None:
    (root / "sub").mkdir()
    extra = root.parent / "extra"
    extra.mkdir()
    first = await create(host, "pwd", [root, extra], cwd=str(root / "sub"))
    second = await create(host, "pwd", [root, extra], cwd=str(extra))
    await wait(host, first)
    await wait(host, second)
    assert (await output(host, first)).output == f"{root / 'sub'}\n"
    assert (await output(host, second)).output == f"{extra}\n"


async def test_bad_cwd_is_refused(host: TerminalHost, root: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidParams, match="must be absolute"):
        await create(host, "pwd", [root], cwd="sub")
    with pytest.raises(InvalidParams, match="outside the session's directories"):
        await create(host, "pwd", [root], cwd=str(tmp_path))
    with pytest.raises(InvalidParams, match="not an existing directory"):
        await create(host, "pwd", [root], cwd=str(root / "missing"))
    (root / "file").write_text("x")
    with pytest.raises(InvalidParams, match="not an existing directory"):
        await create(host, "pwd", [root], cwd=str(root / "file"))
    with pytest.raises(InvalidParams, match="no cwd given"):
        await create(host, "pwd", [])
    assert host.statistics().terminals == 0


# --- output limits -------------------------------------------------------------------------


async def test_output_limit_cuts_at_a_character_boundary(host: TerminalHost, root: Path) -> None:
    # 10 x "€" (3 bytes each) = 30 bytes; a 10-byte limit would cut inside the fourth-last €.
    terminal_id = await create(host, "printf '€€€€€€€€€€'", [root], outputByteLimit=10)
    await wait(host, terminal_id)
    result = await output(host, terminal_id)
    assert result.output == "€€€"
    assert result.truncated is True


async def test_output_limit_keeps_the_end(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(
        host, "for i in 1 2 3 4 5 6 7 8 9; do echo line$i; done", [root], outputByteLimit=12
    )
    await wait(host, terminal_id)
    result = await output(host, terminal_id)
    assert (result.output, result.truncated) == ("line8\nline9\n", True)


async def test_output_exactly_at_the_limit_is_not_truncated(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(host, "printf 'héllo'", [root], outputByteLimit=6)
    await wait(host, terminal_id)
    result = await output(host, terminal_id)
    assert (result.output, result.truncated) == ("héllo", False)


async def test_zero_limit_keeps_nothing(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(host, "echo hi", [root], outputByteLimit=0)
    await wait(host, terminal_id)
    result = await output(host, terminal_id)
    assert (result.output, result.truncated) == ("", True)


async def test_large_output_does_not_block_the_child(root: Path) -> None:
    size = 5 * 1024 * 1024
    async with TerminalHost(use_shell=False, max_output_bytes=1024 * 1024) as host:
        code = f"import sys; sys.stdout.write('ab' * {size // 2}); sys.stdout.write('END')"
        limited = await create(host, PYTHON, [root], args=["-c", code], outputByteLimit=1000)
        capped = await create(host, PYTHON, [root], args=["-c", code])
        assert (await wait(host, limited)).exit_code == 0
        assert (await wait(host, capped)).exit_code == 0
        small = await output(host, limited)
        assert small.truncated and small.output.endswith("abEND") and len(small.output) == 1000
        big = await output(host, capped)
        assert big.truncated and len(big.output) == 1024 * 1024 and big.output.endswith("END")
        assert host.statistics().buffered_bytes == 1000 + 1024 * 1024


@pytest.mark.parametrize(
    ("chunks", "limit", "expected", "truncated"),
    [
        ([b"abc", b"def"], 10, "abcdef", False),
        ([b"abcdef"], 4, "cdef", True),
        (["é€😀".encode()], 8, "€😀", True),  # 2+3+4 bytes: cut after é
        (["é€😀".encode()], 6, "😀", True),  # cut lands inside €: drop all of it
        (["😀".encode()], 3, "", True),  # one character bigger than the limit
        ([b"\xe2\x82", b"\xac!"], 10, "€!", False),  # a character split across reads
        ([b"\x80\x80\x80\x80\x80x"], 5, "\ufffdx", True),  # binary: at most 3 extra dropped
    ],
)
def test_output_buffer(chunks: list[bytes], limit: int, expected: str, truncated: bool) -> None:
    buffer = TailBuffer(limit)
    for chunk in chunks:
        buffer.write(chunk)
    assert buffer.text(final=True) == expected
    assert buffer.truncated is truncated
    assert len(buffer) <= limit


def test_output_buffer_holds_back_a_partial_character_until_final() -> None:
    buffer = TailBuffer(100)
    buffer.write(b"ok \xe2\x82")
    assert buffer.text(final=False) == "ok "
    assert buffer.text(final=True) == "ok \ufffd"
    buffer.write(b"\xac")
    assert buffer.text(final=False) == "ok €"


# --- kill, release, several terminals, close -----------------------------------------------


async def test_kill_reports_the_signal_and_keeps_the_terminal(
    host: TerminalHost, root: Path, beacon: Beacon
) -> None:
    terminal_id = await create(host, f"echo before; echo > {beacon.path}; exec sleep 30", [root])
    await beacon.receive()
    await kill(host, terminal_id)
    status = await wait(host, terminal_id)
    assert (status.exit_code, status.signal) == (None, "SIGTERM")
    result = await output(host, terminal_id)
    assert result.output == "before\n"
    assert result.exit_status is not None and result.exit_status.signal == "SIGTERM"
    await kill(host, terminal_id)  # killing an exited terminal is a no-op
    await release(host, terminal_id)


async def test_kill_escalates_to_sigkill(root: Path, beacon: Beacon) -> None:
    async with TerminalHost(terminate_timeout=0.2) as host:
        terminal_id = await create(
            host, f"trap '' TERM; echo > {beacon.path}; while :; do sleep 1; done", [root]
        )
        await beacon.receive()
        await kill(host, terminal_id)
        assert (await wait(host, terminal_id)).signal == "SIGKILL"


async def test_wait_for_exit_wakes_when_another_call_kills(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(host, "exec sleep 30", [root])
    results: list[WaitForTerminalExitResponse] = []

    async def waiter() -> None:
        results.append(await wait(host, terminal_id))

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert results == []
        await kill(host, terminal_id)
    assert results[0].signal == "SIGTERM"


async def test_release_kills_the_process_and_frees_the_id(
    host: TerminalHost, root: Path, beacon: Beacon
) -> None:
    terminal_id = await create(host, f"echo $$ > {beacon.path}; exec sleep 30", [root])
    pid = int(await beacon.receive())
    assert not reaped(pid)
    await release(host, terminal_id)
    assert reaped(pid)  # killed and reaped by the time release answers
    for call in (output, wait):
        with pytest.raises(ResourceNotFound, match="unknown or released"):
            await call(host, terminal_id)
    with pytest.raises(ResourceNotFound):
        await release(host, terminal_id)
    with pytest.raises(ResourceNotFound):
        await kill(host, terminal_id)
    assert host.statistics().terminals == 0


async def test_release_wakes_a_pending_wait(host: TerminalHost, root: Path) -> None:
    terminal_id = await create(host, "exec sleep 30", [root])
    results: list[WaitForTerminalExitResponse] = []

    async def waiter() -> None:
        results.append(await wait(host, terminal_id))

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        await release(host, terminal_id)
    assert results[0].signal == "SIGTERM"


async def test_release_kills_the_whole_process_group(
    host: TerminalHost, root: Path, beacon: Beacon
) -> None:
    terminal_id = await create(host, f"sleep 30 & echo $! > {beacon.path}; wait", [root])
    grandchild = int(await beacon.receive())
    await release(host, terminal_id)
    await wait_gone(grandchild)


async def test_unknown_and_foreign_ids_are_not_found(host: TerminalHost, root: Path) -> None:
    with pytest.raises(ResourceNotFound) as info:
        await output(host, "no-such-terminal")
    assert info.value.code == -32002
    assert info.value.data == {"terminalId": "no-such-terminal"}
    terminal_id = await create(host, "echo mine", [root], session="sess-a")
    with pytest.raises(ResourceNotFound):
        await output(host, terminal_id, session="sess-b")
    with pytest.raises(ResourceNotFound):
        await release(host, terminal_id, session="sess-b")
    await wait(host, terminal_id, session="sess-a")
    assert (await output(host, terminal_id, session="sess-a")).output == "mine\n"


async def test_several_terminals_at_once(host: TerminalHost, root: Path) -> None:
    ids = [await create(host, f"echo terminal {i}; exit {i}", [root]) for i in range(5)]
    assert len(set(ids)) == 5
    statuses: dict[str, int | None] = {}

    async def collect(terminal_id: str) -> None:
        statuses[terminal_id] = (await wait(host, terminal_id)).exit_code

    async with anyio.create_task_group() as task_group:
        for terminal_id in ids:
            task_group.start_soon(collect, terminal_id)
    for i, terminal_id in enumerate(ids):
        assert statuses[terminal_id] == i
        assert (await output(host, terminal_id)).output == f"terminal {i}\n"
    assert host.statistics().terminals == 5
    assert host.statistics().running == 0


async def test_release_session_releases_only_that_session(
    host: TerminalHost, root: Path, tmp_path: Path
) -> None:
    beacons = [Beacon(tmp_path / f"b{i}") for i in range(3)]
    try:
        sessions = ["a", "a", "b"]
        ids = [
            await create(host, f"echo $$ > {b.path}; exec sleep 30", [root], session=s)
            for b, s in zip(beacons, sessions, strict=True)
        ]
        pids = [int(await b.receive()) for b in beacons]
        with anyio.fail_after(TIMEOUT):
            await host.release_session("a")
        assert reaped(pids[0]) and reaped(pids[1])
        assert not reaped(pids[2])
        assert (await output(host, ids[2], session="b")).exit_status is None
        with pytest.raises(ResourceNotFound):
            await output(host, ids[0], session="a")
    finally:
        for b in beacons:
            b.close()


async def test_closing_the_host_kills_everything(root: Path, tmp_path: Path) -> None:
    beacons = [Beacon(tmp_path / f"b{i}") for i in range(3)]
    try:
        with anyio.fail_after(TIMEOUT):
            async with TerminalHost() as host:
                for i, b in enumerate(beacons):
                    await create(host, f"echo $$ > {b.path}; exec sleep 30", [root], session=str(i))
                pids = [int(await b.receive()) for b in beacons]
        assert all(reaped(pid) for pid in pids)
        with pytest.raises(RuntimeError, match="not running"):
            await create(host, "true", [root])
    finally:
        for b in beacons:
            b.close()


async def test_closing_the_host_on_cancellation_still_kills(root: Path, beacon: Beacon) -> None:
    pid = 0
    with anyio.CancelScope() as scope:
        async with TerminalHost() as host:
            await create(host, f"echo $$ > {beacon.path}; exec sleep 30", [root])
            pid = int(await beacon.receive())
            scope.cancel()
            await anyio.sleep_forever()
    assert pid and reaped(pid)


class GatedRoots(Sequence[Path]):
    """Roots whose first item is only handed out once the test opens the gate."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.gate = threading.Event()

    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> Path:  # type: ignore[override]
        assert self.gate.wait(TIMEOUT)
        return [self.root][index]


async def test_closing_the_host_while_a_command_starts_does_not_leak(root: Path) -> None:
    roots = GatedRoots(root)
    raised: list[RuntimeError] = []

    async def creating(host: TerminalHost) -> None:
        try:
            await create(host, "exec sleep 30", roots)
        except RuntimeError as exc:
            raised.append(exc)

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as task_group:
            async with TerminalHost() as host:
                task_group.start_soon(creating, host)
                await anyio.wait_all_tasks_blocked()  # creating() waits for the roots
            roots.gate.set()
    assert "closed while the command was starting" in str(raised[0])


async def test_host_must_be_entered(root: Path) -> None:
    host = TerminalHost()
    with pytest.raises(RuntimeError, match="not running"):
        await create(host, "true", [root])


async def test_terminal_ids_are_unique_across_sessions(host: TerminalHost, root: Path) -> None:
    ids = {await create(host, "true", [root], session=f"s{i % 2}") for i in range(20)}
    assert len(ids) == 20


def test_signal_names() -> None:
    from accord.client._terminals import _exit_status

    assert _exit_status(0).exit_code == 0
    assert _exit_status(-signal.SIGKILL).signal == "SIGKILL"


@pytest.mark.parametrize(
    ("command", "args"), [("ls\0 -la", []), ("ls", ["-l", "a\0b"])], ids=["command", "argument"]
)
async def test_a_nul_in_the_command_or_an_argument_is_refused(
    host: TerminalHost, root: Path, command: str, args: list[str]
) -> None:
    request = CreateTerminalRequest(session_id="s", command=command, args=args, cwd=str(root))
    with pytest.raises(InvalidParams, match="contains a NUL character"):
        await host.create_terminal(request, [root])
    assert host.statistics().terminals == 0


async def test_a_nul_in_cwd_is_refused(host: TerminalHost, root: Path) -> None:
    request = CreateTerminalRequest(session_id="s", command="true", cwd=f"{root}\0/x")
    with pytest.raises(InvalidParams, match="NUL"):
        await host.create_terminal(request, [root])


# --- stdin -----------------------------------------------------------------------------------

# A client whose own stdin is a pipe still open (an editor's, a shell's) runs a TerminalHost;
# each command reads its stdin. Were the pipe inherited, `cat` would hang on it or print what
# the client's stdin carries; with /dev/null every read ends at once.
_STDIN_CLIENT = """
import os, sys, anyio
from accord.client import TerminalHost
from accord.schema import CreateTerminalRequest, TerminalOutputRequest, WaitForTerminalExitRequest

PROBE = (
    "import os, stat; st = os.fstat(0); null = os.stat('/dev/null'); "
    "print('devnull' if stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev else 'other')"
)

async def main():
    async with TerminalHost() as host:
        for command, args in (
            ("cat", []),
            ("read line; echo read=$?", []),
            (sys.executable, ["-c", PROBE]),
        ):
            request = CreateTerminalRequest(session_id="s", command=command, args=args)
            terminal = (await host.create_terminal(request, [os.getcwd()])).terminal_id
            ids = {"session_id": "s", "terminal_id": terminal}
            status = await host.wait_for_terminal_exit(WaitForTerminalExitRequest(**ids))
            out = await host.terminal_output(TerminalOutputRequest(**ids))
            print(repr((status.exit_code, out.output)), flush=True)

anyio.run(main)
"""


async def test_a_command_reading_stdin_ends_at_once_even_when_the_client_has_a_stdin(
    root: Path,
) -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"the client's own input\n")  # and the pipe stays open
        with anyio.fail_after(TIMEOUT):
            finished = await anyio.run_process(
                [PYTHON, "-c", _STDIN_CLIENT], stdin=read_end, cwd=root, check=False
            )
    finally:
        os.close(read_end)
        os.close(write_end)
    assert finished.returncode == 0, finished.stderr.decode()
    lines = finished.stdout.decode().splitlines()
    assert lines == [repr((0, "")), repr((0, "read=1\n")), repr((0, "devnull\n"))]

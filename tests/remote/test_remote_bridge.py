"""``accord bridge`` as a real process, driven by the accord client over real pipes, against a
real ``accord serve --listen`` process; the server is killed and restarted mid-session."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import anyio
import pytest
from anyio.streams.text import TextReceiveStream
from helpers.accord_serve import ACCORD, accord_env, accord_serve, run_accord
from helpers.timeouts import SCENARIO_TIMEOUT, TIMEOUT

from accord.client import connect
from accord.testing import FakeOpenAIServer, ScriptedReply
from accord.transports import StreamTransport

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess, pytest.mark.timeout(300)]

TOKEN = "bridge-test-token-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_bridge_forwards_and_survives_a_server_restart(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    port = free_port()
    replies = [ScriptedReply(text=["first reply"]), ScriptedReply(text=["second reply"])]
    lines: list[str] = []
    back = anyio.Event()

    async def read_stderr(stream: anyio.abc.ByteReceiveStream) -> None:
        async for chunk in TextReceiveStream(stream):
            for line in chunk.splitlines():
                lines.append(line)
                if "reconnected" in line:
                    back.set()

    with FakeOpenAIServer(replies) as model:
        serve_args = ("--model", "openai:fake", "--base-url", model.base_url)
        serve_args += ("--store", str(tmp_path / "s.db"))
        serve = accord_serve(*serve_args, env=accord_env(ACCORD_TOKEN=TOKEN), port=port)
        first_server = serve.__enter__()
        url = first_server[0]
        process = await anyio.open_process(
            [*ACCORD, "bridge", url], env=accord_env(ACCORD_TOKEN=TOKEN), cwd=project
        )
        try:
            assert process.stdout and process.stdin and process.stderr
            async with anyio.create_task_group() as tg:
                tg.start_soon(read_stderr, process.stderr)
                transport = StreamTransport(process.stdout, process.stdin)
                # A served agent, a bridge process, two turns and a restart.
                with anyio.fail_after(SCENARIO_TIMEOUT):
                    async with connect(transport, cwd=project) as conn:
                        session = await conn.new_session()
                        first = await session.prompt("one")
                        serve.__exit__(None, None, None)  # the server goes away...
                        serve = accord_serve(
                            *serve_args, env=accord_env(ACCORD_TOKEN=TOKEN), port=port
                        )
                        await anyio.to_thread.run_sync(serve.__enter__)  # ...and comes back
                        await back.wait()
                        second = await session.prompt("two")
                tg.cancel_scope.cancel()
        finally:
            serve.__exit__(None, None, None)
            if process.returncode is None:
                process.terminate()
            await process.wait()
    assert first.text == "first reply"
    assert second.text == "second reply"
    assert "accord bridge: connection to the agent lost; reconnecting" in lines
    assert "accord bridge: reconnected; resumed 1 session" in lines
    assert TOKEN not in "\n".join(lines)


def test_bridge_without_a_token_is_a_usage_error() -> None:
    env = accord_env()
    env.pop("ACCORD_TOKEN", None)
    done = run_accord("bridge", "ws://127.0.0.1:1/acp", env=env)
    assert done.returncode == 2
    assert "ACCORD_TOKEN" in done.stderr


@pytest.mark.parametrize("url", ["ftp://host/acp", f"ws://127.0.0.1:1/acp?token={TOKEN}"])
def test_bridge_refuses_a_bad_url(url: str) -> None:
    done = run_accord("bridge", url, env=accord_env(ACCORD_TOKEN=TOKEN))
    assert done.returncode == 2
    assert TOKEN not in done.stderr


def test_bridge_to_nothing_is_exit_3() -> None:
    done = run_accord(
        "bridge", f"ws://127.0.0.1:{free_port()}/acp", env=accord_env(ACCORD_TOKEN=TOKEN)
    )
    assert done.returncode == 3
    assert "cannot reach" in done.stderr


@pytest.mark.parametrize(
    ("scheme", "answer", "said"),
    [
        (
            "ws",
            b"HTTP/1.1 302 Found\r\nLocation: ws://attacker.example/acp\r\n\r\n",
            "not followed",
        ),
        (
            "http",
            b"HTTP/1.1 307 Moved\r\nLocation: http://attacker.example/acp\r\n\r\n",
            "not followed",
        ),
        ("ws", b"SSH-2.0-OpenSSH_9.6\r\n\x00\xff\r\n\r\n", "not answer"),
        ("http", b"SSH-2.0-OpenSSH_9.6\r\n\x00\xff\r\n\r\n", "not answer"),
    ],
)
def test_bridge_to_a_hostile_server_is_exit_3_with_one_clear_line(
    scheme: str, answer: bytes, said: str
) -> None:
    import threading

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def serve() -> None:
            while True:
                try:
                    peer, _ = listener.accept()
                except OSError:
                    return
                with peer:
                    peer.recv(65536)
                    peer.sendall(answer)

        threading.Thread(target=serve, daemon=True).start()
        # The editor's first line: over HTTP nothing is sent before it.
        done = subprocess.run(
            [*ACCORD, "bridge", f"{scheme}://127.0.0.1:{port}/acp"],
            input='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n',
            capture_output=True,
            text=True,
            env=accord_env(ACCORD_TOKEN=TOKEN),
            timeout=TIMEOUT,
            check=False,
        )
    assert done.returncode == 3, done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr and TOKEN not in done.stderr

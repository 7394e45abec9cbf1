"""``accord bridge`` through an outage, as a real process between an editor (raw JSON-RPC lines
on its pipes) and a real ``accord serve --listen``: a connection cut in the middle of a turn
(a loopback proxy drops every socket while the agent streams) loses nothing of the turn, and
an outage longer than ``--reconnect-deadline`` ends the bridge with exit status 3 and one line
saying why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import pytest
from _remote_proxy import CuttableProxy
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.text import TextReceiveStream
from helpers.accord_serve import ACCORD, accord_env, accord_serve, run_accord
from helpers.timeouts import SCENARIO_TIMEOUT

from accord.client import RECONNECT_DEADLINE
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess, pytest.mark.timeout(300)]

TOKEN = "bridge-outage-token-0123456789abcdef"
PIECES = [f"piece{n:02d} " for n in range(30)]


class Editor:
    """An editor's end of the bridge's pipes: JSON-RPC lines out, every line in kept."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin and process.stdout
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self.received: list[dict[str, Any]] = []
        self._arrived = anyio.Event()
        self._ids = 0

    async def read_all(self) -> None:
        while True:
            try:
                line = await self._stdout.receive_until(b"\n", 1 << 24)
            except (anyio.EndOfStream, anyio.IncompleteRead):
                return
            self.received.append(json.loads(line))
            self._arrived.set()
            self._arrived = anyio.Event()

    async def send(self, method: str, params: dict[str, Any]) -> int:
        self._ids += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        await self._stdin.send(line.encode() + b"\n")
        return self._ids

    async def answer(self, request_id: int) -> dict[str, Any]:
        while True:
            for message in self.received:
                if message.get("id") == request_id and "method" not in message:
                    return message
            await self._arrived.wait()

    async def prompt_after_the_turn(self, prompt: dict[str, Any]) -> dict[str, Any]:
        """``session/prompt`` once the turn running on the agent has ended: its own answer
        went with the lost connection, so the editor learns it from a refusal naming it."""
        while True:
            answer = await self.answer(await self.send("session/prompt", prompt))
            if "already running a prompt turn" not in str(answer.get("error", {}).get("message")):
                return answer
            await anyio.sleep(0.1)

    async def until(self, done: Any) -> None:
        while not done():
            await self._arrived.wait()

    def chunks(self) -> list[str]:
        """The text of every agent message chunk received, in order."""
        texts: list[str] = []
        for message in self.received:
            if message.get("method") != "session/update":
                continue
            update = message["params"]["update"]
            if update.get("sessionUpdate") == "agent_message_chunk":
                texts.append(update["content"]["text"])
        return texts


async def read_lines(stream: anyio.abc.ByteReceiveStream, lines: list[str]) -> None:
    async for chunk in TextReceiveStream(stream):
        lines.extend(chunk.splitlines())


async def test_a_connection_cut_mid_turn_loses_nothing_of_the_turn(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    replies = [
        ScriptedReply(text=PIECES, delay=0.1),  # three seconds of streaming
        ScriptedReply(text=["after the outage"]),
    ]
    status: list[str] = []
    lost: dict[str, Any] = {}
    second: dict[str, Any] = {}
    with FakeOpenAIServer(replies) as model:
        serve_args = ("--model", "openai:fake", "--base-url", model.base_url)
        serve_args += ("--store", str(tmp_path / "s.db"))
        with accord_serve(*serve_args, env=accord_env(ACCORD_TOKEN=TOKEN)) as (url, _server):
            parts = urlsplit(url)
            assert parts.port is not None
            proxy = CuttableProxy(parts.port)
            async with proxy.running():
                proxied = parts._replace(netloc=f"127.0.0.1:{proxy.port}").geturl()
                process = await anyio.open_process(
                    [*ACCORD, "bridge", proxied], env=accord_env(ACCORD_TOKEN=TOKEN), cwd=project
                )
                try:
                    assert process.stderr
                    editor = Editor(process)
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(editor.read_all)
                        tg.start_soon(read_lines, process.stderr, status)
                        with anyio.fail_after(SCENARIO_TIMEOUT):
                            await editor.answer(
                                await editor.send("initialize", {"protocolVersion": 1})
                            )
                            created = await editor.answer(
                                await editor.send(
                                    "session/new", {"cwd": str(project), "mcpServers": []}
                                )
                            )
                            session_id = created["result"]["sessionId"]
                            prompt = {
                                "sessionId": session_id,
                                "prompt": [{"type": "text", "text": "stream"}],
                            }
                            first = await editor.send("session/prompt", prompt)
                            await editor.until(lambda: len(editor.chunks()) >= 5)
                            await proxy.cut()  # the network goes away mid-turn...
                            lost = await editor.answer(first)
                            # ...and the rest of the turn arrives after the reconnect.
                            await editor.until(lambda: len(editor.chunks()) >= len(PIECES))
                            second = await editor.prompt_after_the_turn(prompt)
                        tg.cancel_scope.cancel()
                finally:
                    if process.returncode is None:
                        process.terminate()
                    await process.wait()
    assert lost["error"]["code"] == -32603
    assert lost["error"]["data"] == {"reconnecting": True}
    assert second["result"]["stopReason"] == "end_turn"
    # Every piece of the interrupted turn exactly once, in order, then the next turn.
    assert editor.chunks() == [*PIECES, "after the outage"]
    assert proxy.connections == 2
    assert "accord bridge: connection to the agent lost; reconnecting" in status
    assert "accord bridge: reconnected; resumed 1 session" in status
    assert TOKEN not in "\n".join(status)


async def test_an_outage_past_the_deadline_ends_the_bridge_with_exit_3(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    status: list[str] = []
    code: int | None = None
    with FakeOpenAIServer([]) as model:
        serve_args = ("--model", "openai:fake", "--base-url", model.base_url)
        serve = accord_serve(*serve_args, env=accord_env(ACCORD_TOKEN=TOKEN))
        url, _server = serve.__enter__()
        process = await anyio.open_process(
            [*ACCORD, "bridge", url, "--reconnect-deadline", "2"],
            env=accord_env(ACCORD_TOKEN=TOKEN),
            cwd=project,
        )
        try:
            assert process.stderr
            editor = Editor(process)
            async with anyio.create_task_group() as tg:
                tg.start_soon(editor.read_all)
                tg.start_soon(read_lines, process.stderr, status)
                with anyio.fail_after(SCENARIO_TIMEOUT):
                    await editor.answer(await editor.send("initialize", {"protocolVersion": 1}))
                    await editor.answer(
                        await editor.send("session/new", {"cwd": str(project), "mcpServers": []})
                    )
                    serve.__exit__(None, None, None)  # the server goes away for good
                    code = await process.wait()
        finally:
            serve.__exit__(None, None, None)
            if process.returncode is None:
                process.terminate()
            await process.wait()
    assert code == 3
    gave_up = [line for line in status if "could not reconnect" in line]
    assert gave_up == ["accord bridge: could not reconnect to the agent within 2 s"]
    assert not any("Traceback" in line for line in status)


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf"])
def test_a_reconnect_deadline_that_is_not_a_positive_time_is_a_usage_error(value: str) -> None:
    done = run_accord(
        "bridge", "ws://127.0.0.1:1/acp", "--reconnect-deadline", value,
        env=accord_env(ACCORD_TOKEN=TOKEN),
    )  # fmt: skip
    assert done.returncode == 2
    assert "--reconnect-deadline" in done.stderr and value in done.stderr


def test_the_help_names_the_default_deadline() -> None:
    done = subprocess.run([*ACCORD, "bridge", "--help"], capture_output=True, text=True, check=True)
    assert f"RECONNECT_DEADLINE, {RECONNECT_DEADLINE:.0f})" in " ".join(done.stdout.split())

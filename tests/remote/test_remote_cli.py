"""``accord serve --listen`` and ``accord run --agent ws://`` as real processes on loopback."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from helpers.accord_serve import ACCORD, accord_env, accord_serve, run_accord
from helpers.timeouts import TIMEOUT

from accord.cli import ExitCode
from accord.client import connect
from accord.schema import Implementation
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(240)]

TOKEN = "cli-test-token-0123456789abcdef"


def test_a_non_loopback_address_without_tls_is_refused_with_exit_2() -> None:
    done = run_accord("serve", "--listen", "0.0.0.0:0", env=accord_env(ACCORD_TOKEN=TOKEN))
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.strip().splitlines() == [
        "accord serve: refusing to listen on 0.0.0.0 without TLS: give --certfile and "
        "--keyfile, or --insecure-no-tls if the network is trusted"
    ]


@pytest.mark.parametrize("value", ["8765", "host:", "host:99999", ":80"])
def test_a_malformed_listen_address_is_exit_2(value: str) -> None:
    done = run_accord("serve", "--listen", value, env=accord_env(ACCORD_TOKEN=TOKEN))
    assert done.returncode == ExitCode.USAGE
    assert "HOST:PORT" in done.stderr


def test_a_short_token_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("tiny-secret\n")
    done = run_accord(
        "serve", "--listen", "127.0.0.1:0", "--token-file", str(token_file), env=accord_env()
    )
    assert done.returncode == ExitCode.ERROR
    assert "shorter than 16 characters" in done.stderr
    assert "tiny-secret" not in done.stderr


def test_run_against_a_served_agent(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = accord_env(ACCORD_TOKEN=TOKEN)
    wrong = accord_env(ACCORD_TOKEN="wrong-token-0123456789abcdef")
    with FakeOpenAIServer([ScriptedReply(text=["Served over the network."])]) as model:
        serve_args = ("--model", "openai:fake", "--base-url", model.base_url)
        serve_args += ("--store", str(tmp_path / "s.db"))
        with accord_serve(*serve_args, env=env) as (url, _):
            run = run_accord("run", "--agent", url, "--json", "hello", env=env, cwd=project)
            listed = run_accord("sessions", "--agent", url, "list", env=env, cwd=project)
            refused = run_accord("run", "--agent", url, "hello", env=wrong, cwd=project)
    assert run.returncode == ExitCode.OK, run.stderr
    assert "Served over the network." in run.stdout
    assert listed.returncode == ExitCode.OK, listed.stderr
    assert str(project) in listed.stdout
    assert refused.returncode == ExitCode.AGENT_FAILED
    assert "401" in refused.stderr and "wrong-token" not in refused.stderr


def test_a_generated_token_is_printed_once() -> None:
    with accord_serve(env=accord_env()) as (url, process):
        assert url.startswith("ws://127.0.0.1:")
    assert process.stderr is not None
    rest = process.stderr.read()
    assert "token" not in rest


def test_an_allow_host_with_a_port_is_exit_2() -> None:
    done = run_accord(
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--allow-host",
        "agent.example:443",
        env=accord_env(ACCORD_TOKEN=TOKEN),
    )
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.strip() == (
        "accord serve: --allow-host wants a name without port, not 'agent.example:443'"
    )


def _start(*args: str, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*ACCORD, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_run_resume_shows_the_turn_in_progress_then_runs_its_own_prompt(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = accord_env(ACCORD_TOKEN=TOKEN)
    long_turn = ScriptedReply(text=[f"part{n} " for n in range(400)], delay=0.05)
    shown = out = err = ""
    code: int | None = None
    again: subprocess.CompletedProcess[str] | None = None
    script = [long_turn, ScriptedReply(text=["Mine."]), ScriptedReply(text=["Again."])]
    with FakeOpenAIServer(script) as model:
        serve_args = ("--model", "openai:fake", "--base-url", model.base_url)
        serve_args += ("--store", str(tmp_path / "s.db"))
        with accord_serve(*serve_args, env=env) as (url, _):
            info = Implementation(name="zed", title="Zed", version="1")
            async with (
                connect(url, token=TOKEN, client_info=info, reconnect=False) as editor,
                anyio.create_task_group() as group,
            ):
                session = await editor.new_session(project)
                stream = session.stream("a long job")
                with anyio.fail_after(TIMEOUT):
                    await anext(aiter(stream))  # the turn runs

                async def drain() -> None:
                    async for _ in stream:
                        pass

                group.start_soon(drain)
                args = ("run", "--agent", url, "--session", session.session_id, "--resume")
                start = functools.partial(_start, *args, "and now mine", env=env, cwd=project)
                process = await anyio.to_thread.run_sync(start)
                assert process.stdout is not None and process.stderr is not None
                notice = await anyio.to_thread.run_sync(process.stderr.readline)
                # Whose turn it is, then that turn as it goes on.
                assert notice == (
                    "accord: Zed is running a turn in this session: shown until it ends,"
                    " then this prompt\n"
                )
                shown = await anyio.to_thread.run_sync(process.stdout.read, 40)
                assert "part" in shown
                await session.cancel()  # the editor's turn ends; the joined prompt runs
                with anyio.fail_after(TIMEOUT):
                    await stream.wait_finished()
                out, err = await anyio.to_thread.run_sync(process.communicate, None, TIMEOUT)
                code = process.returncode
                # With no turn running, --resume just joins and prompts.
                again = await anyio.to_thread.run_sync(
                    functools.partial(
                        run_accord, *args, "again", "--approve-all", env=env, cwd=project
                    )
                )
    assert again is not None
    assert again.returncode == ExitCode.OK, again.stderr
    assert "Again." in again.stdout and "running a turn" not in again.stderr
    assert code == ExitCode.OK, err
    whole = shown + out
    assert "Mine." in whole
    assert whole.index("part") < whole.index("Mine.")


def test_run_resume_without_a_session_is_refused(tmp_path: Path) -> None:
    done = run_accord("run", "--resume", "hello", env=accord_env(), cwd=tmp_path)
    assert done.returncode == ExitCode.ERROR
    assert done.stderr == "accord: --resume needs --session ID (the session to join)\n"

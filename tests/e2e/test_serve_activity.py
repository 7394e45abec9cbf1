"""``accord serve --activity FILE``: a real agent process writes the privacy-safe activity log.

The agent is ``python -m accord.cli serve`` on the fake OpenAI server (pydantic-ai's real
provider code in the agent process); a prompt, the model's reply, a tool call's arguments and
the file it reads all carry secrets, and none of them may reach the log.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import cast

import anyio
import orjson
import pytest
from helpers.timeouts import SCENARIO_TIMEOUT

from accord.client import AllowAll, connect
from accord.events import ACTIVITY_SCHEMA_VERSION
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

SECRETS = (
    "SECRET-PROMPT please",
    "SECRET-REPLY the code is 4242",
    "notes-SECRET-PATH.txt",
    "SECRET-FILE-CONTENTS hunter2",
)


async def test_serve_writes_one_record_per_event_and_no_secret(project: Path) -> None:
    (project / SECRETS[2]).write_text(SECRETS[3])
    log = project.parent / "activity.ndjson"
    script = [
        ScriptedReply(
            tool_calls=[ScriptedToolCall(name="read_file", arguments={"path": SECRETS[2]})]
        ),
        ScriptedReply(text=[SECRETS[1]]),
    ]
    with FakeOpenAIServer(script) as server:
        command = [
            sys.executable,
            "-m",
            "accord.cli",
            "serve",
            "--store",
            str(project.parent / "sessions.sqlite3"),
            "--model",
            "openai:fake-model",
            "--base-url",
            server.base_url,
            "--activity",
            str(log),
        ]
        env = {"OPENAI_API_KEY": "test", "ACCORD_MODEL": "", "ACCORD_BASE_URL": ""}
        with anyio.fail_after(SCENARIO_TIMEOUT):
            async with connect(command, cwd=project, env=env, permission_policy=AllowAll()) as conn:
                session = await conn.new_session(project)
                result = await session.prompt(SECRETS[0])
    assert result.text == SECRETS[1]  # the secrets really went through the agent
    data = log.read_bytes()
    for secret in SECRETS:
        assert secret.encode() not in data
    records = [orjson.loads(line) for line in data.splitlines()]
    # The secrets' short words are looked for in the log's words, not in its random hex ids
    # (a session id may hold "4242" by chance).
    words = [text for record in records for text in _strings(record) if not _HEX_ID.fullmatch(text)]
    assert not [text for text in words if "hunter2" in text or "4242" in text]
    assert {r["schema_version"] for r in records} == {ACTIVITY_SCHEMA_VERSION}
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "user_message_chunk" and kinds[-1] == "turn_completed"
    assert {"tool_call_started", "tool_call_ended", "text_chunk"} <= set(kinds)
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


_HEX_ID = re.compile(r"[0-9a-f]{16,}")


def _strings(value: object) -> list[str]:
    """Every string in a decoded JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = cast("dict[object, object]", value)
        return [s for key, item in value.items() for s in (*_strings(key), *_strings(item))]
    if isinstance(value, list):
        value = cast("list[object]", value)
        return [s for item in value for s in _strings(item)]
    return []


def test_serve_refuses_an_activity_file_it_cannot_open(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "accord.cli", "serve"),
            *("--store", str(tmp_path / "s.sqlite3"), "--activity", str(tmp_path)),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT,
        check=False,
    )
    assert done.returncode != 0
    assert "accord serve:" in done.stderr and str(tmp_path) in done.stderr

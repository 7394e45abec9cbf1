"""What an editor receives from ``accord serve``, message by message and in order.

Each test drives the real agent process over stdio (:mod:`._editor`) with the fake model on
loopback and asserts the exact sequence of messages the editor got: the behaviours editors
such as Zed depend on (a session's first updates only after the response that names it, the
mode offered both as modes and as a config option, ...).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from accord.schema import ForkSessionRequest, NewSessionRequest
from accord.testing import FakeOpenAIServer

from ._editor import TIMEOUT, describe, editor

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]


@pytest.fixture
def anyio_backend() -> str:
    """The editor side runs on asyncio."""
    return "asyncio"


async def test_a_new_and_a_forked_session_are_announced_right_after_their_response(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer([]) as server:
        async with editor(server, tmp_path / "sessions.sqlite3") as ed:
            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                created = await ed.conn.new_session(
                    NewSessionRequest(cwd=str(tmp_path), mcp_servers=[])
                )
            await ed.log.wait_for(start + 3)
            new = ed.log.since(start)
            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                forked = await ed.conn.fork_session(
                    ForkSessionRequest(session_id=created.session_id, cwd=str(tmp_path))
                )
            await ed.log.wait_for(start + 3)
            fork = ed.log.since(start)

    for messages, session_id in ((new, created.session_id), (fork, forked.session_id)):
        # The response first: only then does the editor know the session id.
        assert [describe(m) for m in messages] == [
            "result",
            "available_commands_update",
            "session_info_update",
        ]
        assert messages[0]["result"]["sessionId"] == session_id
        assert messages[0]["result"]["_meta"] == {"accord": {"announcements": 2}}
        for update in messages[1:]:
            assert update["params"]["sessionId"] == session_id
        commands = messages[1]["params"]["update"]["availableCommands"]
        assert {c["name"] for c in commands} >= {"mode", "clear", "help"}

"""A dropped connection is reopened and its sessions resumed, on real loopback sockets."""

from __future__ import annotations

import anyio
import pytest
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.errors import ConnectionClosed, ConnectionRefused
from accord.remote import CURSOR_META, resume_request
from accord.testing import Say

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_dropped_connection_reconnects_and_resumes_the_session(scheme: str) -> None:
    lines: list[str] = []
    back = anyio.Event()

    def status(line: str) -> None:
        lines.append(line)
        if line.startswith("reconnected"):
            back.set()

    async with served_agent([[Say("before")], [Say("after")]]) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(scheme), token=TOKEN, on_status=status) as conn:
                session = await conn.new_session()
                first = await session.prompt("one")
                await server.served[-1].aclose()  # the server drops the connection
                await back.wait()
                second = await session.prompt("two")
    assert (first.text, second.text) == ("before", "after")
    assert lines == ["connection to the agent lost; reconnecting", "reconnected; resumed 1 session"]
    assert len(server.served) == 2


async def test_without_reconnect_a_drop_ends_the_connection() -> None:
    async with served_agent([[Say("x")]]) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(), token=TOKEN, reconnect=False) as conn:
                session = await conn.new_session()
                await server.served[-1].aclose()
                with pytest.raises(ConnectionClosed):
                    await session.prompt("two")
    assert len(server.served) == 1


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_wrong_token_is_not_retried(scheme: str) -> None:
    async with served_agent() as server:
        with pytest.raises(ConnectionRefused), anyio.fail_after(TIMEOUT):
            async with connect(server.url(scheme), token="wrong-token-0123456789abcdef"):
                pass
        assert server.served == []


def test_the_resume_request_carries_the_cursor() -> None:
    with_cursor = resume_request("r1", "s1", "/work", "c42")
    without = resume_request("r2", "s1", "/work", None)
    assert with_cursor["method"] == "session/resume"
    assert with_cursor["params"] == {
        "sessionId": "s1",
        "cwd": "/work",
        "_meta": {CURSOR_META: "c42"},
    }
    assert "_meta" not in without["params"]

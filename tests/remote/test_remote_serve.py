"""Serving ACP over WebSocket and Streamable HTTP on real loopback sockets.

Each test runs a real server (``serve_remote``) with a scripted agent and real clients
(``accord.client.connect`` over ``open_remote``, or raw HTTP bytes for what a client library
would never send), on asyncio and trio.
"""

from __future__ import annotations

import logging
import ssl

import anyio
import orjson
import pytest
from _remote_support import UPGRADE, raw_request, request_bytes
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT
from helpers.tls import loopback_tls_contexts

import accord.client._session as client_session
from accord.client import AllowAll, DenyAll, connect
from accord.engines import EngineCapabilities
from accord.errors import ConnectionClosed, ConnectionRefused, LocalProtocolError
from accord.remote import ServerLimits, open_remote
from accord.schema import AvailableCommand
from accord.testing import Say, Stream, UseTool

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_prompt_turn_over_the_network(scheme: str) -> None:
    async with served_agent([[Say("Hello "), Stream(count=20)]]) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(scheme), token=TOKEN) as conn:
                session = await conn.new_session()
                result = await session.prompt("hi")
                listed = await conn.list_sessions()
    assert result.stop_reason == "end_turn"
    assert result.text.startswith("Hello ")
    assert len(result.text) > len("Hello ")
    assert session.session_id in {s.session_id for s in listed.sessions}


@pytest.mark.parametrize("scheme", ["ws", "http"])
@pytest.mark.parametrize("allow", [True, False])
async def test_a_permission_request_is_answered_over_the_network(scheme: str, allow: bool) -> None:
    turn = [UseTool(title="Edit app.py", kind="edit", ask=True, result="edited"), Say("done")]
    policy = AllowAll() if allow else DenyAll()
    async with served_agent([turn]) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(scheme), token=TOKEN, permission_policy=policy) as conn:
                result = await (await conn.new_session()).prompt("edit it")
    assert result.stop_reason == "end_turn"
    assert [call.status for call in result.tool_calls] == (["completed"] if allow else ["failed"])
    assert len(server.engine.tool_runs) == (1 if allow else 0)


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_a_second_connection_loads_the_session_of_the_first(scheme: str) -> None:
    async with served_agent([[Say("first answer")]]) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(scheme), token=TOKEN) as conn:
                session = await conn.new_session()
                await session.prompt("one")
            async with connect(server.url(scheme), token=TOKEN) as conn:
                loaded = await conn.load_session(session.session_id)
    texts = [m.text for m in loaded.view.messages if m.role == "agent"]
    assert texts == ["first answer"]


@pytest.mark.parametrize("scheme", ["ws", "http"])
@pytest.mark.parametrize("token", [None, "wrong-token-0123456789abcdef"])
async def test_a_missing_or_wrong_token_is_refused_with_401(scheme: str, token: str | None) -> None:
    async with served_agent() as server:
        with pytest.raises(ConnectionRefused) as refused, anyio.fail_after(TIMEOUT):
            async with open_remote(server.url(scheme), token=token or "x" * 20) as transport:
                await transport.send(
                    {
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": {"protocolVersion": 1},
                    }
                )
        assert refused.value.status == 401
        assert server.served == []  # nothing reached the agent


async def test_the_401_says_nothing_but_www_authenticate() -> None:
    async with served_agent() as server:
        missing = await raw_request(server.port, request_bytes("GET", headers=UPGRADE, token=None))
        wrong = await raw_request(
            server.port, request_bytes("GET", headers=UPGRADE, token="y" * 24)
        )
    for response in (missing, wrong):
        assert response.status == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.body == b"unauthorized\n"
        assert "acp-connection-id" not in response.headers


async def test_a_token_in_the_url_is_refused_even_when_right() -> None:
    async with served_agent() as server:
        in_query = await raw_request(
            server.port, request_bytes("GET", target=f"/acp?token={TOKEN}", headers=UPGRADE)
        )
        bare = await raw_request(
            server.port,
            request_bytes("GET", target=f"/acp?access_token={TOKEN}", headers=UPGRADE, token=None),
        )
    assert in_query.status == 401 and bare.status == 401
    with pytest.raises(ValueError, match="never in the URL"):
        async with open_remote(f"ws://127.0.0.1:1/acp?token={TOKEN}", token=TOKEN):
            pass


async def test_no_token_at_all_is_a_clear_local_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACCORD_TOKEN", raising=False)
    with pytest.raises(LocalProtocolError, match="ACCORD_TOKEN"):
        async with open_remote("ws://127.0.0.1:1/acp"):
            pass


async def test_the_token_comes_from_accord_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCORD_TOKEN", TOKEN)
    async with served_agent([[Say("env")]]) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url()) as conn:
                result = await (await conn.new_session()).prompt("hi")
    assert result.text == "env"


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("https://evil.example", 403),
        ("null", 403),
        ("http://localhost:5173", 101),
        ("http://127.0.0.1:3000", 101),
        ("https://ide.example.com", 101),
    ],
)
async def test_origin_is_checked_after_the_token(origin: str, status: int) -> None:
    async with served_agent(origins=["https://ide.example.com"]) as server:
        response = await raw_request(
            server.port, request_bytes("GET", headers=[*UPGRADE, ("Origin", origin)])
        )
        unauthenticated = await raw_request(
            server.port, request_bytes("GET", headers=[*UPGRADE, ("Origin", origin)], token=None)
        )
    assert response.status == status
    assert unauthenticated.status == 401


async def test_a_message_over_the_limit_closes_a_websocket_with_1009() -> None:
    limits = ServerLimits(max_message_bytes=4096)
    async with served_agent(limits=limits) as server:
        async with open_remote(server.url(), token=TOKEN) as transport:
            await transport.send({"jsonrpc": "2.0", "method": "x", "params": {"pad": "a" * 8192}})
            with pytest.raises((anyio.EndOfStream, ConnectionClosed)), anyio.fail_after(TIMEOUT):
                await transport.receive()
        # The server goes on serving.
        async with connect(server.url(), token=TOKEN) as conn:
            assert (await conn.new_session()).session_id


async def test_a_post_over_the_limit_is_413() -> None:
    limits = ServerLimits(max_message_bytes=1024)
    body = orjson.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"pad": "a" * 2048}}
    )
    async with served_agent(limits=limits) as server:
        declared = await raw_request(
            server.port,
            request_bytes("POST", headers=[("Content-Type", "application/json")], body=body),
        )
        chunked = await raw_request(
            server.port,
            b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
            + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            + f"{len(body):x}\r\n".encode()
            + body
            + b"\r\n0\r\n\r\n",
        )
    assert declared.status == 413 and chunked.status == 413


async def test_connections_per_token_are_bounded() -> None:
    limits = ServerLimits(max_connections_per_token=2)
    async with (
        served_agent(limits=limits) as server,
        open_remote(server.url(), token=TOKEN),
        open_remote(server.url(), token=TOKEN),
    ):
        with pytest.raises(ConnectionRefused) as refused:
            async with open_remote(server.url(), token=TOKEN):
                pass
        assert refused.value.status == 429


async def test_an_idle_websocket_is_closed() -> None:
    limits = ServerLimits(idle_timeout=0.2, heartbeat_interval=0.1)
    async with served_agent(limits=limits) as server, open_remote(server.url(), token=TOKEN) as t:
        with pytest.raises((anyio.EndOfStream, ConnectionClosed)), anyio.fail_after(TIMEOUT):
            await t.receive()


async def test_sse_streams_carry_heartbeat_comments() -> None:
    limits = ServerLimits(heartbeat_interval=0.05)
    init = orjson.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    async with served_agent(limits=limits) as server:
        answer = await raw_request(
            server.port,
            request_bytes("POST", headers=[("Content-Type", "application/json")], body=init),
        )
        assert answer.status == 200
        assert orjson.loads(answer.body)["result"]["protocolVersion"] == 1
        connection_id = answer.headers["acp-connection-id"]
        async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
            await stream.send(
                request_bytes(
                    "GET",
                    headers=[("Accept", "text/event-stream"), ("Acp-Connection-Id", connection_id)],
                )
            )
            received = b""
            with anyio.fail_after(TIMEOUT):
                while received.count(b": ping") < 2:
                    received += await stream.receive()
    assert received.startswith(b"HTTP/1.1 200")
    assert b"text/event-stream" in received


@pytest.mark.parametrize(
    ("request_", "status"),
    [
        pytest.param(b"NONSENSE\r\n\r\n", 400, id="not-http"),
        pytest.param(
            b"GET /acp HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400, id="bad-header-line"
        ),
        pytest.param(
            b"GET /acp HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n",
            431,
            id="huge-header",
        ),
        pytest.param(
            request_bytes(
                "POST", headers=[("Content-Type", "application/json"), ("Content-Length", "5")]
            ),
            400,
            id="two-content-lengths",
        ),
        pytest.param(request_bytes("GET", target="/other", headers=UPGRADE), 404, id="wrong-path"),
        pytest.param(request_bytes("PUT"), 405, id="put"),
        pytest.param(
            request_bytes(
                "GET",
                headers=[
                    ("Upgrade", "websocket"),
                    ("Connection", "Upgrade"),
                    ("Sec-WebSocket-Version", "13"),
                ],
            ),
            400,
            id="upgrade-without-key",
        ),
        pytest.param(
            request_bytes("GET", headers=[*UPGRADE[:3], ("Sec-WebSocket-Version", "8")]),
            426,
            id="old-websocket-version",
        ),
        pytest.param(
            request_bytes("POST", headers=[("Content-Type", "text/plain")], body=b"{}"),
            415,
            id="not-json-type",
        ),
        pytest.param(
            request_bytes("POST", headers=[("Content-Type", "application/json")], body=b"{nope"),
            400,
            id="bad-json",
        ),
        pytest.param(
            request_bytes("POST", headers=[("Content-Type", "application/json")], body=b"[1, 2]"),
            501,
            id="batch",
        ),
        pytest.param(
            request_bytes("POST", headers=[("Content-Type", "application/json")], body=b'"text"'),
            400,
            id="not-an-object",
        ),
        pytest.param(
            request_bytes(
                "POST",
                headers=[("Content-Type", "application/json")],
                body=b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}',
            ),
            400,
            id="no-connection-id",
        ),
        pytest.param(
            request_bytes(
                "POST",
                headers=[("Content-Type", "application/json"), ("Acp-Connection-Id", "nope")],
                body=b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}',
            ),
            404,
            id="unknown-connection-id",
        ),
        pytest.param(
            request_bytes(
                "GET", headers=[("Accept", "text/event-stream"), ("Acp-Connection-Id", "nope")]
            ),
            404,
            id="unknown-connection-stream",
        ),
        pytest.param(
            request_bytes("GET", headers=[("Acp-Connection-Id", "x")]), 406, id="get-without-accept"
        ),
        pytest.param(
            request_bytes("DELETE", headers=[("Acp-Connection-Id", "nope")]),
            404,
            id="delete-unknown",
        ),
        pytest.param(request_bytes("DELETE"), 400, id="delete-without-id"),
    ],
)
async def test_bad_requests_get_their_status_and_the_server_keeps_serving(
    request_: bytes, status: int
) -> None:
    async with served_agent([[Say("still here")]]) as server:
        response = await raw_request(server.port, request_)
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(), token=TOKEN) as conn:
                result = await (await conn.new_session()).prompt("hi")
    assert response.status == status
    assert result.text == "still here"


async def test_a_session_message_needs_its_session_header() -> None:
    init = orjson.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    prompt = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/prompt",
            "params": {"sessionId": "s1", "prompt": []},
        }
    )
    async with served_agent() as server:
        answer = await raw_request(
            server.port,
            request_bytes("POST", headers=[("Content-Type", "application/json")], body=init),
        )
        cid = ("Acp-Connection-Id", answer.headers["acp-connection-id"])
        json_type = ("Content-Type", "application/json")
        missing = await raw_request(
            server.port, request_bytes("POST", headers=[json_type, cid], body=prompt)
        )
        mismatched = await raw_request(
            server.port,
            request_bytes("POST", headers=[json_type, cid, ("Acp-Session-Id", "s2")], body=prompt),
        )
        again = await raw_request(
            server.port, request_bytes("POST", headers=[json_type, cid], body=init)
        )
        deleted = await raw_request(server.port, request_bytes("DELETE", headers=[cid]))
        after = await raw_request(server.port, request_bytes("DELETE", headers=[cid]))
    assert missing.status == 400 and b"Missing Acp-Session-Id" in missing.body
    assert mismatched.status == 400 and b"Mismatched" in mismatched.body
    assert again.status == 400
    assert deleted.status == 202 and after.status == 404


@pytest.mark.parametrize("scheme", ["wss", "https"])
async def test_tls(scheme: str) -> None:
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    authority.configure_trust(client_context)
    async with served_agent([[Say("secret")]], ssl_context=server_context) as server:
        with anyio.fail_after(TIMEOUT):
            async with connect(server.url(scheme), token=TOKEN, ssl_context=client_context) as conn:
                result = await (await conn.new_session()).prompt("hi")
            # A client that does not trust the certificate does not get through.
            with pytest.raises((ssl.SSLError, OSError, ConnectionClosed)):
                async with connect(server.url(scheme), token=TOKEN):
                    pass
        # Plain text on the TLS port is not served.
        with pytest.raises((ConnectionRefused, ConnectionClosed, OSError, anyio.EndOfStream)):
            async with open_remote(server.url("ws"), token=TOKEN):
                pass
    assert result.text == "secret"


_PLAN = EngineCapabilities(commands=(AvailableCommand(name="plan", description="Plan first"),))


@pytest.mark.parametrize("scheme", ["ws", "http", "wss", "https"])
async def test_a_new_session_s_announcements_arrive_with_it(
    scheme: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # No bound worth reaching: announcements parked where the client never reads hang the
    # test (and fail it at fail_after) instead of passing after the bound.
    monkeypatch.setattr(client_session, "ANNOUNCEMENT_TIMEOUT", 3600.0)
    server_context, client_context = (
        loopback_tls_contexts() if scheme in ("wss", "https") else (None, None)
    )
    async with served_agent(capabilities=_PLAN, ssl_context=server_context) as server:
        with caplog.at_level(logging.INFO, logger="accord.client"), anyio.fail_after(TIMEOUT):
            async with connect(
                server.url(scheme), token=TOKEN, reconnect=False, ssl_context=client_context
            ) as conn:
                session = await conn.new_session()
                commands = [c.name for c in session.view.available_commands]
                forked = await conn.fork_session(session.session_id)
                forked_commands = [c.name for c in forked.view.available_commands]
    assert commands == ["plan"]
    assert forked_commands == ["plan"]
    assert not [r for r in caplog.records if "did not arrive" in r.getMessage()]

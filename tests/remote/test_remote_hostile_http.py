"""The served agent against accord.testing's hostile HTTP client, on real loopback sockets.

Every attack of ``HTTP_ATTACKS`` (request smuggling, almost-right tokens, DNS-rebinding
``Host`` names, ``Origin`` look-alikes, pipelined and ``Expect`` requests that would carry an
unauthenticated one through) must be refused as the kit says, nothing may reach the agent,
and the server must go on serving. Then the cases where the right answer is to serve:
absolute-form targets, HTTP/1.0, pipelining, ``Expect: 100-continue`` with the token,
``Host`` and ``Origin`` spelled in other cases, configured host names.
"""

from __future__ import annotations

import anyio
import orjson
import pytest
from _remote_support import UPGRADE, raw_request, request_bytes
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import QUIET, TIMEOUT

from accord.remote import AccessPolicy
from accord.testing import HTTP_ATTACKS, HttpTarget, read_responses, run_http_attack, server_alive

pytestmark = pytest.mark.anyio

_INIT = orjson.dumps(
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
)


@pytest.mark.parametrize("name", sorted(HTTP_ATTACKS))
async def test_every_hostile_request_is_refused_and_the_server_keeps_serving(name: str) -> None:
    async with served_agent() as server:
        target = HttpTarget("127.0.0.1", server.port, TOKEN, quiet=0.5)
        with anyio.fail_after(TIMEOUT):
            outcome = await run_http_attack(target, HTTP_ATTACKS[name])
            alive = await server_alive(target)
        reached_agent = len(server.served)
    assert outcome.passed, f"{name}: {outcome.problem}"
    assert alive
    assert reached_agent == 1  # only server_alive's own connection


async def _exchange(port: int, data: bytes) -> list[int]:
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(data)
        responses, _ = await read_responses(stream, 0.5)
    return [r.status for r in responses]


async def test_an_absolute_form_target_for_this_server_is_served() -> None:
    async with served_agent() as server:
        target = f"http://127.0.0.1:{server.port}/acp"
        # RFC 9112, 3.2.2: the absolute form's authority stands, whatever Host says.
        statuses = await _exchange(
            server.port,
            request_bytes(
                "POST", target=target, headers=[("Content-Type", "application/json")], body=_INIT
            ).replace(b"Host: 127.0.0.1", b"Host: attacker.example"),
        )
    assert statuses == [200]


async def test_pipelined_requests_are_answered_in_order() -> None:
    async with served_agent() as server:
        one = request_bytes("GET", target="/nothing")
        two = request_bytes("DELETE", headers=[("Acp-Connection-Id", "unknown")])
        three = request_bytes("POST", headers=[("Content-Type", "application/json")], body=_INIT)
        statuses = await _exchange(server.port, one + two + three)
    assert statuses == [404, 404, 200]


async def test_http_1_0_is_served_and_closed() -> None:
    async with served_agent() as server:
        request = request_bytes(
            "POST", headers=[("Content-Type", "application/json")], body=_INIT
        ).replace(b"HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"HTTP/1.0\r\n")
        async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
            await stream.send(request)
            responses, closed = await read_responses(stream, TIMEOUT)
    assert [r.status for r in responses] == [200]
    assert closed


async def test_expect_100_continue_with_the_token_gets_100_then_the_answer() -> None:
    async with served_agent() as server:
        head = request_bytes(
            "POST", headers=[("Content-Type", "application/json"), ("Expect", "100-continue")]
        ).replace(b"Content-Length: 0", f"Content-Length: {len(_INIT)}".encode())
        async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
            await stream.send(head)
            first, _ = await read_responses(stream, 0.5)
            await stream.send(_INIT)
            then, _ = await read_responses(stream, 0.5)
    assert [r.status for r in first] == [100]
    assert [r.status for r in then] == [200]


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "LOCALHOST:8765", "localhost.", "[::1]:1", "127.1.2.3:80", "ide.example.com"],
)
async def test_loopback_names_and_configured_hosts_are_served(host: str) -> None:
    async with served_agent(hosts=["IDE.example.com"]) as server:
        request = request_bytes("GET", headers=UPGRADE).replace(
            b"Host: 127.0.0.1", f"Host: {host}".encode()
        )
        response = await raw_request(server.port, request)
    assert response.status == 101


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "127.0.0.1.attacker.example",
        "localhost:80@attacker.example",
        "127.0.0.1:port",
        "[::1",
        "",
    ],
)
async def test_a_foreign_or_malformed_host_is_refused_on_loopback(host: str) -> None:
    async with served_agent() as server:
        request = request_bytes("GET", headers=UPGRADE).replace(
            b"Host: 127.0.0.1", f"Host: {host}".encode()
        )
        response = await raw_request(server.port, request)
    assert response.status == 403
    assert response.body == b"host not allowed\n"


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("HTTP://LOCALHOST:5173", 101),
        ("http://[::1]:3000", 101),
        ("https://IDE.example.com", 101),
        ("https://ide.example.com:8443", 403),
        ("http://ide.example.com", 403),
        ("https://ide.example.com.attacker.example", 403),
        ("http://localhost.attacker.example", 403),
        ("http://127.0.0.1@attacker.example", 403),
        ("file://", 403),
        ("null", 403),
    ],
)
async def test_origin_variants(origin: str, status: int) -> None:
    async with served_agent(origins=["https://ide.example.com"]) as server:
        response = await raw_request(
            server.port, request_bytes("GET", headers=[*UPGRADE, ("Origin", origin)])
        )
    assert response.status == status


def test_allow_host_refuses_what_is_not_a_bare_name() -> None:
    for bad in ("host:80", "a/b", "user@host", " "):
        with pytest.raises(ValueError, match="--allow-host"):
            AccessPolicy.build(TOKEN, loopback=True, hosts=[bad])


def test_a_listener_that_is_not_loopback_serves_any_host_unless_told() -> None:
    open_policy = AccessPolicy.build(TOKEN, loopback=False)
    named = AccessPolicy.build(TOKEN, loopback=False, hosts=["agent.example"])
    assert open_policy.host_allowed("anything.example:443")
    assert named.host_allowed("AGENT.example:443")
    assert not named.host_allowed("other.example")
    assert not named.host_allowed("127.0.0.1")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", b"HTTP/2 is not served here: speak HTTP/1.1\n"),
        (
            b"GET /acp HTTP/1.1\nHost: 127.0.0.1\n\n",
            b"a line ending in a bare LF (CRLF required)\n",
        ),
        (
            b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\r\n b\r\n\r\n",
            b"a folded header line (obsolete line folding)\n",
        ),
    ],
)
async def test_refusals_of_framing_and_version_say_why(data: bytes, reason: bytes) -> None:
    async with served_agent() as server:
        response = await raw_request(server.port, data)
    assert response.status in (400, 505)
    assert response.body == reason


async def test_a_bad_head_pipelined_behind_a_good_request_is_refused_on_its_own() -> None:
    async with served_agent() as server:
        good = request_bytes("GET", target="/nothing")
        folded = request_bytes("GET", headers=[("X-Note", "a\r\n b")])
        statuses = await _exchange(server.port, good + folded)
    assert statuses == [404, 400]


async def test_bodies_with_bare_lf_are_not_looked_at() -> None:
    async with served_agent() as server:
        body = orjson.dumps({**orjson.loads(_INIT), "params": {"protocolVersion": 1, "x": "\n"}})
        body = body.replace(b'"x"', b'\n"x"')
        request = request_bytes("POST", headers=[("Content-Type", "application/json")], body=body)
        statuses = await _exchange(server.port, request)
    assert statuses == [200]


@pytest.mark.parametrize(
    "data",
    [
        b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\r\n\tb\r\n\r\n",
        b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nX: a\rb\r\n\r\n",
        b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\n\n",
    ],
)
async def test_bad_framing_is_found_when_the_head_arrives_a_byte_at_a_time(data: bytes) -> None:
    answer = b""
    async with served_agent() as server, await anyio.connect_tcp("127.0.0.1", server.port) as s:
        for i in range(len(data)):
            await s.send(data[i : i + 1])
            # A short look after each byte (a 25th of QUIET): the refusal may follow any of them.
            with anyio.move_on_after(QUIET / 25):
                answer = await s.receive()  # the refusal: stop sending (or the socket resets)
            if answer:
                break
    assert answer.startswith(b"HTTP/1.1 400 ")

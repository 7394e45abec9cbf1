"""The bearer token never leaves ``accord serve --listen``: not in its log, not in an answer.

SECURITY.md promises the token is "never logged, never echoed". Each test starts the real
command (``accord -vv serve --listen``, the most verbose logging there is) as a subprocess
with a model server of its own, drives it over real loopback sockets with authenticated
clients (a whole turn over WebSocket and over Streamable HTTP) and with every way of getting
the token wrong or putting it where it does not belong (every attack of
``accord.testing.HTTP_ATTACKS``, the token in the path, the ``Host``, the ``Origin``, other
headers, a malformed request line, a head over the limit), then stops it and reads all it
wrote. The token may not appear in any case, nor half of it, in stdout, stderr or any
response (status line, headers, body); a refused request's body is the refusal's fixed
reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest
from _remote_support import UPGRADE, RawResponse, raw_request
from _remote_support import request_bytes as _request_bytes
from helpers.accord_serve import accord_env, accord_serve_logged
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.testing import (
    HTTP_ATTACKS,
    FakeOpenAIServer,
    HttpTarget,
    ScriptedReply,
    ScriptedToolCall,
    run_http_attack,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.subprocess,
    pytest.mark.timeout(300),
    pytest.mark.parametrize("anyio_backend", ["asyncio"]),
]

TOKEN = "Secrecy-Token-7f3c91d2e8a4b605"
"""The server's token: distinctive, mixed case, so a case-changed copy is caught too."""

#: Fixed bodies of the refusals (the reason, nothing of the request).
REFUSAL_BODIES = {
    401: b"unauthorized\n",
    403: (b"host not allowed\n", b"origin not allowed\n"),
}


def request_bytes(
    method: str,
    *,
    target: str = "/acp",
    headers: Sequence[tuple[str, str]] = (),
    body: bytes = b"",
    token: str | None = TOKEN,
) -> bytes:
    """A request with this server's token (unless ``token`` says another, or None)."""
    return _request_bytes(method, target=target, headers=headers, body=body, token=token)


def _leaks(text: str) -> list[str]:
    """The pieces of the token found in ``text``, ignoring case: the whole, either half."""
    folded = text.lower()
    pieces = (TOKEN, TOKEN[: len(TOKEN) // 2], TOKEN[len(TOKEN) // 2 :])
    return [piece for piece in pieces if piece.lower() in folded]


def _response_text(response: RawResponse) -> str:
    headers = "".join(f"{name}: {value}\n" for name, value in response.headers.items())
    return f"{response.status}\n{headers}{response.body.decode('latin-1')}"


def _misplaced_token_requests() -> dict[str, tuple[bytes, int]]:
    """Requests carrying the token (or near it) where it does not belong, and their status."""
    wrong = f"{TOKEN}x"
    nul = f"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\0\r\n\r\n"
    return {
        "path, no auth": (request_bytes("GET", target=f"/acp/{TOKEN}", token=None), 401),
        "path, with auth": (request_bytes("GET", target=f"/{TOKEN}"), 404),
        "wrong token with suffix": (request_bytes("GET", headers=UPGRADE, token=wrong), 401),
        "token in other case": (request_bytes("GET", token=TOKEN.swapcase()), 401),
        "token twice": (request_bytes("GET", token=f"{TOKEN} {TOKEN}"), 401),
        "x-api-key": (request_bytes("GET", headers=[("X-Api-Key", TOKEN)], token=None), 401),
        "cookie": (request_bytes("GET", headers=[("Cookie", f"token={TOKEN}")], token=None), 401),
        "proxy-authorization": (
            request_bytes("GET", headers=[("Proxy-Authorization", f"Bearer {TOKEN}")], token=None),
            401,
        ),
        "subprotocol, no auth": (
            request_bytes("GET", headers=[*UPGRADE, ("Sec-WebSocket-Protocol", TOKEN)], token=None),
            401,
        ),
        "host": (
            request_bytes("GET", headers=[("Host", f"{TOKEN.lower()}.example")]).replace(
                b"Host: 127.0.0.1\r\n", b"", 1
            ),
            403,
        ),
        "origin": (
            request_bytes("GET", headers=[("Origin", f"http://{TOKEN.lower()}.example")]),
            403,
        ),
        "query with the wrong auth": (
            request_bytes("GET", target=f"/acp?access_token={TOKEN}", token="not-it-0123456789"),
            401,
        ),
        "unauthenticated body": (
            request_bytes(
                "POST",
                headers=[("Content-Type", "application/json")],
                body=f'{{"jsonrpc":"2.0","id":1,"method":"{TOKEN}"}}'.encode(),
                token=None,
            ),
            401,
        ),
        "malformed request line": (f"GET /acp?{TOKEN} HTTP/1.1 junk\r\n\r\n".encode(), 400),
        "header without a colon": (
            f"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nBearer {TOKEN}\r\n\r\n".encode(),
            400,
        ),
        "nul in the authorization": (nul.encode(), 400),
        "head over the limit": (
            request_bytes("GET", headers=[(f"X-{n}", TOKEN * 8) for n in range(80)]),
            431,
        ),
        "unknown version": (
            f"GET /acp?{TOKEN} HTTP/7.0\r\nHost: 127.0.0.1\r\n\r\n".encode(),
            505,
        ),
    }


async def _turn(url: str, project: Path) -> str:
    async with connect(url, token=TOKEN, reconnect=False) as conn:
        session = await conn.new_session(project)
        return (await session.prompt("hello")).text


async def test_the_token_is_never_logged_nor_echoed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    replies = [ScriptedReply(text=["Over WebSocket."]), ScriptedReply(text=["Over HTTP."])]
    misplaced = _misplaced_token_requests()
    answers: dict[str, RawResponse] = {}
    bodies: list[str] = []
    with FakeOpenAIServer(replies) as model:
        serve_args = ("--model", "openai:fake", "--base-url", model.base_url)
        serve_args += ("--store", str(tmp_path / "s.db"))
        with accord_serve_logged(*serve_args, env=accord_env(ACCORD_TOKEN=TOKEN)) as (url, log):
            port = urlsplit(url).port
            assert port is not None
            with anyio.fail_after(TIMEOUT * 4):
                over_ws = await _turn(url, project)
                over_http = await _turn(url.replace("ws://", "http://", 1), project)
                for name, (data, _) in misplaced.items():
                    answers[name] = await raw_request(port, data)
                target = HttpTarget("127.0.0.1", port, TOKEN, quiet=5.0)
                for attack in HTTP_ATTACKS.values():
                    outcome = await run_http_attack(target, attack)
                    assert outcome.passed, (attack.name, outcome.problem)
                    bodies += [
                        f"{r.status} {r.headers} {r.body.decode('latin-1')}"
                        for r in outcome.responses
                    ]
    assert over_ws == "Over WebSocket." and over_http == "Over HTTP."
    for name, (_, status) in misplaced.items():
        answer = answers[name]
        assert answer.status == status, (name, answer)
        assert not _leaks(_response_text(answer)), (name, answer)
        if status in REFUSAL_BODIES:
            expected = REFUSAL_BODIES[status]
            assert answer.body in (expected if isinstance(expected, tuple) else (expected,)), name
    for text in bodies:
        assert not _leaks(text), text
    # The log is the verbose one (the requests were logged), and the token is not in it.
    assert "DEBUG" in log.text and "HTTP connection" in log.text, log.text[-2000:]
    assert not _leaks(log.text), [line for line in log.stderr if _leaks(line)]


async def test_a_generated_token_is_shown_once_and_never_again(tmp_path: Path) -> None:
    with FakeOpenAIServer([ScriptedReply(text=["Generated."])]) as model:
        serve_args = ("--model", "openai:fake", "--base-url", model.base_url)
        serve_args += ("--store", str(tmp_path / "s.db"))
        with accord_serve_logged(*serve_args, env=accord_env()) as (url, log):
            shown = [line for line in log.stderr if "token (shown once" in line]
            assert len(shown) == 1, log.text
            token = shown[0].rsplit(" ", 1)[1].strip()
            port = urlsplit(url).port
            assert port is not None
            with anyio.fail_after(TIMEOUT * 2):
                async with connect(url, token=token, reconnect=False) as conn:
                    reply = (await (await conn.new_session(tmp_path)).prompt("hi")).text
                refused = await raw_request(port, request_bytes("GET", token=token.swapcase()))
                queried = await raw_request(
                    port, request_bytes("GET", target=f"/acp?token={token}", token=token)
                )
    assert reply == "Generated."
    assert refused.status == 401 and token.lower() not in _response_text(refused).lower()
    assert queried.status == 401 and token.lower() not in _response_text(queried).lower()
    assert log.text.lower().count(token.lower()) == 1, log.text


async def test_a_command_the_model_runs_does_not_inherit_the_token(tmp_path: Path) -> None:
    # The model is not trusted (SECURITY.md): a command it runs, even in auto mode, must not
    # find the server's token in its environment and hand it to the model (or the network).
    project = tmp_path / "project"
    project.mkdir()
    command = 'printenv ACCORD_TOKEN; echo "exit-$?"'
    call = ScriptedToolCall(name="run_command", arguments={"command": command})
    replies = [ScriptedReply(tool_calls=[call]), ScriptedReply(text=["Ran it."])]
    with FakeOpenAIServer(replies) as model:
        serve_args = ("--model", "openai:fake", "--base-url", model.base_url)
        serve_args += ("--store", str(tmp_path / "s.db"))
        env = accord_env(ACCORD_TOKEN=TOKEN)
        with accord_serve_logged(*serve_args, env=env, options=()) as (url, _):
            with anyio.fail_after(TIMEOUT * 2):
                async with connect(url, token=TOKEN, reconnect=False) as conn:
                    session = await conn.new_session(project)
                    await session.set_mode("auto")
                    result = await session.prompt("run it")
        sent = [json.dumps(request.body) for request in model.requests]
    assert result.text == "Ran it."
    # The command ran (printenv found nothing: exit status 1) and the model got its output.
    tool = [m for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert len(sent) >= 2 and "exit-1" in json.dumps(tool), tool
    assert not any(_leaks(body) for body in sent)

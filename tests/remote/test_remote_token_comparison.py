"""The token is compared in constant time, everywhere: through ``hmac.compare_digest``, on
two byte strings of one length, and by nothing else.

``hmac.compare_digest`` is replaced by a spy for each request to a real server (the header
of a WebSocket upgrade, a Streamable HTTP POST, GET and DELETE, a query carrying the token, a
token in the WebSocket subprotocol): every request is decided by at least one call, and every
call compares equal-length bytes (before, a token of another length was compared as it came,
which returns early). A spy that always answers "different" refuses the right token, and one
that always answers "same" refuses any query: the comparison is the one that decides. Then
the sources of ``accord.remote`` are read: no ``==``, ``!=``, ``in`` or string search touches
a name holding the token, and ``hmac.compare_digest`` is called in one place only.
"""

from __future__ import annotations

import ast
import hmac
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from _remote_support import UPGRADE, raw_request, request_bytes
from helpers.served_agent import TOKEN, served_agent

pytestmark = pytest.mark.anyio

_REMOTE = Path(__file__).parents[2] / "src" / "accord" / "remote"
_JSON = ("Content-Type", "application/json")
_EVENTS = ("Accept", "text/event-stream")
_INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'

#: Each request: its method, target, headers, body, token (None: no Authorization), and the
#: status it gets with the real comparison.
_Request = tuple[str, str, Sequence[tuple[str, str]], bytes, str | None, int]
_REQUESTS: dict[str, _Request] = {
    "websocket-right": ("GET", "/acp", UPGRADE, b"", TOKEN, 101),
    "websocket-wrong-same-length": ("GET", "/acp", UPGRADE, b"", TOKEN[::-1], 401),
    "websocket-shorter": ("GET", "/acp", UPGRADE, b"", TOKEN[:-1], 401),
    "websocket-longer": ("GET", "/acp", UPGRADE, b"", TOKEN + "x" * 1000, 401),
    "websocket-other-case": ("GET", "/acp", UPGRADE, b"", TOKEN.swapcase(), 401),
    "websocket-subprotocol": (
        "GET",
        "/acp",
        (*UPGRADE, ("Sec-WebSocket-Protocol", TOKEN)),
        b"",
        None,
        401,
    ),
    "post-initialize": ("POST", "/acp", [_JSON], _INIT, TOKEN, 200),
    "post-wrong": ("POST", "/acp", [_JSON], _INIT, "x" * 7, 401),
    "get-stream": ("GET", "/acp", [_EVENTS, ("Acp-Connection-Id", "none")], b"", TOKEN, 404),
    "delete": ("DELETE", "/acp", [("Acp-Connection-Id", "none")], b"", TOKEN, 404),
    "query-token": ("GET", f"/acp?x={TOKEN}", UPGRADE, b"", TOKEN, 401),
    "query-harmless": ("GET", "/acp?x=1;y", UPGRADE, b"", TOKEN, 101),
}

_real_compare_digest = hmac.compare_digest


def _spy(
    calls: list[tuple[object, object]], answer: Callable[[object, object], bool] | None = None
) -> Callable[[object, object], bool]:
    def compare_digest(a: object, b: object) -> bool:
        calls.append((a, b))
        if answer is not None:
            return answer(a, b)
        return _real_compare_digest(a, b)  # type: ignore[arg-type]

    return compare_digest


async def _status(port: int, name: str) -> int:
    method, target, headers, body, token, _ = _REQUESTS[name]
    request = request_bytes(method, target=target, headers=headers, body=body, token=token)
    return (await raw_request(port, request)).status


async def test_every_request_is_decided_by_compare_digest_on_equal_lengths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, tuple[int, list[tuple[object, object]]]] = {}
    async with served_agent() as server:
        for name in _REQUESTS:
            calls: list[tuple[object, object]] = []
            monkeypatch.setattr(hmac, "compare_digest", _spy(calls))
            status = await _status(server.port, name)
            monkeypatch.setattr(hmac, "compare_digest", _real_compare_digest)
            seen[name] = (status, calls)
    assert {name: status for name, (status, _) in seen.items()} == {
        name: request[-1] for name, request in _REQUESTS.items()
    }
    for name, (_, calls) in seen.items():
        assert calls, f"{name}: the token was not compared through hmac.compare_digest"
        for a, b in calls:
            assert isinstance(a, bytes) and isinstance(b, bytes), name
            assert len(a) == len(b), f"{name}: compared {len(a)} bytes with {len(b)}"


@pytest.mark.parametrize(
    ("answer", "name", "status"),
    [
        (False, "websocket-right", 401),
        (False, "post-initialize", 401),
        (False, "get-stream", 401),
        (False, "delete", 401),
        (True, "query-harmless", 401),  # every query item "is" the token: refused
    ],
)
async def test_the_comparison_is_what_decides(
    monkeypatch: pytest.MonkeyPatch, answer: bool, name: str, status: int
) -> None:
    calls: list[tuple[object, object]] = []
    async with served_agent() as server:
        monkeypatch.setattr(hmac, "compare_digest", _spy(calls, lambda a, b: answer))
        got = await _status(server.port, name)
    assert calls
    assert got == status


#: Names of values that hold the token (or a header or query item compared with it).
_SECRET_NAME = re.compile(r"token|secret", re.IGNORECASE)

#: String methods whose time depends on where two strings first differ.
_SEARCHES = frozenset({"startswith", "endswith", "find", "rfind", "index", "count", "__eq__"})


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else None


def _names(node: ast.AST) -> set[str]:
    """Every identifier in ``node`` except the callees of calls such as ``len(token)``."""
    found: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Call) and _callee(child) == "len":
            return set()  # a length is public: comparing one leaks nothing
        if isinstance(child, ast.Name):
            found.add(child.id)
        elif isinstance(child, ast.Attribute):
            found.add(child.attr)
    return found


def _unsafe_comparisons(source: str) -> list[str]:
    """Comparisons and searches in ``source`` that touch a name holding a secret."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            if not any(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops):
                continue
            operands = [node.left, *node.comparators]
            if any(any(_SECRET_NAME.search(n) for n in _names(o)) for o in operands):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr not in _SEARCHES:
                continue
            if any(_SECRET_NAME.search(n) for n in _names(node)):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_scan_finds_what_it_looks_for() -> None:
    bad = (
        "if header == b'Bearer ' + self.token: pass\n"
        "ok = secret in query\n"
        "ok = value.startswith(token)\n"
        "ok = len(token) == 43\n"  # a length: public
        "ok = token is None\n"
    )
    assert [line.split(":")[0] for line in _unsafe_comparisons(bad)] == ["1", "2", "3"]


def test_no_comparison_in_accord_remote_touches_the_token() -> None:
    files = sorted(_REMOTE.glob("*.py"))
    assert len(files) > 5
    unsafe = {
        path.name: found for path in files if (found := _unsafe_comparisons(path.read_text()))
    }
    assert unsafe == {}
    digests = [
        f"{path.name}:{node.lineno}"
        for path in files
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "compare_digest"
    ]
    # One place compares (same_secret, in _auth.py); every check of the token calls it.
    assert len(digests) == 1 and digests[0].startswith("_auth.py:"), digests

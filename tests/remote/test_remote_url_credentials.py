"""A credential in the URL, under any name or none: refused by the server and the client alike.

The server (``serve_remote`` on a real loopback socket) must answer ``401`` to a request whose
query carries a credential even when its ``Authorization`` holds the right token, since the
URL already leaked into logs and history on the way; it must serve a request whose query
merely contains a word such as ``monkey``. The client (``open_remote``) refuses to send the
URLs the server would refuse, by the same rule, and only those.
"""

from __future__ import annotations

import anyio
import pytest
from _remote_support import UPGRADE, raw_request, request_bytes
from helpers.served_agent import TOKEN, served_agent
from helpers.timeouts import TIMEOUT

from accord.remote import AccessPolicy, RemoteEndpoint, open_remote
from accord.testing import HTTP_ATTACKS

pytestmark = pytest.mark.anyio

#: Queries that carry a credential: by its name, or the token itself as a name or a value.
CREDENTIAL_QUERIES = [
    f"token={TOKEN}",
    f"api_key={TOKEN}",
    f"apiKey={TOKEN}",
    f"API-KEY={TOKEN}",
    f"x-api-key={TOKEN}",
    f"key={TOKEN}",
    f"accessToken={TOKEN}",
    f"auth_token={TOKEN}",
    f"id_token={TOKEN}",
    f"client_secret={TOKEN}",
    f"password={TOKEN}",
    f"a=1;token={TOKEN}",
    f"a=1&%74oken={TOKEN}",
    f"q=1&ACCESS%5FTOKEN={TOKEN}",
    "token=",
    "apikey",
    TOKEN,
    f"q={TOKEN}",
    f"q=Bearer%20{TOKEN}",
    f"q=bearer+{TOKEN}",
    f"a=1;{TOKEN}",
    f"x={TOKEN[:8]}%{TOKEN[8].encode().hex()}{TOKEN[9:]}",
]

#: Queries with nothing secret in them: words that merely contain ``key`` or ``auth``.
ORDINARY_QUERIES = [
    "monkey=1",
    "keyboard=us",
    "keys=3",
    "hotkey=ctrl",
    "author=me",
    "tokens=5",
    "q=hello&lang=en",
    f"q={TOKEN[:-1]}",
    "=&&;",
]


@pytest.mark.parametrize("query", CREDENTIAL_QUERIES)
async def test_a_credential_in_the_query_is_refused_even_beside_the_right_token(
    query: str,
) -> None:
    async with served_agent() as server:
        response = await raw_request(
            server.port, request_bytes("GET", target=f"/acp?{query}", headers=UPGRADE)
        )
        reached = len(server.served)
    assert response.status == 401
    assert response.body == b"unauthorized\n"
    assert TOKEN.encode() not in response.body
    assert reached == 0


@pytest.mark.parametrize("query", ORDINARY_QUERIES)
async def test_an_ordinary_query_is_served(query: str) -> None:
    async with served_agent() as server:
        response = await raw_request(
            server.port, request_bytes("GET", target=f"/acp?{query}", headers=UPGRADE)
        )
    assert response.status == 101


@pytest.mark.parametrize("query", CREDENTIAL_QUERIES)
async def test_the_client_refuses_every_url_the_server_refuses(query: str) -> None:
    with pytest.raises(ValueError, match="never in the URL"):
        async with open_remote(f"ws://127.0.0.1:1/acp?{query}", token=TOKEN):
            pass


@pytest.mark.parametrize("query", ORDINARY_QUERIES)
async def test_the_client_sends_an_ordinary_query_and_the_server_serves_it(query: str) -> None:
    async with served_agent() as server:
        with anyio.fail_after(TIMEOUT):
            async with open_remote(f"{server.url()}?{query}", token=TOKEN) as transport:
                assert transport is not None
        reached = len(server.served)
    assert reached == 1


def test_the_client_without_a_token_still_refuses_credential_names() -> None:
    # Before it knows the token (``accord bridge`` checks the URL first) the client applies
    # the name rule alone; the server's is the same rule plus its token.
    for query in ("api_key=x", "accessToken=x", "a=1;token=x", "%74oken=x"):
        with pytest.raises(ValueError, match="never in the URL"):
            RemoteEndpoint.parse(f"ws://127.0.0.1:1/acp?{query}")
    for query in ORDINARY_QUERIES:
        assert RemoteEndpoint.parse(f"ws://127.0.0.1:1/acp?{query}").target.endswith(query)


@pytest.mark.parametrize(
    "token", ["", "short", "x" * 15, "has space in it 123", "tab\tin-a-token-0123"]
)
def test_a_policy_needs_a_real_token(token: str) -> None:
    # An empty token would let "Authorization: Bearer" in and match every empty parameter.
    with pytest.raises(ValueError, match="at least 16"):
        AccessPolicy(token)


async def test_an_empty_bearer_header_and_empty_parameters_are_not_a_token() -> None:
    async with served_agent() as server:
        empty_bearer = await raw_request(
            server.port,
            request_bytes("GET", headers=[*UPGRADE, ("Authorization", "Bearer")], token=None),
        )
        empty_parts = await raw_request(
            server.port, request_bytes("GET", target="/acp?=&a=", headers=UPGRADE)
        )
    assert empty_bearer.status == 401
    assert empty_parts.status == 101


def test_the_kit_plays_the_renamed_token_attacks() -> None:
    names = {"token-in-query-api-key", "token-in-query-bare", "token-in-query-semicolon"}
    assert names <= set(HTTP_ATTACKS)

"""Advertised capabilities are derived from what is implemented; each works, the rest -32601."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest
from _agent_support import CWD, FULL, Harness, scripted, serve
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.engines import EngineCapabilities
from accord.errors import InvalidParams, MethodNotFound, RequestError
from accord.roles import Agent, is_advertised
from accord.roles._capabilities import capability_tree, implemented_methods
from accord.roles._generated_roles import AGENT_HANDLER_NAMES
from accord.schema import (
    AudioContentBlock,
    BlobResourceContents,
    CloseSessionRequest,
    ContentBlock,
    DeleteSessionRequest,
    DisableProviderRequest,
    ForkSessionRequest,
    HttpMcpServer,
    ImageContentBlock,
    ListProvidersRequest,
    ListSessionsRequest,
    LoadSessionRequest,
    ProviderCurrentConfig,
    ProviderInfo,
    ResourceContentBlock,
    ResumeSessionRequest,
    SessionStatusRequest,
    SetProviderRequest,
    SetSessionTitleRequest,
    SseMcpServer,
    TextContentBlock,
)
from accord.schema.methods import AGENT_METHODS
from accord.testing import Say, ScriptedEngine

pytestmark = pytest.mark.anyio

EVERYTHING = EngineCapabilities(
    image=True,
    audio=True,
    embedded_context=True,
    mcp_http=True,
    mcp_sse=True,
    modes=FULL.modes,
    config_options=FULL.config_options,
    commands=FULL.commands,
)
DATA = base64.b64encode(b"\x00\x01").decode()
BLOCKS: dict[str, ContentBlock] = {
    "image": ImageContentBlock(data=DATA, mime_type="image/png"),
    "audio": AudioContentBlock(data=DATA, mime_type="audio/wav"),
    "embeddedContext": ResourceContentBlock(
        resource=BlobResourceContents(uri="file:///x.bin", blob=DATA)
    ),
}


def _advertised(h: Harness) -> dict[str, Any]:
    capabilities = h.conn.agent_capabilities
    assert capabilities is not None
    return capabilities


async def test_the_advertised_tree_is_derived_from_the_implementation() -> None:
    runtime = AgentRuntime(ScriptedEngine(capabilities=EVERYTHING))
    implemented = implemented_methods(runtime, Agent, AGENT_HANDLER_NAMES)
    derived = capability_tree(AGENT_METHODS[m] for m in sorted(implemented))
    async with serve(runtime=runtime) as h:
        advertised = _advertised(h)
    assert advertised["loadSession"] is True
    sessions = dict(advertised["sessionCapabilities"])
    assert sessions.pop("additionalDirectories") == {}
    assert sessions == derived["sessionCapabilities"]
    assert set(sessions) == {
        "list",
        "delete",
        "resume",
        "close",
        "fork",
        "title",
        "status",
        "archive",
    }
    assert advertised["promptCapabilities"] == {
        "image": True,
        "audio": True,
        "embeddedContext": True,
    }
    assert advertised["mcpCapabilities"] == {"http": True, "sse": True}


async def test_every_advertised_capability_works() -> None:
    engine = scripted(*[[Say("ok")] for _ in range(8)], capabilities=EVERYTHING)
    async with serve(engine) as h:
        advertised = _advertised(h)
        sessions = advertised["sessionCapabilities"]
        conn = h.conn
        with anyio.fail_after(TIMEOUT):
            # additionalDirectories and MCP over HTTP / SSE
            assert "additionalDirectories" in sessions
            assert advertised["mcpCapabilities"]["http"] and advertised["mcpCapabilities"]["sse"]
            session_id = await h.new_session(
                additionalDirectories=["/work/lib"],
                mcpServers=[
                    HttpMcpServer(name="h", url="https://h.example", headers=[]).to_wire(),
                    SseMcpServer(name="s", url="https://s.example", headers=[]).to_wire(),
                ],
            )
            # promptCapabilities, one type at a time
            for name, block in BLOCKS.items():
                assert advertised["promptCapabilities"][name] is True
                response = await h.prompt(session_id, [TextContentBlock(text=name), block])
                assert response.stop_reason == "end_turn"
            assert "list" in sessions
            listed = await conn.list_sessions(ListSessionsRequest())
            assert [s.session_id for s in listed.sessions] == [session_id]
            assert "fork" in sessions
            fork = await conn.fork_session(ForkSessionRequest(session_id=session_id, cwd=CWD))
            assert "close" in sessions
            await conn.close_session(CloseSessionRequest(session_id=session_id))
            assert advertised["loadSession"] is True
            await conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
            assert "resume" in sessions
            await conn.resume_session(ResumeSessionRequest(session_id=fork.session_id, cwd=CWD))
            assert "title" in sessions
            titled = SetSessionTitleRequest(session_id=fork.session_id, title="Fork")
            assert (await conn.set_session_title(titled)).title == "Fork"
            assert "status" in sessions
            status = await conn.session_status(SessionStatusRequest(session_id=fork.session_id))
            assert status.status == "open"
            assert "delete" in sessions
            await conn.delete_session(DeleteSessionRequest(session_id=fork.session_id))
            assert (await h.prompt(session_id)).stop_reason == "end_turn"


async def test_unadvertised_prompt_content_is_refused() -> None:
    async with serve(scripted([Say("never")], capabilities=EngineCapabilities())) as h:
        advertised = _advertised(h)
        assert "promptCapabilities" not in advertised or not any(
            advertised["promptCapabilities"].values()
        )
        assert "mcpCapabilities" not in advertised or not advertised["mcpCapabilities"]["http"]
        session_id = await h.new_session()
        for block in BLOCKS.values():
            with pytest.raises(RequestError) as caught:
                await h.prompt(session_id, [block])
            assert caught.value.code == -32602


@pytest.mark.wire_unchecked("sends bare requests to methods the agent does not offer")
async def test_every_unadvertised_method_answers_method_not_found() -> None:
    runtime = AgentRuntime(ScriptedEngine(capabilities=EVERYTHING))
    # What the runtime offers: its handlers, less those its engine cannot back (NES without
    # ``nes``, ``providers/*`` for an engine that is no ``ProviderSettings``).
    implemented = runtime.offered_methods() | {"initialize"}
    missing = sorted(
        spec.method
        for spec in AGENT_METHODS.values()
        if spec.kind == "request" and spec.method not in implemented
    )
    assert "authenticate" in missing and "auth/status" in missing
    assert {"providers/list", "providers/set", "providers/disable"} <= set(missing)
    async with serve(runtime=runtime) as h:
        advertised = _advertised(h)
        for method in missing:
            spec = AGENT_METHODS[method]
            if spec.capability is not None:
                assert not is_advertised(advertised, spec.capability), method
            with anyio.fail_after(TIMEOUT), pytest.raises(MethodNotFound) as caught:
                await h.conn.connection.request(method, {})
            assert caught.value.code == -32601, method


class _RoutingEngine(ScriptedEngine):
    """A scripted engine that is a ``ProviderSettings``: one provider, set and disabled."""

    def __init__(self) -> None:
        super().__init__(capabilities=EVERYTHING)
        self.current: ProviderCurrentConfig | None = ProviderCurrentConfig(
            api_type="openai", base_url="http://127.0.0.1:9/v1"
        )

    async def list_providers(self) -> list[ProviderInfo]:
        return [
            ProviderInfo(
                provider_id="main", supported=["openai"], required=False, current=self.current
            )
        ]

    async def set_provider(self, request: SetProviderRequest) -> None:
        self.current = ProviderCurrentConfig(api_type=request.api_type, base_url=request.base_url)

    async def disable_provider(self, provider_id: str) -> None:
        if provider_id != "main":
            raise InvalidParams(f"unknown provider {provider_id!r}")
        self.current = None


async def test_providers_are_advertised_exactly_for_a_provider_settings_engine() -> None:
    engine = _RoutingEngine()
    async with serve(engine) as h:
        assert is_advertised(_advertised(h), ("providers",))
        with anyio.fail_after(TIMEOUT):
            listed = await h.conn.list_providers(ListProvidersRequest())
            assert [p.provider_id for p in listed.providers] == ["main"]
            await h.conn.set_provider(
                SetProviderRequest(
                    provider_id="main", api_type="anthropic", base_url="http://127.0.0.1:9"
                )
            )
            assert engine.current is not None and engine.current.api_type == "anthropic"
            with pytest.raises(RequestError) as refused:
                await h.conn.disable_provider(DisableProviderRequest(provider_id="other"))
            assert refused.value.code == -32602
            await h.conn.disable_provider(DisableProviderRequest(provider_id="main"))
            (shown,) = (await h.conn.list_providers(ListProvidersRequest())).providers
            assert shown.current is None

"""The context window an OpenAI-compatible server reports, as vLLM, llama.cpp and Ollama say it.

Each server is the fake model server on loopback, answering ``/v1/models`` with the fields
the real one adds and the real one's other routes with the JSON it answers.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from _engines_support import ModelCounter, of_type, opened, run_turn
from pydantic_ai import Agent

from accord.engines import UsageReported
from accord.engines.pydantic_ai import ModelChoice, PydanticAIEngine, ServedWindow
from accord.engines.pydantic_ai import served_context_window as served
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedUsage

pytestmark = pytest.mark.anyio


def server(
    info: dict[str, Any] | None = None,
    routes: dict[str, Any] | None = None,
    models: tuple[str, ...] = ("local",),
    script: list[ScriptedReply] | None = None,
) -> FakeOpenAIServer:
    return FakeOpenAIServer(
        script or [], models=models, model_info={"local": info or {}}, routes=routes
    )


async def test_vllm_reports_max_model_len() -> None:
    with server({"owned_by": "vllm", "max_model_len": 32768}, models=("other", "local")) as s:
        assert await served(s.base_url, "local") == 32768
        assert s.info_requests == (("GET", "/v1/models"),)


async def test_llama_cpp_reports_the_context_it_was_started_with_over_the_trained_one() -> None:
    meta = {"owned_by": "llamacpp", "meta": {"n_ctx_train": 131072, "n_vocab": 32000}}
    props = {"/props": {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}}
    with server(meta, props) as s:
        assert await served(s.base_url, "local") == 8192
        assert s.info_requests == (("GET", "/v1/models"), ("GET", "/props"))
    with server(meta) as s:  # an older server without /props: the trained length
        assert await served(s.base_url, "local") == 131072


async def test_ollama_reports_num_ctx_else_the_loaded_models_context() -> None:
    ollama = {"owned_by": "library"}
    show = {"parameters": 'stop "<|im_end|>"\nnum_ctx 16384\ntemperature 0.2'}
    with server(ollama, {"/api/show": show}) as s:
        assert await served(s.base_url, "local") == 16384
        assert s.info_requests[-1] == ("POST", "/api/show")
    running = {"models": [{"name": "other", "context_length": 2048}]}
    running["models"].append({"name": "local", "model": "local", "context_length": 4096})
    # No num_ctx in the model file: the context the loaded model runs with. The trained
    # length (model_info) would overstate what Ollama gives the model, so it is not used.
    shown = {"parameters": "temperature 0.2", "model_info": {"llama.context_length": 131072}}
    with server(ollama, {"/api/show": shown, "/api/ps": running}) as s:
        assert await served(s.base_url, "local") == 4096
    with server(ollama, {"/api/show": shown, "/api/ps": {"models": []}}) as s:
        assert await served(s.base_url, "local") is None  # not loaded: nobody knows


async def test_fields_other_servers_use_are_read() -> None:
    for key in ("context_length", "context_window", "max_context_length"):
        with server({key: 65536}) as s:
            assert await served(s.base_url, "local") == 65536, key


async def test_nothing_reported_and_nonsense_are_no_window() -> None:
    with server() as s:
        assert await served(s.base_url, "local") is None
    for nonsense in (0, -5, "32768", True, 1.5, None, [4096]):
        with server({"max_model_len": nonsense, "meta": {"n_ctx_train": nonsense}}) as s:
            assert await served(s.base_url, "local") is None, nonsense
    # Several models and none is ours: no window borrowed from another model.
    with FakeOpenAIServer(models=("a", "b"), model_info={"a": {"max_model_len": 9}}) as s:
        assert await served(s.base_url, "local") is None


async def test_an_unreachable_server_raises_and_served_window_answers_none() -> None:
    with server() as s:
        gone = s.base_url
    with pytest.raises(httpx.HTTPError):
        await served(gone, "local")
    lookup = ServedWindow(gone, "local")
    assert await lookup() is None
    assert lookup.known is None


async def test_served_window_asks_once() -> None:
    with server({"max_model_len": 2048}) as s:
        lookup = ServedWindow(s.base_url, "local", api_key="sk-local")
        assert [await lookup(), await lookup(), lookup.known] == [2048, 2048, 2048]
        assert s.info_requests == (("GET", "/v1/models"),)


async def test_the_api_key_goes_to_the_server_as_the_openai_client_sends_it() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"data": [{"id": "local", "max_model_len": 512}]})

    transport = httpx.MockTransport(handler)
    window = await served("http://x/v1", "local", api_key="sk-1", transport=transport)
    assert (window, seen) == (512, ["Bearer sk-1"])


def _usage(events: list[Any]) -> UsageReported:
    [usage] = of_type(events, UsageReported)
    return usage


async def test_the_meter_uses_the_configured_window_then_the_servers_then_pydantic_ais() -> None:
    used = ScriptedUsage(prompt_tokens=100, completion_tokens=7)
    replies = [ScriptedReply(text=["hi"], usage=used) for _ in range(3)]
    with FakeOpenAIServer(
        replies, models=("local", "gpt-4o"), model_info={"local": {"max_model_len": 4096}}
    ) as s:
        counter = ModelCounter()
        base = counter.choice(s, "local")
        configured = ModelChoice(
            id="configured",
            model=base.model,
            context_window=1000,
            window_lookup=ServedWindow(s.base_url, "local"),
        )
        reported = ModelChoice(
            id="reported", model=base.model, window_lookup=ServedWindow(s.base_url, "local")
        )
        # The server knows nothing of gpt-4o; pydantic-ai (genai-prices) knows its window.
        fallback = counter.choice(s, "gpt-4o")
        fallback = ModelChoice(
            id="fallback", model=fallback.model, window_lookup=ServedWindow(s.base_url, "gpt-4o")
        )
        sizes: list[int] = []
        for choice in (configured, reported, fallback):
            async with opened(PydanticAIEngine(Agent(), models=[choice])) as session:
                usage = _usage(await run_turn(session))
                sizes.append(usage.size)
                assert usage.used == 107
        assert sizes == [1000, 4096, 128_000]
        # The configured window asked nobody; each lookup asked once.
        assert [path for _, path in s.info_requests].count("/v1/models") == 2


async def test_an_unpriced_choice_has_no_cost_whatever_its_name() -> None:
    used = ScriptedUsage(prompt_tokens=1000, completion_tokens=10)
    with FakeOpenAIServer([ScriptedReply(text=["a"], usage=used)] * 2) as s:
        priced = ModelCounter().choice(s, "gpt-4o")
        unpriced = ModelChoice(id="gpt-4o", model=priced.model, priced=False)
        async with opened(PydanticAIEngine(Agent(), models=[priced])) as session:
            assert _usage(await run_turn(session)).cost is not None  # genai-prices' price
        async with opened(PydanticAIEngine(Agent(), models=[unpriced])) as session:
            usage = _usage(await run_turn(session))
    assert (usage.size, usage.cost) == (128_000, None)

"""Model choices: the ``model`` config option, switching, and one client per session."""

from __future__ import annotations

import anyio
import pytest
from _engines_support import ModelCounter, Turn, context, of_type, opened, run_turn
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from accord.engines import EngineCapabilities, ModelCallStarted
from accord.engines.pydantic_ai import MODEL_CONFIG_ID, ModelChoice, PydanticAIEngine
from accord.errors import InternalError, InvalidParams
from accord.schema import SelectSessionConfigOption, SessionMode
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.anyio


def models_on(server: FakeOpenAIServer, counter: ModelCounter) -> list[ModelChoice]:
    return [counter.choice(server, "small"), counter.choice(server, "large")]


def test_model_option_lists_the_choices() -> None:
    modes = (SessionMode(id="code", name="Code"),)
    engine = PydanticAIEngine(
        Agent(),
        models=[
            ModelChoice(id="small", model=TestModel(), name="Small", description="fast"),
            ModelChoice(id="large", model=TestModel()),
        ],
        default_model="large",
        capabilities=EngineCapabilities(image=True, modes=modes),
    )
    caps = engine.capabilities
    assert caps.image and caps.modes == modes
    [option] = caps.config_options
    assert isinstance(option, SelectSessionConfigOption)
    assert (option.id, option.category, option.current_value) == (MODEL_CONFIG_ID, "model", "large")
    assert [(o.value, o.name, o.description) for o in option.options] == [  # type: ignore[union-attr]
        ("small", "Small", "fast"),
        ("large", "large", None),
    ]


def test_no_choices_no_option() -> None:
    assert PydanticAIEngine(Agent(TestModel())).capabilities.config_options == ()


@pytest.mark.parametrize(
    ("models", "default"),
    [
        ([ModelChoice(id="a", model="test"), ModelChoice(id="a", model="test")], None),
        ([ModelChoice(id="a", model="test")], "b"),
    ],
)
def test_bad_choices_are_refused(models: list[ModelChoice], default: str | None) -> None:
    with pytest.raises(ValueError, match="model"):
        PydanticAIEngine(Agent(), models=models, default_model=default)


async def test_client_built_once_per_session_and_reused_across_turns() -> None:
    counter = ModelCounter()
    with FakeOpenAIServer([ScriptedReply(text=[str(i)]) for i in range(6)]) as server:
        engine = PydanticAIEngine(Agent(), models=models_on(server, counter))
        async with opened(engine) as first:
            for _ in range(3):
                await run_turn(first)
        assert counter.builds == {"small": 1}
        async with opened(engine) as second:
            for _ in range(3):
                await run_turn(second)
    assert counter.builds == {"small": 2}  # one per session, none per prompt


async def test_switching_model_sends_the_next_request_to_it() -> None:
    counter = ModelCounter()
    with FakeOpenAIServer([ScriptedReply(text=[str(i)]) for i in range(4)]) as server:
        engine = PydanticAIEngine(Agent(), models=models_on(server, counter))
        async with opened(engine) as session:
            await run_turn(session)
            assert await session.set_config_option(MODEL_CONFIG_ID, "large") is None
            assert session.model_id == "large"
            events = await run_turn(session)
            await session.set_config_option(MODEL_CONFIG_ID, "large")  # no change, no build
            await run_turn(session)
            await run_turn(session)
        models = [r.body["model"] for r in server.requests]
    assert models == ["small", "large", "large", "large"]
    assert counter.builds == {"small": 1, "large": 1}
    assert all(model.client.is_closed() for model in counter.models)  # both closed
    assert of_type(events, ModelCallStarted)[0].model == "large"


async def test_switch_during_a_turn_applies_to_the_next_turn() -> None:
    counter = ModelCounter()
    script = [ScriptedReply(text=["a", "b"]), ScriptedReply(text=["c"])]
    with FakeOpenAIServer(script) as server:
        engine = PydanticAIEngine(Agent(), models=models_on(server, counter))
        async with opened(engine) as session:
            async for event in session.run_turn([], Turn().context):
                if isinstance(event, ModelCallStarted):
                    await session.set_config_option(MODEL_CONFIG_ID, "large")
                    assert not counter.models[0].client.is_closed()  # in use until the turn ends
            assert counter.models[0].client.is_closed()
            await run_turn(session)
        models = [r.body["model"] for r in server.requests]
    assert models == ["small", "large"]


async def test_restored_config_value_picks_the_model() -> None:
    counter = ModelCounter()
    with FakeOpenAIServer([ScriptedReply(text=["x"])]) as server:
        engine = PydanticAIEngine(Agent(), models=models_on(server, counter))
        async with opened(engine, config_values={MODEL_CONFIG_ID: "large"}) as session:
            await run_turn(session)
        [request] = server.requests
    assert request.body["model"] == "large"
    assert counter.builds == {"large": 1}


async def test_turn_config_value_wins_over_a_missed_switch() -> None:
    counter = ModelCounter()
    with FakeOpenAIServer([ScriptedReply(text=["x"])]) as server:
        engine = PydanticAIEngine(Agent(), models=models_on(server, counter))
        async with opened(engine) as session:
            await run_turn(session, turn=Turn(config_values={MODEL_CONFIG_ID: "large"}))
        [request] = server.requests
    assert request.body["model"] == "large"


async def test_unknown_model_is_invalid_params() -> None:
    engine = PydanticAIEngine(Agent(), models=[ModelChoice(id="t", model=TestModel())])
    async with opened(engine) as session:
        with pytest.raises(InvalidParams):
            await session.set_config_option(MODEL_CONFIG_ID, "nope")
        with pytest.raises(InvalidParams):
            await session.set_config_option(MODEL_CONFIG_ID, True)
        assert await session.set_config_option("other", "x") is None
        assert session.model_id == "t"


async def test_agent_factory_builds_one_agent_per_session() -> None:
    built: list[str] = []

    async def factory(context: object) -> Agent[None, str]:
        built.append(getattr(context, "session_id", ""))
        return Agent(TestModel(custom_output_text="from the factory"))

    engine = PydanticAIEngine(factory)
    async with opened(engine, session_id="s1") as session:
        events = await run_turn(session)
    assert built == ["s1"]
    assert "from the factory" in str(events)


def test_a_session_needs_asyncio() -> None:
    async def open_on_trio() -> None:
        await PydanticAIEngine(Agent(TestModel())).open_session(context())

    with pytest.raises(InternalError, match="asyncio"):
        anyio.run(open_on_trio, backend="trio")

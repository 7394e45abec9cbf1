from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from accord.coder import CoderConfig, CoderState, _prompt, build_system_prompt
from accord.coder._config import (
    CONFIGURE_AUTH_METHOD_ID,
    MODEL_CONFIG_ID,
    SAVED_MODEL_AUTH_METHOD_ID,
)
from accord.coder._prompt import StateError, read_project_notes


def test_the_prompt_says_where_and_when(tmp_path: Path) -> None:
    prompt = build_system_prompt(
        cwd=str(tmp_path),
        additional_directories=["/elsewhere"],
        editor_files=True,
        editor_terminal=True,
        now=datetime(2030, 1, 2, 3, 4),
        project_notes="Use tabs.",
    )
    assert f"Working directory: {tmp_path}" in prompt
    assert "Also in the workspace: /elsewhere" in prompt
    assert "2030-01-02" in prompt
    assert "unsaved changes" in prompt
    assert "editor's terminal" in prompt
    assert prompt.endswith("Project instructions (from AGENTS.md):\nUse tabs.")
    bare = build_system_prompt(cwd="/p")
    assert "unsaved" not in bare and "Project instructions" not in bare


def test_project_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert read_project_notes(str(tmp_path)) is None
    (tmp_path / "AGENTS.md").write_text("  \n")
    assert read_project_notes(str(tmp_path)) is None
    monkeypatch.setattr(_prompt, "MAX_PROJECT_NOTES_CHARS", 5)
    (tmp_path / "AGENTS.md").write_text("abcdefgh")
    assert read_project_notes(str(tmp_path)) == "abcde\n[… AGENTS.md continues]"


def test_state_round_trip_and_errors() -> None:
    state = CoderState("prompt", {"format": "pydantic-ai/messages", "messages": []})
    assert CoderState.from_json(state.to_json()) == state
    assert CoderState.from_json(None) is None
    with pytest.raises(StateError, match="not an object"):
        CoderState.from_json([1])
    with pytest.raises(StateError, match="expected 'accord-coder/session'"):
        CoderState.from_json({"format": "other", "version": 1})
    with pytest.raises(StateError, match="no system prompt"):
        CoderState.from_json({"format": "accord-coder/session", "version": 1})


def test_config_sources() -> None:
    env = {"ACCORD_MODEL": "openai:a, openai:b", "ACCORD_BASE_URL": "http://x/v1"}
    config = CoderConfig.from_sources(environ=env)
    assert config.models == ("openai:a", "openai:b")
    assert config.base_url == "http://x/v1"
    flags = CoderConfig.from_sources(model="anthropic:c", base_url=None, environ=env)
    assert flags.models == ("anthropic:c",)
    assert flags.base_url == "http://x/v1"
    assert CoderConfig.from_sources().models == ()
    window = CoderConfig.from_sources(model="m", environ={"ACCORD_CONTEXT_WINDOW": "32768"})
    assert window.context_window == 32768
    with pytest.raises(ValueError, match="positive integer"):
        CoderConfig.from_sources(model="m", environ={"ACCORD_CONTEXT_WINDOW": "lots"})


def test_an_unconfigured_agent_says_how_to_configure_one() -> None:
    config = CoderConfig()
    problem = config.problem()
    assert problem is not None
    assert "accord serve --model" in problem and "OPENAI_API_KEY" in problem
    (method,) = config.auth_methods()
    assert method.id == SAVED_MODEL_AUTH_METHOD_ID
    assert method.description is not None and "--base-url" in method.description
    assert config.model_option() is None
    configured = CoderConfig(models=("openai:m",))
    assert configured.problem() is None
    assert configured.auth_methods(environ={"OPENAI_API_KEY": "k"}) == ()


@pytest.mark.parametrize(
    ("model", "variable"),
    [("openai:gpt-3.5-turbo", "OPENAI_API_KEY"), ("anthropic:claude-x", "ANTHROPIC_API_KEY")],
)
def test_a_model_without_its_key_advertises_how_to_give_it(model: str, variable: str) -> None:
    config = CoderConfig(models=(model,))
    assert config.missing_key({}) == variable
    (agent,) = config.auth_methods(environ={})
    assert agent.id == SAVED_MODEL_AUTH_METHOD_ID
    assert agent.description is not None and f"{variable} is not set" in agent.description
    terminal, agent = config.auth_methods(terminal=True, environ={})
    assert terminal.id == CONFIGURE_AUTH_METHOD_ID and terminal.to_wire()["type"] == "terminal"
    assert agent.id == SAVED_MODEL_AUTH_METHOD_ID
    assert config.auth_methods(environ={variable: "key"}) == ()
    served = CoderConfig(models=(model,), base_url="http://localhost:1/v1")
    assert served.missing_key({}) is None and served.auth_methods(environ={}) == ()


def test_served_model_ids_and_the_model_option() -> None:
    config = CoderConfig(models=("openai:qwen2.5-coder:7b", "llama3"), base_url="http://l/v1")
    assert config.served_model_id("openai:qwen2.5-coder:7b") == "qwen2.5-coder:7b"
    assert config.served_model_id("llama3") == "llama3"
    option = config.model_option()
    assert option is not None
    assert option.id == MODEL_CONFIG_ID
    assert option.current_value == "openai:qwen2.5-coder:7b"
    assert [o.value for o in option.options] == list(config.models)  # type: ignore[union-attr]


def test_the_model_option_id_is_the_engines() -> None:
    from accord.engines.pydantic_ai import MODEL_CONFIG_ID as ENGINE_MODEL_CONFIG_ID

    assert MODEL_CONFIG_ID == ENGINE_MODEL_CONFIG_ID

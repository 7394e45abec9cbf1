"""Controls: modes, config options, commands and title, all persisted with the session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from _agent_support import (
    COMMANDS,
    CWD,
    FULL,
    MODEL_OPTION,
    MODES,
    Harness,
    RecordingClient,
    scripted,
    serve,
)
from helpers.timeouts import TIMEOUT

from accord.engines import ConfigValue, EngineCapabilities
from accord.errors import RequestError
from accord.schema import (
    AvailableCommand,
    ForkSessionRequest,
    ListSessionsRequest,
    LoadSessionRequest,
    ResumeSessionRequest,
    SelectSessionConfigOption,
    SessionConfigOption,
    SessionConfigSelectGroup,
    SessionConfigSelectOption,
    SetSessionConfigOptionRequest,
    SetSessionModeRequest,
)
from accord.store import MemorySessionStore, SessionStore
from accord.testing import (
    ChangeCommands,
    ChangeMode,
    Say,
    ScriptedEngine,
    SetTitle,
    WaitFor,
)

pytestmark = pytest.mark.anyio


async def _set_mode(h: Harness, session_id: str, mode_id: str) -> None:
    with anyio.fail_after(TIMEOUT):
        await h.conn.set_session_mode(SetSessionModeRequest(session_id=session_id, mode_id=mode_id))


async def _set_option(
    h: Harness, session_id: str, config_id: str, value: ConfigValue
) -> list[dict[str, Any]]:
    request = SetSessionConfigOptionRequest(session_id=session_id, config_id=config_id, value=value)
    if isinstance(value, bool):
        request = SetSessionConfigOptionRequest(
            session_id=session_id, config_id=config_id, value=value, type="boolean"
        )
    with anyio.fail_after(TIMEOUT):
        response = await h.conn.set_session_config_option(request)
    return [o.to_wire() for o in response.config_options]


def _values(options: Sequence[SessionConfigOption] | list[dict[str, Any]] | None) -> dict[str, Any]:
    assert options is not None
    return {
        (o["id"] if isinstance(o, dict) else o.id): (
            o["currentValue"] if isinstance(o, dict) else o.current_value
        )
        for o in options
    }


# --------------------------------------------------------------------------- modes


async def test_sessions_start_in_the_default_mode_with_every_option() -> None:
    async with serve(ScriptedEngine(capabilities=FULL)) as h:
        session_id = await h.new_session()
        live = h.runtime._sessions.live[session_id]
        assert live.controls.mode_id == "ask"
        assert _values(live.controls.options()) == {"model": "fast", "thinking": False}


async def test_new_session_answers_modes_and_config_options() -> None:
    from accord.schema import NewSessionRequest

    async with serve(ScriptedEngine(capabilities=FULL)) as h:
        response = await h.conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
        assert response.modes is not None
        assert response.modes.current_mode_id == "ask"
        assert [m.id for m in response.modes.available_modes] == ["ask", "code", "plan"]
        assert _values(response.config_options) == {"model": "fast", "thinking": False}
        model = next(o for o in response.config_options or [] if o.id == "model")
        assert isinstance(model, SelectSessionConfigOption) and model.category == "model"


async def test_set_mode_switches_emits_and_persists() -> None:
    store = MemorySessionStore()
    engine = scripted([Say("x")], capabilities=FULL)
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        h.client.clear()
        await _set_mode(h, session_id, "code")
        assert h.client.updates(session_id) == [
            {"sessionUpdate": "current_mode_update", "currentModeId": "code"}
        ]
        assert engine.session(session_id).modes_set == ["code"]
        record = await store.get_session(session_id)
        assert record is not None and record.state["mode"] == "code"
        await h.prompt(session_id)
        assert engine.session(session_id).turn_controls[-1][0] == "code"
        # the same mode again: nothing to announce
        h.client.clear()
        await _set_mode(h, session_id, "code")
        assert h.client.updates(session_id) == []


async def test_an_unknown_mode_is_invalid_params_and_changes_nothing() -> None:
    async with serve(ScriptedEngine(capabilities=FULL)) as h:
        session_id = await h.new_session()
        h.client.clear()
        with pytest.raises(RequestError) as caught:
            await _set_mode(h, session_id, "yolo")
        assert caught.value.code == -32602
        assert "available: ask, code, plan" in caught.value.message
        assert h.runtime._sessions.live[session_id].controls.mode_id == "ask"
        assert h.client.notifications == []


async def test_set_mode_without_modes_is_method_not_found() -> None:
    async with serve() as h:
        session_id = await h.new_session()
        with pytest.raises(RequestError) as caught:
            await _set_mode(h, session_id, "ask")
        assert caught.value.code == -32601


async def test_set_mode_while_a_turn_runs_applies_to_the_next_turn() -> None:
    gate = anyio.Event()
    engine = scripted([Say("a"), WaitFor(gate), Say("b")], [Say("c")], capabilities=FULL)
    async with serve(engine) as h:
        session_id = await h.new_session()
        async with anyio.create_task_group() as tg:
            tg.start_soon(h.prompt, session_id)
            await h.client.wait_until(lambda: "agent_message_chunk" in h.client.kinds())
            await _set_mode(h, session_id, "plan")
            assert "current_mode_update" in h.client.kinds(session_id)
            gate.set()
        await h.prompt(session_id)
        assert [mode for mode, _ in engine.session(session_id).turn_controls] == ["ask", "plan"]


async def test_an_engine_may_change_the_mode_itself() -> None:
    store = MemorySessionStore()
    async with serve(scripted([ChangeMode("code")], capabilities=FULL), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        assert {"sessionUpdate": "current_mode_update", "currentModeId": "code"} in (
            h.client.updates(session_id)
        )
        record = await store.get_session(session_id)
        assert record is not None and record.state["mode"] == "code"


async def test_an_engine_switching_to_an_unoffered_mode_fails_the_turn() -> None:
    async with serve(scripted([ChangeMode("nope")], capabilities=FULL)) as h:
        session_id = await h.new_session()
        with pytest.raises(RequestError, match="unknown mode"):
            await h.prompt(session_id)


# --------------------------------------------------------------------------- config options


async def test_set_config_option_answers_the_complete_list_and_emits() -> None:
    store = MemorySessionStore()
    engine = scripted([Say("x")], capabilities=FULL)
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        h.client.clear()
        options = await _set_option(h, session_id, "model", "smart")
        assert _values(options) == {"model": "smart", "thinking": False}
        assert h.client.kinds(session_id) == ["config_option_update"]
        assert _values(h.client.updates(session_id)[0]["configOptions"]) == _values(options)
        options = await _set_option(h, session_id, "thinking", True)
        assert _values(options) == {"model": "smart", "thinking": True}
        assert engine.session(session_id).config_set == [("model", "smart"), ("thinking", True)]
        record = await store.get_session(session_id)
        assert record is not None and record.state["config"] == {"model": "smart", "thinking": True}
        await h.prompt(session_id)
        assert engine.session(session_id).turn_controls[-1][1] == {
            "model": "smart",
            "thinking": True,
        }


@pytest.mark.parametrize(
    ("config_id", "value", "words"),
    [
        ("model", "huge", "allowed: fast, smart"),
        ("nope", "x", "unknown config option"),
        ("model", True, "invalid value"),
        ("thinking", "yes", "is a boolean"),
    ],
    ids=["bad-select-value", "unknown-option", "bool-for-select", "string-for-boolean"],
)
async def test_invalid_config_values_are_refused(config_id: str, value: Any, words: str) -> None:
    async with serve(ScriptedEngine(capabilities=FULL)) as h:
        session_id = await h.new_session()
        h.client.clear()
        with pytest.raises(RequestError) as caught:
            await _set_option(h, session_id, config_id, value)
        assert caught.value.code == -32602
        assert words in caught.value.message
        assert _values(h.runtime._sessions.live[session_id].controls.options()) == {
            "model": "fast",
            "thinking": False,
        }
        assert h.client.notifications == []


async def test_boolean_options_are_only_offered_to_clients_that_advertise_them() -> None:
    from accord.schema import NewSessionRequest

    client = RecordingClient(boolean_options=False)
    async with serve(ScriptedEngine(capabilities=FULL), client=client) as h:
        response = await h.conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
        assert _values(response.config_options) == {"model": "fast"}
        session_id = response.session_id
        with pytest.raises(RequestError) as caught:
            await _set_option(h, session_id, "thinking", True)
        assert caught.value.code == -32602
        options = await _set_option(h, session_id, "model", "smart")
        assert _values(options) == {"model": "smart"}
        update = h.client.updates(session_id)[-1]
        assert update["sessionUpdate"] == "config_option_update"
        assert _values(update["configOptions"]) == {"model": "smart"}


async def test_grouped_select_values_are_accepted() -> None:
    grouped = SelectSessionConfigOption(
        id="model",
        name="Model",
        category="model",
        current_value="a1",
        options=[
            SessionConfigSelectGroup(
                group="a", name="A", options=[SessionConfigSelectOption(value="a1", name="A1")]
            ),
            SessionConfigSelectGroup(
                group="b", name="B", options=[SessionConfigSelectOption(value="b1", name="B1")]
            ),
        ],
    )
    async with serve(
        ScriptedEngine(capabilities=EngineCapabilities(config_options=(grouped,)))
    ) as h:
        session_id = await h.new_session()
        assert _values(await _set_option(h, session_id, "model", "b1")) == {"model": "b1"}


async def test_a_mode_category_option_follows_the_mode_both_ways() -> None:
    mode_option = SelectSessionConfigOption(
        id="mode",
        name="Mode",
        category="mode",
        current_value="ask",
        options=[SessionConfigSelectOption(value=m.id, name=m.name) for m in MODES],
    )
    capabilities = EngineCapabilities(modes=MODES, config_options=(mode_option, MODEL_OPTION))
    async with serve(ScriptedEngine(capabilities=capabilities)) as h:
        session_id = await h.new_session()
        h.client.clear()
        await _set_mode(h, session_id, "code")
        assert h.client.kinds(session_id) == ["current_mode_update", "config_option_update"]
        assert _values(h.client.updates(session_id)[-1]["configOptions"])["mode"] == "code"
        h.client.clear()
        options = await _set_option(h, session_id, "mode", "plan")
        assert _values(options)["mode"] == "plan"
        assert h.client.kinds(session_id) == ["config_option_update", "current_mode_update"]
        assert h.runtime._sessions.live[session_id].controls.mode_id == "plan"


async def test_an_engine_may_change_dependent_options() -> None:
    def hook(
        config_id: str, value: ConfigValue, options: Sequence[SessionConfigOption]
    ) -> list[SessionConfigOption] | None:
        if config_id != "model":
            return None
        thinking = value == "smart"
        return [
            option.model_copy(update={"current_value": value if option.id == "model" else thinking})
            for option in options
        ]

    engine = ScriptedEngine(capabilities=FULL, config_hook=hook)
    async with serve(engine) as h:
        session_id = await h.new_session()
        assert _values(await _set_option(h, session_id, "model", "smart")) == {
            "model": "smart",
            "thinking": True,
        }


async def test_config_options_without_any_offered_is_method_not_found() -> None:
    async with serve() as h:
        session_id = await h.new_session()
        with pytest.raises(RequestError) as caught:
            await _set_option(h, session_id, "model", "x")
        assert caught.value.code == -32601


# --------------------------------------------------------------------------- commands and title


async def test_commands_and_title_are_announced_when_a_session_becomes_active(
    store: SessionStore,
) -> None:
    engine = scripted([SetTitle("Fix the bug")], capabilities=FULL)
    async with serve(engine, store=store) as h:
        session_id = await h.new_session()
        first = h.client.updates(session_id)
        assert first[0] == {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [c.to_wire() for c in COMMANDS],
            "_meta": {"accord": {"announcement": True}},
        }
        assert first[1]["sessionUpdate"] == "session_info_update" and first[1]["title"] is None
        await h.prompt(session_id)
        assert {"sessionUpdate": "session_info_update", "title": "Fix the bug"} in (
            h.client.updates(session_id)
        )
        listed = await h.conn.list_sessions(ListSessionsRequest())
        assert listed.sessions[0].title == "Fix the bug"
    for method in ("load", "resume", "fork"):
        async with serve(ScriptedEngine(capabilities=FULL), store=store) as h:
            with anyio.fail_after(TIMEOUT):
                if method == "load":
                    response = await h.conn.load_session(
                        LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
                    )
                    target = session_id
                elif method == "resume":
                    response = await h.conn.resume_session(
                        ResumeSessionRequest(session_id=session_id, cwd=CWD)
                    )
                    target = session_id
                else:
                    fork = await h.conn.fork_session(
                        ForkSessionRequest(session_id=session_id, cwd=CWD)
                    )
                    response, target = fork, fork.session_id
            await h.announced(target, response.meta)
            updates = h.client.updates(target)
            assert updates[-2]["sessionUpdate"] == "available_commands_update", method
            assert updates[-1]["sessionUpdate"] == "session_info_update", method
            assert updates[-1]["title"] == "Fix the bug", method
            assert "updatedAt" in updates[-1]


async def test_commands_changed_by_the_engine_persist(store: SessionStore) -> None:
    new = (AvailableCommand(name="deploy", description="Ship it"),)
    async with serve(scripted([ChangeCommands(new)], capabilities=FULL), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        assert h.client.updates(session_id)[-1] == {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [c.to_wire() for c in new],
        }
    async with serve(ScriptedEngine(capabilities=FULL), store=store) as h:
        response = await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        await h.announced(session_id, response.meta)
        announced = [
            u
            for u in h.client.updates(session_id)
            if u["sessionUpdate"] == "available_commands_update"
        ]
        assert announced[-1]["availableCommands"] == [c.to_wire() for c in new]


async def test_engines_without_commands_announce_none() -> None:
    async with serve() as h:
        session_id = await h.new_session()
        assert h.client.kinds(session_id) == ["session_info_update"]


# --------------------------------------------------------------------------- persistence


@pytest.mark.parametrize("method", ["load", "resume", "fork"])
async def test_controls_survive_load_resume_and_fork(store: SessionStore, method: str) -> None:
    async with serve(scripted([SetTitle("T")], capabilities=FULL), store=store) as h:
        session_id = await h.new_session()
        await h.prompt(session_id)
        await _set_mode(h, session_id, "plan")
        await _set_option(h, session_id, "model", "smart")
        await _set_option(h, session_id, "thinking", True)
    engine = ScriptedEngine(capabilities=FULL)
    async with serve(engine, store=store) as h:
        with anyio.fail_after(TIMEOUT):
            if method == "load":
                response: Any = await h.conn.load_session(
                    LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
                )
                target = session_id
            elif method == "resume":
                response = await h.conn.resume_session(
                    ResumeSessionRequest(session_id=session_id, cwd=CWD)
                )
                target = session_id
            else:
                response = await h.conn.fork_session(
                    ForkSessionRequest(session_id=session_id, cwd=CWD)
                )
                target = response.session_id
        assert response.modes.current_mode_id == "plan"
        assert _values(response.config_options) == {"model": "smart", "thinking": True}
        context = engine.session(target).context
        assert context.mode_id == "plan"
        assert dict(context.config_values) == {"model": "smart", "thinking": True}
        assert h.runtime._sessions.live[target].title == "T"


async def test_choices_the_engine_no_longer_offers_fall_back_to_defaults(
    store: SessionStore,
) -> None:
    async with serve(ScriptedEngine(capabilities=FULL), store=store) as h:
        session_id = await h.new_session()
        await _set_mode(h, session_id, "plan")
        await _set_option(h, session_id, "model", "smart")
    fewer = EngineCapabilities(modes=MODES[:2], config_options=(MODEL_OPTION,))
    async with serve(ScriptedEngine(capabilities=fewer), store=store) as h:
        response = await h.conn.resume_session(ResumeSessionRequest(session_id=session_id, cwd=CWD))
        assert response.modes is not None and response.modes.current_mode_id == "ask"
        assert _values(response.config_options) == {"model": "smart"}

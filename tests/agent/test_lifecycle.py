"""The session lifecycle table: every transition, and who is blamed for an illegal one."""

from __future__ import annotations

import pytest

from accord.agent import (
    SESSION_TRANSITIONS,
    PromptInProgress,
    SessionLifecycle,
    SessionNotActive,
    session_transition_diagram,
)
from accord.errors import InvalidParams, LocalProtocolError, ResourceNotFound, SessionBusy

STATES = ("idle", "running", "cancelling", "loading", "closing", "closed")
TRIGGERS = ("prompt", "cancel", "turn_end", "reload", "ready", "close")


@pytest.mark.parametrize(("state", "trigger"), [(s, t) for s in STATES for t in TRIGGERS])
def test_every_pair_is_either_in_the_table_or_refused(state: str, trigger: str) -> None:
    lifecycle = SessionLifecycle("s", state)  # type: ignore[arg-type]
    target = SESSION_TRANSITIONS.get((state, trigger))  # type: ignore[arg-type]
    if target is not None:
        assert lifecycle.apply(trigger) == target  # type: ignore[arg-type]
        assert lifecycle.state == target
        return
    with pytest.raises((PromptInProgress, SessionNotActive, LocalProtocolError)):
        lifecycle.apply(trigger)  # type: ignore[arg-type]
    assert lifecycle.state == state


def test_a_prompt_while_running_is_busy_and_minus_32602() -> None:
    lifecycle = SessionLifecycle("s", "running")
    with pytest.raises(PromptInProgress) as caught:
        lifecycle.apply("prompt")
    assert isinstance(caught.value, SessionBusy) and isinstance(caught.value, InvalidParams)
    assert caught.value.code == -32602
    assert caught.value.data == {"sessionId": "s", "reason": "busy", "state": "running"}


def test_a_prompt_on_a_closed_session_is_not_found() -> None:
    with pytest.raises(SessionNotActive) as caught:
        SessionLifecycle("s", "closed").apply("prompt")
    assert isinstance(caught.value, ResourceNotFound) and caught.value.code == -32002


def test_runtime_triggers_at_the_wrong_time_are_local_errors() -> None:
    with pytest.raises(LocalProtocolError):
        SessionLifecycle("s", "idle").apply("turn_end")


def test_the_diagram_shows_every_change_of_state() -> None:
    diagram = session_transition_diagram()
    for (state, trigger), target in SESSION_TRANSITIONS.items():
        if state != target:
            assert f"{state} --> {target}: {trigger}" in diagram

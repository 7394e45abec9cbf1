"""``accord run --session ID`` (``session/load``) and ``accord sessions`` (``session/list``).

The agent (``store`` of ``tests/helpers/script_agent.py``) keeps its sessions in a JSON file, so
they outlive each ``accord`` process: one run creates a session, a later one continues it,
and ``accord sessions`` lists them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_support import ECHO_AGENT, accord, agent, json_lines

from accord.cli import ExitCode

pytestmark = pytest.mark.subprocess


class Store:
    """A store agent's file and two project directories to open sessions in."""

    def __init__(self, root: Path) -> None:
        self.file = root / "sessions.json"
        self.agent = agent("store", str(self.file))
        self.alpha = root / "alpha"
        self.beta = root / "beta"
        self.alpha.mkdir()
        self.beta.mkdir()

    def run(self, *args: str, cwd: Path | None = None) -> str:
        """``accord run --agent STORE ARGS``, which must succeed; its stdout."""
        done = accord("run", "--agent", self.agent, "--cwd", str(cwd or self.alpha), *args)
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        *reply, summary = done.stdout.splitlines()
        assert summary.startswith("[done, session ")
        return "\n".join(reply) + "\n"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


@pytest.fixture
def two_sessions(store: Store) -> Store:
    """``s1`` in alpha ("first"), then ``s2`` in beta ("other")."""
    assert store.run("first") == "[s1] turn 1: first\n"
    assert store.run("other", cwd=store.beta) == "[s2] turn 1: other\n"
    return store


def test_sessions_lists_the_stored_sessions_newest_first(two_sessions: Store) -> None:
    done = accord("sessions", "--agent", two_sessions.agent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"s2  2030-01-01T00:00:04Z  other  [{two_sessions.beta}]",
        f"s1  2030-01-01T00:00:02Z  first  [{two_sessions.alpha}]",
    ]
    assert done.stderr == ""


def test_sessions_cwd_keeps_one_directory(two_sessions: Store) -> None:
    done = accord("sessions", "--agent", two_sessions.agent, "--cwd", str(two_sessions.alpha))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"s1  2030-01-01T00:00:02Z  first  [{two_sessions.alpha}]\n"


def test_sessions_relative_cwd_is_made_absolute(two_sessions: Store) -> None:
    done = accord(
        "sessions", "--agent", two_sessions.agent, "--cwd", "beta", cwd=two_sessions.beta.parent
    )
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["s2"]


def test_sessions_json_prints_session_info_objects(two_sessions: Store) -> None:
    done = accord("sessions", "--agent", two_sessions.agent, "--json")
    assert done.returncode == 0, done.stderr
    assert json_lines(done.stdout) == [
        {
            "sessionId": "s2",
            "cwd": str(two_sessions.beta),
            "title": "other",
            "updatedAt": "2030-01-01T00:00:04Z",
        },
        {
            "sessionId": "s1",
            "cwd": str(two_sessions.alpha),
            "title": "first",
            "updatedAt": "2030-01-01T00:00:02Z",
        },
    ]
    filtered = accord(
        "sessions", "--agent", two_sessions.agent, "--json", "--cwd", str(two_sessions.beta)
    )
    assert [info["sessionId"] for info in json_lines(filtered.stdout)] == ["s2"]


def test_no_sessions(store: Store) -> None:
    done = accord("sessions", "--agent", store.agent)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == "no sessions\n"
    as_json = accord("sessions", "--agent", store.agent, "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert (as_json.stdout, as_json.stderr) == ("", "")


def test_session_continues_a_stored_session(two_sessions: Store) -> None:
    assert two_sessions.run("--session", "s1", "second") == "[s1] turn 2: second (earlier: first)\n"
    assert (
        two_sessions.run("--session", "s1", "third")
        == "[s1] turn 3: third (earlier: first / second)\n"
    )
    stored = json.loads(two_sessions.file.read_text())
    assert list(stored["sessions"]) == ["s1", "s2"]  # continued, not a new session
    listed = accord("sessions", "--agent", two_sessions.agent)
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["s1", "s2"]


def test_session_with_json_prints_the_replay_then_the_turn(two_sessions: Store) -> None:
    done = accord(
        "run",
        "--agent",
        two_sessions.agent,
        "--cwd",
        str(two_sessions.alpha),
        "--session",
        "s1",
        "--json",
        "second",
    )
    assert done.returncode == 0, done.stderr
    *lines, result = json_lines(done.stdout)
    assert result["result"]["sessionId"] == "s1"
    assert {line["sessionId"] for line in lines} == {"s1"}
    assert [
        (line["update"]["sessionUpdate"], line["update"]["content"]["text"]) for line in lines
    ] == [
        ("user_message_chunk", "first"),  # the history, replayed by session/load
        ("agent_message_chunk", "[s1] turn 1: first"),
        ("agent_message_chunk", "[s1] turn 2: second (earlier: first)"),
    ]


def test_unknown_session_is_an_agent_error(store: Store) -> None:
    done = accord("run", "--agent", store.agent, "--session", "nope", "hello")
    assert done.returncode == ExitCode.AGENT_FAILED
    assert done.stdout == ""
    assert "no stored session nope" in done.stderr
    assert "-32002" in done.stderr


def test_session_with_an_agent_that_cannot_load_is_a_clear_error() -> None:
    done = accord("run", "--agent", agent(ECHO_AGENT), "--session", "s1", "hello")
    assert done.returncode == ExitCode.ERROR
    assert done.stdout == ""
    assert done.stderr.startswith("accord: ")
    assert "cannot continue session 's1'" in done.stderr
    assert "session/load" in done.stderr


def test_sessions_with_an_agent_that_cannot_list_is_a_clear_error() -> None:
    done = accord("sessions", "--agent", agent(ECHO_AGENT))
    assert done.returncode == ExitCode.ERROR
    assert done.stdout == ""
    assert "cannot list sessions" in done.stderr
    assert "session/list" in done.stderr
    assert "Traceback" not in done.stderr


def test_sessions_with_a_missing_program_is_an_agent_failure(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-agent"
    done = accord("sessions", "--agent", str(missing))
    assert done.returncode == ExitCode.AGENT_FAILED
    assert str(missing) in done.stderr
    assert "No such file or directory" in done.stderr


def test_sessions_with_an_empty_agent_is_a_usage_error() -> None:
    done = accord("sessions", "--agent", "")
    assert done.returncode == ExitCode.ERROR
    assert done.stderr == "accord: --agent is empty: give an agent name or its command line\n"


def test_sessions_show_prints_one_sessions_history(two_sessions: Store) -> None:
    two_sessions.run("--session", "s1", "second")
    done = accord("sessions", "--agent", two_sessions.agent, "show", "s1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "> first",
        "[s1] turn 1: first",
        "> second",
        "[s1] turn 2: second (earlier: first)",
    ]
    as_json = accord("sessions", "--agent", two_sessions.agent, "show", "s1", "--json")
    assert [line["update"]["sessionUpdate"] for line in json_lines(as_json.stdout)] == [
        "user_message_chunk",
        "agent_message_chunk",
        "user_message_chunk",
        "agent_message_chunk",
    ]


def test_sessions_show_of_an_unknown_session_is_an_agent_error(store: Store) -> None:
    done = accord("sessions", "--agent", store.agent, "show", "nope")
    assert done.returncode == ExitCode.AGENT_FAILED
    assert "no stored session nope" in done.stderr
    assert done.stderr.count("\n") == 1


def test_sessions_delete_removes_sessions(two_sessions: Store) -> None:
    done = accord("sessions", "--agent", two_sessions.agent, "delete", "s1", "nope")
    assert done.returncode == ExitCode.AGENT_FAILED  # one of the two was not there
    assert done.stdout == "deleted s1\n"
    assert "session nope was not deleted: no stored session nope" in done.stderr
    listed = accord("sessions", "--agent", two_sessions.agent)
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["s2"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show"], "accord: accord sessions show takes one session id\n"),
        (["show", "a", "b"], "accord: accord sessions show takes one session id\n"),
        (["delete"], "accord: accord sessions delete takes one or more session ids\n"),
    ],
)
def test_sessions_actions_need_their_ids(args: list[str], message: str) -> None:
    done = accord("sessions", "--agent", agent(ECHO_AGENT), *args)
    assert done.returncode == ExitCode.USAGE
    assert done.stderr == message


def test_sessions_delete_with_an_agent_that_cannot_delete_is_a_clear_error() -> None:
    done = accord("sessions", "--agent", agent(ECHO_AGENT), "delete", "s1")
    assert done.returncode == ExitCode.ERROR
    assert "cannot delete sessions" in done.stderr

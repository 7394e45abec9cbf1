"""Permission requests an editor can render, as ``accord serve`` sends them on the wire.

An editor shows ``session/request_permission`` before anything else about the call, so its
``toolCall`` must carry what the user reviews: kind, title, locations (the absolute path and
the first changed line) and, for edits and writes, the same whole-file diff the update that
completes the call carries (worked out before asking: the file is still unchanged when the
request arrives; a new file has ``oldText`` null); for commands the whole command line and the
directory it runs in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from _e2e_editor import EditorClient, describe, editor
from helpers.timeouts import TIMEOUT

from accord.schema import (
    NewSessionRequest,
    PromptRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    TextContentBlock,
)
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]

ADD = "def add(a, b):\n    return a - b\n"
TEST = "from pkg import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


class FileWatchingClient(EditorClient):
    """Allows every call, noting what the files held when each request arrived."""

    def __init__(self, project: Path) -> None:
        super().__init__()
        self.project = project
        self.on_disk: list[dict[str, str | None]] = []

    async def request_permission(
        self, request: RequestPermissionRequest
    ) -> RequestPermissionResponse:
        seen: dict[str, str | None] = {}
        for name in ("pkg/__init__.py", "tests/test_add.py", "notes/todo.txt"):
            path = self.project / name
            seen[name] = path.read_text() if path.exists() else None
        self.on_disk.append(seen)
        return await super().request_permission(request)


def _call(name: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=name, arguments=arguments)])


async def _turn(project: Path, replies: list[ScriptedReply], client: EditorClient) -> list[Any]:
    with FakeOpenAIServer(replies) as server:
        async with editor(server, project / "sessions.sqlite3", client=client) as ed:
            with anyio.fail_after(TIMEOUT):
                created = await ed.conn.new_session(
                    NewSessionRequest(cwd=str(project), mcp_servers=[])
                )
                start = len(ed.log.received)
                await ed.conn.prompt(
                    PromptRequest(
                        session_id=created.session_id,
                        prompt=[TextContentBlock(text="fix add, note it, run the tests")],
                    )
                )
            return ed.log.since(start)


def _requests(turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["params"]["toolCall"] for m in turn if describe(m) == "session/request_permission"]


def _completion(turn: list[dict[str, Any]], tool_call_id: str) -> dict[str, Any]:
    (update,) = [
        m["params"]["update"]
        for m in turn
        if describe(m) == "tool_call_update"
        and m["params"]["update"]["toolCallId"] == tool_call_id
        and m["params"]["update"].get("status") == "completed"
    ]
    return update


async def test_each_edit_tool_asks_with_the_diff_and_locations_its_completion_carries(
    project: Path,
) -> None:
    init = str(project / "pkg" / "__init__.py")
    test = str(project / "tests" / "test_add.py")
    todo = str(project / "notes" / "todo.txt")
    replies = [
        _call("edit_file", path="pkg/__init__.py", old_text="a - b", new_text="a + b"),
        _call("write_file", path="notes/todo.txt", content="check add\n"),
        _call("write_file", path="tests/test_add.py", content=TEST + "    assert add(0, 0) == 0\n"),
        ScriptedReply(text=["Done."]),
    ]
    client = FileWatchingClient(project)
    turn = await _turn(project, replies, client)

    edit, create, overwrite = _requests(turn)
    expected = [
        (edit, "Edit pkg/__init__.py", init, 2, ADD, ADD.replace("a - b", "a + b")),
        (create, "Write notes/todo.txt", todo, 1, None, "check add\n"),
        (overwrite, "Write tests/test_add.py", test, 6, TEST, TEST + "    assert add(0, 0) == 0\n"),
    ]
    for asked, title, path, line, old, new in expected:
        assert asked["kind"] == "edit"
        assert asked["title"] == title
        assert asked["locations"] == [{"path": path, "line": line}]
        assert asked["content"] == [{"type": "diff", "path": path, "oldText": old, "newText": new}]
        done = _completion(turn, asked["toolCallId"])
        assert done["locations"] == asked["locations"]
        assert done["content"] == asked["content"]
    # each request came before its change was made
    fixed = ADD.replace("a - b", "a + b")
    assert client.on_disk == [
        {"pkg/__init__.py": ADD, "tests/test_add.py": TEST, "notes/todo.txt": None},
        {"pkg/__init__.py": fixed, "tests/test_add.py": TEST, "notes/todo.txt": None},
        {"pkg/__init__.py": fixed, "tests/test_add.py": TEST, "notes/todo.txt": "check add\n"},
    ]
    # the update sent just before each request already shows the editor what it will ask
    for asked in (edit, create, overwrite):
        index = next(
            i
            for i, m in enumerate(turn)
            if describe(m) == "session/request_permission"
            and m["params"]["toolCall"]["toolCallId"] == asked["toolCallId"]
        )
        before = [
            m["params"]["update"]
            for m in turn[:index]
            if describe(m) == "tool_call_update"
            and m["params"]["update"]["toolCallId"] == asked["toolCallId"]
        ]
        assert before[-1]["content"] == asked["content"]
        assert before[-1]["locations"] == asked["locations"]


async def test_a_command_asks_with_its_whole_line_and_directory(project: Path) -> None:
    line = "python -c 'print(1 + 1)'  &&  echo '```'  &&  pwd"
    replies = [
        _call("run_command", command=line, cwd="pkg"),
        _call("run_command", command="ls"),
        ScriptedReply(text=["Ran."]),
    ]
    turn = await _turn(project, replies, EditorClient())

    elsewhere, here = _requests(turn)
    assert elsewhere["kind"] == "execute"
    assert elsewhere["title"] == "Run python -c 'print(1 + 1)' && echo '```' && pwd (in pkg)"
    # a fence longer than any run of backticks in the line, then the absolute directory
    (shown,) = elsewhere["content"]
    assert shown["content"]["text"] == f"````sh\n{line}\n````\nin {project / 'pkg'}"
    assert here["title"] == "Run ls"
    assert here["content"][0]["content"]["text"] == f"```sh\nls\n```\nin {project}"
    # it ran where the request said
    (result,) = _completion(turn, elsewhere["toolCallId"])["content"]
    assert result["content"]["text"] == f"2\n```\n{project / 'pkg'}\n[exit code 0]"


async def test_an_edit_bound_to_fail_asks_with_what_its_arguments_say(project: Path) -> None:
    replies = [
        _call("edit_file", path="pkg/__init__.py", old_text="a * b", new_text="a + b"),
        ScriptedReply(text=["It was not there."]),
    ]
    turn = await _turn(project, replies, EditorClient())

    (asked,) = _requests(turn)
    path = str(project / "pkg" / "__init__.py")
    assert asked["locations"] == [{"path": path}]
    assert asked["content"] == [
        {"type": "diff", "path": path, "oldText": "a * b", "newText": "a + b"}
    ]
    assert (project / "pkg" / "__init__.py").read_text() == ADD

"""What an editor receives from ``accord serve``, message by message and in order.

Each test drives the real agent process over stdio (:mod:`_e2e_editor`) with the fake model on
loopback and asserts the exact sequence of messages the editor got: the behaviours editors
such as Zed depend on (a session's first updates only after the response that names it, the
mode offered both as modes and as a config option, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from _e2e_editor import describe, editor, serve_command
from helpers.timeouts import TIMEOUT

from accord.client import connect
from accord.errors import RequestError
from accord.schema import (
    ForkSessionRequest,
    ListSessionsRequest,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    ResumeSessionRequest,
    SetSessionConfigOptionRequest,
    SetSessionModeRequest,
    TextContentBlock,
)
from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedToolCall, ScriptedUsage

pytestmark = [pytest.mark.anyio, pytest.mark.subprocess]


async def test_a_new_and_a_forked_session_are_announced_right_after_their_response(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer([]) as server:
        async with editor(server, tmp_path / "sessions.sqlite3") as ed:
            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                created = await ed.conn.new_session(
                    NewSessionRequest(cwd=str(tmp_path), mcp_servers=[])
                )
            await ed.log.wait_for(start + 3)
            new = ed.log.since(start)
            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                forked = await ed.conn.fork_session(
                    ForkSessionRequest(session_id=created.session_id, cwd=str(tmp_path))
                )
            await ed.log.wait_for(start + 3)
            fork = ed.log.since(start)

    for messages, session_id in ((new, created.session_id), (fork, forked.session_id)):
        # The response first: only then does the editor know the session id.
        assert [describe(m) for m in messages] == [
            "result",
            "available_commands_update",
            "session_info_update",
        ]
        assert messages[0]["result"]["sessionId"] == session_id
        assert messages[0]["result"]["_meta"] == {"accord": {"announcements": 2}}
        for update in messages[1:]:
            assert update["params"]["sessionId"] == session_id
        commands = messages[1]["params"]["update"]["availableCommands"]
        assert {c["name"] for c in commands} >= {"mode", "clear", "help"}


def _option(options: list[dict[str, Any]], category: str) -> dict[str, Any]:
    (option,) = [o for o in options if o.get("category") == category]
    return option


async def test_the_mode_is_offered_as_modes_and_as_a_mode_option_kept_in_sync(
    tmp_path: Path,
) -> None:
    store = tmp_path / "sessions.sqlite3"
    cwd = str(tmp_path)
    with FakeOpenAIServer([]) as server:
        async with editor(server, store) as ed:
            # Counted before the request: the response and its two announcements may arrive in
            # one read, all recorded before ``new_session`` returns.
            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                created = await ed.conn.new_session(NewSessionRequest(cwd=cwd, mcp_servers=[]))
            session_id = created.session_id
            await ed.log.wait_for(start + 3)
            assert [describe(m) for m in ed.log.since(start)] == [
                "result",
                "available_commands_update",
                "session_info_update",
            ]
            opened = ed.log.received[start]["result"]

            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                await ed.conn.set_session_mode(
                    SetSessionModeRequest(session_id=session_id, mode_id="ask")
                )
            by_mode = ed.log.since(start)

            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                await ed.conn.set_session_config_option(
                    SetSessionConfigOptionRequest(
                        session_id=session_id, config_id="mode", value="auto"
                    )
                )
            by_option = ed.log.since(start)
        # A new agent process on the same store: the mode comes back both ways.
        async with editor(server, store) as ed:
            with anyio.fail_after(TIMEOUT):
                loaded = await ed.conn.load_session(
                    LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=[])
                )
                resumed_id = (
                    await ed.conn.fork_session(ForkSessionRequest(session_id=session_id, cwd=cwd))
                ).session_id
                resumed = await ed.conn.resume_session(
                    ResumeSessionRequest(session_id=resumed_id, cwd=cwd)
                )

    assert opened["modes"]["currentModeId"] == "code"
    assert [m["id"] for m in opened["modes"]["availableModes"]] == ["ask", "code", "auto"]
    mode = _option(opened["configOptions"], "mode")
    assert mode["id"] == "mode" and mode["type"] == "select"
    assert mode["currentValue"] == "code"
    assert [o["value"] for o in mode["options"]] == ["ask", "code", "auto"]
    assert _option(opened["configOptions"], "model")["currentValue"] == "openai:fake-model"

    # set_mode: the mode update, then the option list showing the new mode, then the answer.
    assert [describe(m) for m in by_mode] == [
        "current_mode_update",
        "config_option_update",
        "result",
    ]
    assert by_mode[0]["params"]["update"]["currentModeId"] == "ask"
    assert _option(by_mode[1]["params"]["update"]["configOptions"], "mode")["currentValue"] == "ask"

    # Setting the option switches the mode: both updates, and the answer lists the option set.
    assert [describe(m) for m in by_option] == [
        "config_option_update",
        "current_mode_update",
        "result",
    ]
    assert by_option[1]["params"]["update"]["currentModeId"] == "auto"
    assert _option(by_option[2]["result"]["configOptions"], "mode")["currentValue"] == "auto"

    for restored in (loaded, resumed):
        assert restored.modes is not None and restored.modes.current_mode_id == "auto"
        assert restored.config_options is not None
        (option,) = [o for o in restored.config_options if o.id == "mode"]
        assert option.current_value == "auto"


async def test_accord_s_client_shows_the_prompt_once_with_the_agent_s_message_id(
    tmp_path: Path,
) -> None:
    env = {"OPENAI_API_KEY": "test", "ACCORD_MODEL": "", "ACCORD_BASE_URL": ""}
    with FakeOpenAIServer([ScriptedReply(text=["Hello"])]) as server:
        command = serve_command(server, tmp_path / "sessions.sqlite3")
        with anyio.fail_after(TIMEOUT):
            async with connect(command, cwd=tmp_path, env=env) as connection:
                session = await connection.new_session(tmp_path)
                # The announcements came right after the response; the client waited.
                assert {c.name for c in session.view.available_commands} >= {"mode", "clear"}
                await session.prompt("Hi there")
    messages = [(m.role, m.text, m.message_id is not None) for m in session.view.messages]
    assert messages == [("user", "Hi there", True), ("agent", "Hello", True)]


async def test_the_editor_is_not_sent_its_prompt_back_and_a_load_replays_it(
    tmp_path: Path,
) -> None:
    store = tmp_path / "sessions.sqlite3"
    cwd = str(tmp_path)
    with FakeOpenAIServer([ScriptedReply(text=["Hello"])]) as server:
        async with editor(server, store) as ed:
            with anyio.fail_after(TIMEOUT):
                created = await ed.conn.new_session(NewSessionRequest(cwd=cwd, mcp_servers=[]))
                start = len(ed.log.received)
                answered = await ed.conn.prompt(
                    PromptRequest(
                        session_id=created.session_id, prompt=[TextContentBlock(text="Hi there")]
                    )
                )
            turn = ed.log.since(start)
        async with editor(server, store) as ed:
            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                await ed.conn.load_session(
                    LoadSessionRequest(session_id=created.session_id, cwd=cwd, mcp_servers=[])
                )
            loaded = ed.log.since(start)
    # Live, the editor that sent the prompt gets the answer only (it shows what it sent) ...
    assert "user_message_chunk" not in [describe(m) for m in turn]
    message_id = (answered.meta or {})["accord/userMessageId"]
    # ... and the reopened thread has the prompt, with the id the editor was told.
    [prompt] = [m["params"]["update"] for m in loaded if describe(m) == "user_message_chunk"]
    assert prompt["content"] == {"type": "text", "text": "Hi there"}
    assert prompt["messageId"] == message_id


def _without_title(messages: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The turn's messages apart from its ``session_info_update``s, and the titles they set.

    The title is written beside the turn (the model's answer may come first): the other
    messages keep their order, the title comes once, before the answer (the prompt is not
    echoed back to the editor that sent it).
    """
    kinds = [describe(m) for m in messages]
    titles = [
        m["params"]["update"]["title"] for m in messages if describe(m) == "session_info_update"
    ]
    if titles:
        position = kinds.index("session_info_update")
        assert position < kinds.index("result")
    return [k for k in kinds if k != "session_info_update"], titles


@pytest.mark.parametrize(
    ("side_scripts", "title"),
    [
        ({"title": [ScriptedReply(text=["Fix the ", "add bug\n"])]}, "Fix the add bug"),
        (None, "Please fix add()"),  # the model wrote none: the prompt's first line
    ],
    ids=["model", "first-line"],
)
async def test_the_first_prompt_titles_the_session_and_only_prompted_sessions_are_listed(
    tmp_path: Path, side_scripts: dict[str, list[ScriptedReply]] | None, title: str
) -> None:
    store = tmp_path / "sessions.sqlite3"
    cwd = str(tmp_path)
    replies = [ScriptedReply(text=["Done."]), ScriptedReply(text=["Again."])]
    with FakeOpenAIServer(replies, side_scripts=side_scripts) as server:
        async with editor(server, store) as ed:
            before = len(ed.log.received)  # initialize's answer
            with anyio.fail_after(TIMEOUT):
                unused = await ed.conn.new_session(NewSessionRequest(cwd=cwd, mcp_servers=[]))
                created = await ed.conn.new_session(NewSessionRequest(cwd=cwd, mcp_servers=[]))
                # Two responses, each with its two announcements (which may still be on the
                # way when new_session returns: counted from before, so none spills into the
                # first prompt's messages).
                await ed.log.wait_for(before + 6)
            session_id = created.session_id
            prompts = []
            for text in ("Please fix add()\nin pkg/__init__.py", "And the tests?"):
                start = len(ed.log.received)
                with anyio.fail_after(TIMEOUT):
                    await ed.conn.prompt(
                        PromptRequest(session_id=session_id, prompt=[TextContentBlock(text=text)])
                    )
                prompts.append(ed.log.since(start))
            with anyio.fail_after(TIMEOUT):
                listed = await ed.conn.list_sessions(ListSessionsRequest(cwd=cwd))
        async with editor(server, store) as ed:
            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                await ed.conn.load_session(
                    LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=[])
                )
                await ed.log.wait_for(start + 2)
                relisted = await ed.conn.list_sessions(ListSessionsRequest(cwd=cwd))
            loaded = ed.log.since(start)

    first, titles = _without_title(prompts[0])
    assert first == ["agent_message_chunk", "result"]
    assert titles == [title]
    # The second prompt does not title the session again.
    assert [describe(m) for m in prompts[1]] == [
        "agent_message_chunk",
        "result",
    ]
    # The title request went to the model apart from the turns, once.
    assert [r.body["messages"][-1]["content"] for r in server.side_requests] == [
        "Please fix add()\nin pkg/__init__.py"
    ]
    assert len(server.requests) == 2
    # Listed with its title; the session never prompted is not history.
    assert [(s.session_id, s.title) for s in listed.sessions] == [(session_id, title)]
    assert unused.session_id not in {s.session_id for s in relisted.sessions}
    # Persisted: the replay shows the title, and the announcement after the response too.
    replayed = [
        m["params"]["update"].get("title") for m in loaded if describe(m) == "session_info_update"
    ]
    assert replayed == [title, title]
    assert [s.title for s in relisted.sessions] == [title]


async def test_a_refused_prompt_is_not_in_the_next_prompt_also_after_a_load(
    tmp_path: Path,
) -> None:
    store = tmp_path / "sessions.sqlite3"
    cwd = str(tmp_path)
    replies = [
        ScriptedReply(text=["Sure."]),
        ScriptedReply(text=["I can't help with that."], finish_reason="content_filter"),
        ScriptedReply(text=["Next."]),
        ScriptedReply(text=["Loaded."]),
    ]

    async def prompt(ed: Any, session_id: str, text: str) -> list[dict[str, Any]]:
        start = len(ed.log.received)
        with anyio.fail_after(TIMEOUT):
            await ed.conn.prompt(
                PromptRequest(session_id=session_id, prompt=[TextContentBlock(text=text)])
            )
        return ed.log.since(start)

    with FakeOpenAIServer(replies) as server:
        async with editor(server, store) as ed:
            with anyio.fail_after(TIMEOUT):
                created = await ed.conn.new_session(NewSessionRequest(cwd=cwd, mcp_servers=[]))
            session_id = created.session_id
            await prompt(ed, session_id, "hello")
            refused = await prompt(ed, session_id, "forbidden request")
            await prompt(ed, session_id, "after the refusal")
        async with editor(server, store) as ed:
            with anyio.fail_after(TIMEOUT):
                await ed.conn.load_session(
                    LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=[])
                )
            await prompt(ed, session_id, "after the load")

    assert [describe(m) for m in refused] == [
        "agent_message_chunk",
        "result",
    ]
    assert refused[-1]["result"]["stopReason"] == "refusal"
    for request in server.requests[2:]:
        sent = [m.get("content") for m in request.messages]
        assert "forbidden request" not in sent
        assert "I can't help with that." not in sent
        assert "hello" in sent
    assert [m.get("content") for m in server.requests[3].messages][-3:] == [
        "after the refusal",
        "Next.",
        "after the load",
    ]


async def test_an_mcp_server_of_a_transport_not_advertised_is_refused(tmp_path: Path) -> None:
    server = {"type": "sse", "name": "old-sse", "url": "http://127.0.0.1:9/sse", "headers": []}
    with FakeOpenAIServer([]) as model:
        async with editor(model, tmp_path / "sessions.sqlite3") as ed:
            advertised = ed.log.received[0]["result"]["agentCapabilities"]["mcpCapabilities"]
            start = len(ed.log.received)
            request = NewSessionRequest.model_validate(
                {"cwd": str(tmp_path), "mcpServers": [server]}
            )
            with anyio.fail_after(TIMEOUT), pytest.raises(RequestError) as refused:
                await ed.conn.new_session(request)
            answered = ed.log.since(start)
            with anyio.fail_after(TIMEOUT):
                listed = await ed.conn.list_sessions(ListSessionsRequest())

    assert advertised == {"http": True, "sse": False, "acp": True}
    # Only the error: no session was made, nothing of one was announced.
    assert [describe(m) for m in answered] == ["error"]
    error = answered[0]["error"]
    assert error["code"] == -32602
    assert f"{server['name']!r} ({server['type']})" in error["message"]
    assert "stdio, http, acp" in error["message"]
    assert error["data"] == {
        "reason": "mcp_transport_not_supported",
        "mcpServers": [{"name": server["name"], "type": server["type"]}],
        "supported": ["stdio", "http", "acp"],
    }
    assert refused.value.code == -32602
    assert listed.sessions == []


async def test_a_text_only_model_does_not_take_a_pasted_image(tmp_path: Path) -> None:
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    with FakeOpenAIServer([]) as model:
        async with editor(model, tmp_path / "sessions.sqlite3") as ed:
            capabilities = ed.log.received[0]["result"]["agentCapabilities"]
            advertised = capabilities["promptCapabilities"]
            with anyio.fail_after(TIMEOUT):
                created = await ed.conn.new_session(
                    NewSessionRequest(cwd=str(tmp_path), mcp_servers=[])
                )
                await ed.log.wait_for(4)
            start = len(ed.log.received)
            request = PromptRequest.model_validate(
                {
                    "sessionId": created.session_id,
                    "prompt": [{"type": "text", "text": "see"}, image],
                }
            )
            with anyio.fail_after(TIMEOUT), pytest.raises(RequestError):
                await ed.conn.prompt(request)
            answered = ed.log.since(start)

    # The served model (an OpenAI-compatible server: a text-only profile) takes no images.
    assert advertised == {"image": False, "audio": False, "embeddedContext": True}
    # The extensions it serves, advertised: the event chain, the turn-start notice to the
    # prompting client, the turn-end outcome and delivery cursors.
    assert capabilities["_meta"] == {
        "accord": {
            "events": {"method": "_accord/event", "layers": ["render", "state", "observe"]},
            "turnStart": True,
            "turnEnd": True,
        },
        "acp/cursor": {"attach": True},
    }
    assert [describe(m) for m in answered] == ["error"]
    assert answered[0]["error"]["code"] == -32602
    assert "image" in answered[0]["error"]["message"]
    assert model.requests == ()


async def test_the_tool_name_and_the_turn_s_token_usage_are_sent(project: Path) -> None:
    replies = [
        ScriptedReply(
            tool_calls=[ScriptedToolCall(name="read_file", arguments={"path": "pkg/__init__.py"})],
            usage=ScriptedUsage(prompt_tokens=100, completion_tokens=7),
        ),
        ScriptedReply(
            text=["It subtracts."], usage=ScriptedUsage(prompt_tokens=130, completion_tokens=4)
        ),
    ]
    with FakeOpenAIServer(replies) as server:
        async with editor(server, project / "sessions.sqlite3") as ed:
            with anyio.fail_after(TIMEOUT):
                created = await ed.conn.new_session(
                    NewSessionRequest(cwd=str(project), mcp_servers=[])
                )
                await ed.log.wait_for(4)
            start = len(ed.log.received)
            with anyio.fail_after(TIMEOUT):
                await ed.conn.prompt(
                    PromptRequest(
                        session_id=created.session_id,
                        prompt=[TextContentBlock(text="what does add do?")],
                    )
                )
            turn = ed.log.since(start)

    kinds, _ = _without_title(turn)
    assert "user_message_chunk" not in kinds and kinds[-1] == "result"
    (started,) = [m["params"]["update"] for m in turn if describe(m) == "tool_call"]
    assert started["name"] == "read_file"
    result = dict(turn[-1]["result"])
    assert isinstance(result.pop("_meta")["accord/userMessageId"], str)
    assert result == {
        "stopReason": "end_turn",
        "usage": {"totalTokens": 241, "inputTokens": 230, "outputTokens": 11},
    }

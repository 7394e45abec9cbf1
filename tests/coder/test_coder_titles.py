"""The coder's generated session titles (the model titles the first prompt) against a title the
client set: the client's stays, here and in the next process on the same SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from accord.client import connect
from accord.coder import CoderConfig, CoderRuntime
from accord.store import SqliteSessionStore
from accord.testing import FakeOpenAIServer, ScriptedReply

pytestmark = pytest.mark.anyio


async def test_the_model_s_title_does_not_replace_the_client_s(
    project: Path, tmp_path: Path
) -> None:
    replies = [ScriptedReply(text=[word]) for word in ("one", "two", "three")]
    side = {"title": [ScriptedReply(text=[f"Model title {n}"]) for n in range(1, 4)]}
    database = tmp_path / "sessions.sqlite3"
    with FakeOpenAIServer(replies, side_scripts=side) as server:
        config = CoderConfig(models=("openai:fake-model",), base_url=server.base_url)
        async with SqliteSessionStore(database) as store:
            runtime = CoderRuntime(config, store=store)
            try:
                async with connect(runtime, cwd=project) as connection:
                    untitled = await connection.new_session(project)
                    await untitled.prompt("rename the module")
                    assert untitled.view.title == "Model title 1"  # the engine titles
                    mine = await connection.new_session(project)
                    assert await connection.set_session_title(mine.session_id, " Mine ") == "Mine"
                    await mine.prompt("fix the parser")
                    assert mine.view.title == "Mine"
                    assert len(server.side_requests) == 2  # asked, then dropped
            finally:
                await runtime.aclose()
        async with SqliteSessionStore(database) as store:
            kept = await store.get_session(mine.session_id)
            assert kept is not None and (kept.title, kept.title_by_client) == ("Mine", True)
            other = await store.get_session(untitled.session_id)
            assert other is not None and (other.title, other.title_by_client) == (
                "Model title 1",
                False,
            )
            runtime = CoderRuntime(config, store=store)
            try:
                async with connect(runtime, cwd=project) as connection:
                    resumed = await connection.resume_session(mine.session_id, project)
                    await resumed.prompt("and the tests")
                    assert resumed.view.title == "Mine"
            finally:
                await runtime.aclose()
            kept = await store.get_session(mine.session_id)
            assert kept is not None and kept.title == "Mine"

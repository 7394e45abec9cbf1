"""A scripted Anthropic Messages API server on loopback, for offline tests.

`FakeAnthropicServer` is `FakeOpenAIServer`'s machinery (scripts, side scripts, recorded
requests, delays and hangs, clean close) answering `POST /v1/messages` as the Anthropic API
does (:mod:`._fake_messages`): server-sent events when the request says `"stream": true`, one
`message` body otherwise, errors in the API's shape. The `anthropic` SDK, and pydantic-ai's
Anthropic model on top of it, run their normal code paths against it. The OpenAI endpoints are
not served (404).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._fake_openai import FakeOpenAIServer
from ._fake_openai_script import Script, ScriptedReply

__all__ = ("FakeAnthropicServer",)


class FakeAnthropicServer(FakeOpenAIServer):
    """A scripted Anthropic Messages API server on loopback.

    Use as a context manager (or call `start()` / `close()`):

        with FakeAnthropicServer([ScriptedReply(text=["Hel", "lo"])]) as server:
            client = anthropic.Anthropic(base_url=server.base_url, api_key="test")

    A `ScriptedReply` is rendered as a message: its reasoning a `thinking` block, its text a
    `text` block, its tool calls `tool_use` blocks; its `finish_reason` (OpenAI's words) as the
    matching stop reason. Requests are recorded as by `FakeOpenAIServer` (`requests`,
    `side_requests`, `wait_for_requests`), headers and all (`x-api-key`, `anthropic-version`).

    Args:
        script: The replies; see `Script`. An exhausted script answers 400 with a message saying so.
        host: The interface to bind (loopback by default).
        port: The port; 0 picks a free one.
        side_scripts: Replies to side requests, by purpose (as for `FakeOpenAIServer`).
        routes: Paths answered with fixed JSON (as for `FakeOpenAIServer`).
    """

    def __init__(
        self,
        script: Script = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        side_scripts: Mapping[str, Sequence[ScriptedReply]] | None = None,
        routes: Mapping[str, Any] | None = None,
    ) -> None:
        """Prepare the server; nothing is bound until `start()`."""
        super().__init__(script, host=host, port=port, side_scripts=side_scripts, routes=routes)
        self._state.endpoints = frozenset({"messages"})
        self._state.name = "FakeAnthropicServer"

    @property
    def base_url(self) -> str:
        """The URL to give the client as `base_url`, e.g. `http://127.0.0.1:41234` (the SDK
        adds `/v1/messages`)."""
        return f"http://{self._address[0]}:{self.port}"

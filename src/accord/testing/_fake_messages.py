"""A scripted reply as the Anthropic Messages API sends it (`POST /v1/messages`).

`MessagesFrames` renders a `ScriptedReply` as the server-sent events of a streamed message
(`event: <type>` and `data: {...}` per event: `message_start`, a `ping`, per content block a
`content_block_start`, its deltas and a `content_block_stop`, then `message_delta` with the stop
reason and the output tokens, and `message_stop`), or as one `message` body. The reasoning is a
`thinking` block (`thinking_delta` pieces, then a `signature_delta`), the text a `text` block,
each tool call a `tool_use` block whose input streams as `input_json_delta` pieces. Errors are
the API's `{"type": "error", "error": {"type": ..., "message": ...}}`.

The stop reason follows the script's OpenAI-style `finish_reason`: `stop` is `end_turn`,
`tool_calls` is `tool_use`, `length` is `max_tokens`; any other value is sent as it is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any, Final

from ._fake_openai_script import ScriptedError, ScriptedReply, ScriptedUsage, split_evenly

__all__ = ("MessagesFrames", "anthropic_error")

_STOP_REASONS: Final = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def anthropic_error(error: ScriptedError) -> dict[str, Any]:
    """The body of an Anthropic API error response."""
    return {"type": "error", "error": {"type": error.type, "message": error.message}}


def _event(kind: str, data: dict[str, Any]) -> bytes:
    payload = json.dumps({"type": kind, **data}, separators=(",", ":"))
    return f"event: {kind}\ndata: {payload}\n\n".encode()


class MessagesFrames:
    """Renders one scripted reply as Messages API stream events, or as one message body.

    The same interface as `~._fake_openai_script.Frames`: `role_frame`, then one item of
    `delta_frames` per delta (a block's start and stop ride with its first delta and with the
    next block's first delta, or with `closing_frames`), then `closing_frames`.

    Args:
        index: The request number (used in ids).
        request: The request body (model name, messages for estimated usage).
        reply: What to answer.
    """

    def __init__(self, index: int, request: dict[str, Any], reply: ScriptedReply) -> None:
        self.reply = reply
        self.request = request
        self.id = f"msg_fake_{index}"
        self.model = str(request.get("model", "fake-model"))
        self.index = index
        self.deltas = 0
        self._block = -1
        self._open = False

    def role_frame(self) -> bytes:
        """`message_start` (empty content, the input tokens) and a `ping`, as the API sends."""
        usage = self._usage()
        message: dict[str, Any] = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**self._input_usage(usage), "output_tokens": 1},
        }
        return _event("message_start", {"message": message}) + _event("ping", {})

    def _start(self, block: dict[str, Any]) -> bytes:
        frames = self._stop()
        self._block += 1
        self._open = True
        return frames + _event(
            "content_block_start", {"index": self._block, "content_block": block}
        )

    def _stop(self) -> bytes:
        if not self._open:
            return b""
        self._open = False
        return _event("content_block_stop", {"index": self._block})

    def _delta(self, delta: dict[str, Any]) -> bytes:
        self.deltas += 1
        return _event("content_block_delta", {"index": self._block, "delta": delta})

    def delta_frames(self) -> Iterator[bytes]:
        """One item per delta: thinking pieces, text pieces, each tool call's input pieces."""
        reply = self.reply
        for number, piece in enumerate(reply.reasoning):
            start = self._start({"type": "thinking", "thinking": ""}) if number == 0 else b""
            frame = start + self._delta({"type": "thinking_delta", "thinking": piece})
            if number == len(reply.reasoning) - 1:
                signature = f"fake-signature-{self.index}"
                frame += _event(
                    "content_block_delta",
                    {
                        "index": self._block,
                        "delta": {"type": "signature_delta", "signature": signature},
                    },
                )
            yield frame
        for number, piece in enumerate(reply.text):
            start = self._start({"type": "text", "text": ""}) if number == 0 else b""
            yield start + self._delta({"type": "text_delta", "text": piece})
        for number, call in enumerate(reply.tool_calls):
            self.deltas += 1
            yield self._start(
                {
                    "type": "tool_use",
                    "id": self._call_id(number, call.id),
                    "name": call.name,
                    "input": {},
                }
            )
            for piece in split_evenly(call.arguments_json(), call.pieces):
                yield self._delta({"type": "input_json_delta", "partial_json": piece})

    def closing_frames(self) -> bytes:
        """The last block's stop, `message_delta` (stop reason, output tokens), `message_stop`."""
        usage = self._usage()
        delta = {"stop_reason": self._stop_reason(), "stop_sequence": None}
        return (
            self._stop()
            + _event(
                "message_delta",
                {"delta": delta, "usage": {"output_tokens": usage.completion_tokens}},
            )
            + _event("message_stop", {})
        )

    def completion(self) -> dict[str, Any]:
        """The whole reply as one non-streamed `message` body."""
        reply = self.reply
        content: list[dict[str, Any]] = []
        if reply.reasoning:
            content.append(
                {
                    "type": "thinking",
                    "thinking": "".join(reply.reasoning),
                    "signature": f"fake-signature-{self.index}",
                }
            )
        if reply.text:
            content.append({"type": "text", "text": "".join(reply.text)})
        for number, call in enumerate(reply.tool_calls):
            content.append(
                {
                    "type": "tool_use",
                    "id": self._call_id(number, call.id),
                    "name": call.name,
                    "input": json.loads(call.arguments_json() or "{}"),
                }
            )
        self.deltas = (
            len(reply.reasoning)
            + len(reply.text)
            + sum(1 + call.pieces for call in reply.tool_calls)
        )
        usage = self._usage()
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": self._stop_reason(),
            "stop_sequence": None,
            "usage": {**self._input_usage(usage), "output_tokens": usage.completion_tokens},
        }

    def _call_id(self, number: int, given: str | None) -> str:
        return given or f"toolu_fake_{self.index}_{number}"

    def _stop_reason(self) -> str:
        reason = self.reply.finish_reason
        if reason is None:
            return "tool_use" if self.reply.tool_calls else "end_turn"
        return _STOP_REASONS.get(reason, reason)

    @staticmethod
    def _input_usage(usage: ScriptedUsage) -> dict[str, int]:
        cached = usage.cached_tokens or 0
        return {
            "input_tokens": usage.prompt_tokens - cached,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": 0,
        }

    def _usage(self) -> ScriptedUsage:
        if self.reply.usage is not None:
            return self.reply.usage
        messages = self.request.get("messages", [])
        prompt = math.ceil(len(json.dumps(messages)) / 4)
        return ScriptedUsage(prompt_tokens=prompt, completion_tokens=self.deltas)

"""The script of `FakeOpenAIServer`: scripted replies, their JSON form, and their rendering.

A `ScriptedReply` says what one chat-completions answer contains (text, reasoning, tool calls,
usage) and how it is paced (delays, a hang). `Frames` renders it as the OpenAI wire format: a
sequence of `chat.completion.chunk` server-sent-event frames, or one `chat.completion` body.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeAlias, cast

from pydantic import TypeAdapter

MAX_DELAY = 5.0
"""Longest pause allowed between two chunks, in seconds (a test that needs more wants a hang)."""

MAX_HANG = 60.0
"""Longest hang allowed, in seconds: below the pytest timeout, so a forgotten hang still ends."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedToolCall:
    """One tool call in a scripted reply.

    Attributes:
        name: The function name.
        arguments: The arguments, as a JSON string (sent verbatim, even if invalid) or a mapping
            (serialised with `json.dumps`).
        id: The tool call id; defaults to `call_<request number>_<index>`.
        pieces: How many deltas the arguments string is streamed in (at least 1).
    """

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None
    pieces: int = 3

    def arguments_json(self) -> str:
        """The arguments as the JSON text the server sends."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedUsage:
    """Token counts reported for a reply (`usage` in the final chunk when streaming).

    Attributes:
        prompt_tokens: Input tokens.
        completion_tokens: Output tokens.
        cached_tokens: Sent as `prompt_tokens_details.cached_tokens` when not `None`.
        reasoning_tokens: Sent as `completion_tokens_details.reasoning_tokens` when not `None`.
    """

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The `usage` object of the OpenAI API."""
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        if self.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        return usage


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedError:
    """An error response instead of a completion.

    The `openai` client retries 408, 409, 429 and 5xx by itself (`max_retries`, 2 by default, with
    back-off), and every retry consumes the next scripted reply.

    Attributes:
        status: The HTTP status.
        message: `error.message` in the body.
        type: `error.type` in the body.
        code: `error.code` in the body.
    """

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedReply:
    """One scripted answer to a chat-completions request.

    When streaming, chunks go out in this order: a role chunk, the `reasoning` chunks (as
    `delta.<reasoning_field>`), the `text` chunks (`delta.content`), each tool call (a first delta
    with id and name, then its arguments in `pieces` deltas), a chunk with `finish_reason`, and,
    when the request asked for `stream_options.include_usage`, a usage chunk with no choices. A
    non-streaming request gets the same content joined into one message.

    Attributes:
        text: Text deltas.
        reasoning: Reasoning (thinking) deltas, sent before the text.
        reasoning_field: The delta field the reasoning goes in; pydantic-ai reads
            `reasoning_content` and `reasoning`.
        tool_calls: Tool calls, after the text.
        usage: Reported usage; `None` estimates it (prompt: characters of the request's messages
            divided by 4, completion: the number of deltas).
        include_usage: `False` sends no usage at all, even if the request asked for it.
        finish_reason: Defaults to `"tool_calls"` when there are tool calls, else `"stop"`.
        delay: Seconds to wait before each delta (at most `MAX_DELAY`); a non-streaming
            request waits that long per text and reasoning delta (at least once) before its
            one body.
        hang_after: When streaming, stop after this many deltas (0: right after the role chunk;
            more than there are: after the last one, before `finish_reason`) and wait until the
            client disconnects, the server closes or `hang_timeout` passes, then drop the
            connection. A non-streaming request hangs before any response.
        hang_timeout: Bound on a hang, in seconds (at most `MAX_HANG`).
        error: Answer with this error instead; the other fields are ignored.
    """

    text: Sequence[str] = ()
    reasoning: Sequence[str] = ()
    reasoning_field: str = "reasoning_content"
    tool_calls: Sequence[ScriptedToolCall] = ()
    usage: ScriptedUsage | None = None
    include_usage: bool = True
    finish_reason: str | None = None
    delay: float = 0.0
    hang_after: int | None = None
    hang_timeout: float = 30.0
    error: ScriptedError | None = None

    def __post_init__(self) -> None:
        """Check the bounds, and store the sequences as tuples (so equal scripts compare equal)."""
        if not 0 <= self.delay <= MAX_DELAY:
            raise ValueError(f"delay must be between 0 and {MAX_DELAY} seconds, got {self.delay}")
        if not 0 < self.hang_timeout <= MAX_HANG:
            raise ValueError(f"hang_timeout must be in (0, {MAX_HANG}] seconds")
        if self.hang_after is not None and self.hang_after < 0:
            raise ValueError("hang_after must be >= 0")
        if isinstance(self.text, str) or isinstance(self.reasoning, str):
            raise TypeError("text and reasoning are sequences of chunks, not one string")
        if any(call.pieces < 1 for call in self.tool_calls):
            raise ValueError("ScriptedToolCall.pieces must be >= 1")
        object.__setattr__(self, "text", tuple(self.text))
        object.__setattr__(self, "reasoning", tuple(self.reasoning))
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))


ReplyFunction: TypeAlias = Callable[[dict[str, Any]], ScriptedReply]
"""Picks the reply from the request body (the parsed JSON); runs in a server thread."""

Script: TypeAlias = Sequence[ScriptedReply | ReplyFunction] | ReplyFunction
"""Either replies consumed one per request (a function in the list answers one request), or one
function that answers every request."""

_replies_adapter: TypeAdapter[list[ScriptedReply]] = TypeAdapter(list[ScriptedReply])


def load_script(text: str | bytes) -> list[ScriptedReply]:
    """Parse a JSON script: a list of replies or `{"replies": [...]}`, fields as in `ScriptedReply`.

    Raises:
        pydantic.ValidationError: The JSON does not describe replies.
    """
    data: Any = json.loads(text)
    if isinstance(data, dict) and "replies" in data:
        data = cast(dict[str, Any], data)["replies"]
    return _replies_adapter.validate_python(data)


def dump_script(replies: Sequence[ScriptedReply]) -> str:
    """Serialise replies as JSON that `load_script` (and `--script`) reads back."""
    return json.dumps({"replies": [asdict(reply) for reply in replies]})


class Frames:
    """Renders one scripted reply as SSE frames of `chat.completion.chunk`, or as one completion.

    Args:
        index: The request number (used in ids).
        request: The request body (model name, `stream_options`, messages for estimated usage).
        reply: What to answer.
    """

    def __init__(self, index: int, request: dict[str, Any], reply: ScriptedReply) -> None:
        self.reply = reply
        self.request = request
        self.id = f"chatcmpl-fake-{index}"
        self.model = str(request.get("model", "fake-model"))
        self.created = int(time.time())
        self.index = index
        self.deltas = 0

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self._frame({"choices": [choice]})

    def _frame(self, fields: dict[str, Any]) -> bytes:
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            **fields,
        }
        return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"

    def role_frame(self) -> bytes:
        """The first frame: `delta.role`, empty content (as OpenAI sends it)."""
        return self._chunk({"role": "assistant", "content": ""})

    def delta_frames(self) -> Iterator[bytes]:
        """One frame per delta: reasoning, text, then each tool call's start and argument pieces."""
        reply = self.reply
        for piece in reply.reasoning:
            self.deltas += 1
            yield self._chunk({reply.reasoning_field: piece})
        for piece in reply.text:
            self.deltas += 1
            yield self._chunk({"content": piece})
        for number, call in enumerate(reply.tool_calls):
            self.deltas += 1
            function = {"name": call.name, "arguments": ""}
            start = {
                "index": number,
                "id": self._call_id(number, call),
                "type": "function",
                "function": function,
            }
            yield self._chunk({"tool_calls": [start]})
            for piece in split_evenly(call.arguments_json(), call.pieces):
                self.deltas += 1
                yield self._chunk(
                    {"tool_calls": [{"index": number, "function": {"arguments": piece}}]}
                )

    def closing_frames(self) -> bytes:
        """The `finish_reason` frame, the usage frame if asked for, and `data: [DONE]`."""
        frames = self._chunk({}, self._finish_reason())
        options: Any = self.request.get("stream_options")
        if isinstance(options, dict) and self.reply.include_usage:
            wants_usage = bool(cast(dict[str, Any], options).get("include_usage"))
        else:
            wants_usage = False
        if wants_usage:
            frames += self._frame({"choices": [], "usage": self._usage().to_json()})
        return frames + b"data: [DONE]\n\n"

    def completion(self) -> dict[str, Any]:
        """The whole reply as one non-streaming `chat.completion` body."""
        reply = self.reply
        message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.text) or None}
        if reply.reasoning:
            message[reply.reasoning_field] = "".join(reply.reasoning)
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self._call_id(n, call),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for n, call in enumerate(reply.tool_calls)
            ]
        self.deltas = (
            len(reply.reasoning)
            + len(reply.text)
            + sum(1 + call.pieces for call in reply.tool_calls)
        )
        completion: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self._finish_reason(),
                }
            ],
        }
        if reply.include_usage:
            completion["usage"] = self._usage().to_json()
        return completion

    def _call_id(self, number: int, call: ScriptedToolCall) -> str:
        return call.id or f"call_{self.index}_{number}"

    def _finish_reason(self) -> str:
        if self.reply.finish_reason is not None:
            return self.reply.finish_reason
        return "tool_calls" if self.reply.tool_calls else "stop"

    def _usage(self) -> ScriptedUsage:
        if self.reply.usage is not None:
            return self.reply.usage
        messages = self.request.get("messages", [])
        prompt = math.ceil(len(json.dumps(messages)) / 4)
        return ScriptedUsage(prompt_tokens=prompt, completion_tokens=self.deltas)


def split_evenly(text: str, pieces: int) -> list[str]:
    """`text` in `pieces` consecutive parts (fewer if it is shorter), none empty unless text is."""
    if not text:
        return [""]
    size = math.ceil(len(text) / pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]

"""A scripted reply as the OpenAI Responses API sends it (`POST /v1/responses`).

`ResponsesFrames` renders a `ScriptedReply` as the server-sent events of a streamed response
(`event: <type>` and `data: {...}`, each with its `sequence_number`): `response.created` and
`response.in_progress`, then one output item per part, each opened by
`response.output_item.added` and closed by `response.output_item.done`: the reasoning a
`reasoning` item whose summary streams as `response.reasoning_summary_text.delta` pieces, the
text a `message` item with one `output_text` part (`response.output_text.delta` pieces), each
tool call a `function_call` item (`response.function_call_arguments.delta` pieces); last
`response.completed` with the whole output and the usage. A request without `"stream": true`
gets that last response object as its body.

A script's `finish_reason` of `length` makes the response `incomplete` (reason
`max_output_tokens`) and ends the stream with `response.incomplete`; any other is `completed`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from typing import Any

from ._fake_openai_script import ScriptedReply, ScriptedUsage, split_evenly

__all__ = ("ResponsesFrames",)


class ResponsesFrames:
    """Renders one scripted reply as Responses API stream events, or as one response body.

    The same interface as `~._fake_openai_script.Frames`: `role_frame`, then one item of
    `delta_frames` per delta (an item's opening rides with its first delta, its closing with
    the next item's first delta or with `closing_frames`), then `closing_frames`.

    Args:
        index: The request number (used in ids).
        request: The request body (model name, input for estimated usage).
        reply: What to answer.
    """

    def __init__(self, index: int, request: dict[str, Any], reply: ScriptedReply) -> None:
        self.reply = reply
        self.request = request
        self.id = f"resp_fake_{index}"
        self.model = str(request.get("model", "fake-model"))
        self.created = int(time.time())
        self.index = index
        self.deltas = 0
        self._sequence = 0
        self._output: list[dict[str, Any]] = []
        self._closing = b""

    def _event(self, kind: str, data: dict[str, Any]) -> bytes:
        payload = {"type": kind, "sequence_number": self._sequence, **data}
        self._sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()

    def _response(self, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        response: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "model": self.model,
            "status": status,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "temperature": None,
            "top_p": None,
        }
        if status == "incomplete":
            response["incomplete_details"] = {"reason": "max_output_tokens"}
        if status != "in_progress" and self.reply.include_usage:
            response["usage"] = self._usage_json()
        return response

    def role_frame(self) -> bytes:
        """`response.created` and `response.in_progress` (no output yet)."""
        created = self._response("in_progress", [])
        return self._event("response.created", {"response": created}) + self._event(
            "response.in_progress", {"response": created}
        )

    def _open(self, item: dict[str, Any]) -> bytes:
        frames = self._close()
        self._output.append(item)
        return frames + self._event(
            "response.output_item.added", {"output_index": len(self._output) - 1, "item": item}
        )

    def _close(self) -> bytes:
        frames, self._closing = self._closing, b""
        return frames

    def _where(self) -> dict[str, Any]:
        return {"item_id": self._output[-1]["id"], "output_index": len(self._output) - 1}

    def delta_frames(self) -> Iterator[bytes]:
        """One item per delta: summary pieces, text pieces, each call's start and pieces."""
        reply = self.reply
        if reply.reasoning:
            yield from self._reasoning_frames()
        if reply.text:
            yield from self._text_frames()
        for number, call in enumerate(reply.tool_calls):
            self.deltas += 1
            call_id = call.id or f"call_{self.index}_{number}"
            arguments = call.arguments_json()
            item = {
                "id": f"fc_fake_{self.index}_{number}",
                "type": "function_call",
                "status": "in_progress",
                "call_id": call_id,
                "name": call.name,
                "arguments": "",
            }
            yield self._open(item)
            for piece in split_evenly(arguments, call.pieces):
                self.deltas += 1
                yield self._event(
                    "response.function_call_arguments.delta", {**self._where(), "delta": piece}
                )
            done = {**item, "status": "completed", "arguments": arguments}
            self._output[-1] = done
            self._closing = self._event(
                "response.function_call_arguments.done",
                {**self._where(), "name": call.name, "arguments": arguments},
            ) + self._event(
                "response.output_item.done", {"output_index": len(self._output) - 1, "item": done}
            )

    def _reasoning_frames(self) -> Iterator[bytes]:
        item: dict[str, Any] = {"id": f"rs_fake_{self.index}", "type": "reasoning", "summary": []}
        part = {"type": "summary_text", "text": ""}
        for number, piece in enumerate(self.reply.reasoning):
            self.deltas += 1
            start = b""
            if number == 0:
                start = self._open(item) + self._event(
                    "response.reasoning_summary_part.added",
                    {**self._where(), "summary_index": 0, "part": part},
                )
            yield start + self._event(
                "response.reasoning_summary_text.delta",
                {**self._where(), "summary_index": 0, "delta": piece},
            )
        text = "".join(self.reply.reasoning)
        done = {**item, "summary": [{"type": "summary_text", "text": text}]}
        self._output[-1] = done
        where = {**self._where(), "summary_index": 0}
        self._closing = (
            self._event("response.reasoning_summary_text.done", {**where, "text": text})
            + self._event(
                "response.reasoning_summary_part.done",
                {**where, "part": {"type": "summary_text", "text": text}},
            )
            + self._event(
                "response.output_item.done", {"output_index": len(self._output) - 1, "item": done}
            )
        )

    def _text_frames(self) -> Iterator[bytes]:
        item: dict[str, Any] = {
            "id": f"msg_fake_{self.index}",
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        empty: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
        for number, piece in enumerate(self.reply.text):
            self.deltas += 1
            start = b""
            if number == 0:
                start = self._open(item) + self._event(
                    "response.content_part.added",
                    {**self._where(), "content_index": 0, "part": empty},
                )
            yield start + self._event(
                "response.output_text.delta",
                {**self._where(), "content_index": 0, "delta": piece, "logprobs": []},
            )
        text = "".join(self.reply.text)
        part: dict[str, Any] = {"type": "output_text", "text": text, "annotations": []}
        done = {**item, "status": "completed", "content": [part]}
        self._output[-1] = done
        where = {**self._where(), "content_index": 0}
        self._closing = (
            self._event("response.output_text.done", {**where, "text": text, "logprobs": []})
            + self._event("response.content_part.done", {**where, "part": part})
            + self._event(
                "response.output_item.done", {"output_index": len(self._output) - 1, "item": done}
            )
        )

    def closing_frames(self) -> bytes:
        """The last item's closing, then `response.completed` (or `.incomplete`)."""
        status = self._status()
        kind = "response.completed" if status == "completed" else "response.incomplete"
        frames = self._close()
        return frames + self._event(kind, {"response": self._response(status, self._output)})

    def completion(self) -> dict[str, Any]:
        """The whole reply as one non-streamed response object."""
        for _ in self.delta_frames():
            pass
        self._close()
        return self._response(self._status(), self._output)

    def _status(self) -> str:
        return "incomplete" if self.reply.finish_reason == "length" else "completed"

    def _usage_json(self) -> dict[str, Any]:
        usage = self._usage()
        return {
            "input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens or 0},
            "output_tokens": usage.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        }

    def _usage(self) -> ScriptedUsage:
        if self.reply.usage is not None:
            return self.reply.usage
        given = self.request.get("input", [])
        prompt = math.ceil(len(json.dumps(given)) / 4)
        return ScriptedUsage(prompt_tokens=prompt, completion_tokens=self.deltas)
